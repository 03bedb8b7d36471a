package migration

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/utils/ptr"

	"github.com/openshift/hypershift-capi-proxy/migration"
	"github.com/openshift/hypershift-capi-proxy/migration/serving"
	"github.com/openshift/hypershift-capi-proxy/tests/framework"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// ackSelector selects the acknowledging Leases, as the migration lists them.
var ackSelector = labels.Set{serving.AcknowledgeLabel: serving.AcknowledgeLabelValue}.String()

// startAcknowledgingProxy starts a proxy of its own that follows the namespaces and acknowledges them
// with a Lease in a namespace of its own (given by flags, as the downward API would), waits until the
// Lease is there, and returns the proxy and the Lease's namespace. The proxy is stopped (its Lease
// deleted) and the namespace removed when the test ends.
func startAcknowledgingProxy(ctx context.Context, t testing.TB, c clients) (*framework.Proxy, string) {
	t.Helper()
	ns := newNamespace(ctx, t, c, "proxies")
	t.Cleanup(func() { _ = c.kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	p, err := env.StartProxy(ctx, "--acknowledge-lease-namespace="+ns, "--acknowledge-lease-name=proxy-0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	waitFor(ctx, t, "the proxy's acknowledging Lease", func(ctx context.Context) (bool, error) {
		l, err := c.kube.CoordinationV1().Leases(ns).Get(ctx, "proxy-0", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && l.Labels[serving.AcknowledgeLabel] == serving.AcknowledgeLabelValue, err
	})
	return p, ns
}

// waitEvents records the messages of a move's wait events.
type waitEvents struct {
	mu       sync.Mutex
	messages []string
}

func (w *waitEvents) event(e migration.Event) {
	if e.Step != "wait" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.messages = append(w.messages, string(e.Phase)+": "+e.Message)
}

func (w *waitEvents) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.messages...)
}

// TestAcknowledgedWaitsEndEarly migrates a namespace and rolls it back with a grace period far longer
// than the test's timeout: the moves complete only because a proxy's acknowledgements end the waits
// after each change of the label. Its Lease is the proxy's: labelled, renewed, and gone once the proxy
// stopped.
func TestAcknowledgedWaitsEndEarly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := newClients(t)
	p, leaseNS := startAcknowledgingProxy(ctx, t, c)

	ns := newNamespace(ctx, t, c, "acked")
	smallShape.create(ctx, t, c.dyn, c.kube, ns)
	waits := &waitEvents{}
	m, err := migration.New(migration.Options{Config: env.DirectConfig(env.AdminToken), Grace: 30 * time.Minute, RelistGrace: -1,
		RetireTimeout: 90 * time.Second, Progress: waits.event})
	if err != nil {
		t.Fatal(err)
	}
	adoptAndMigrate(ctx, t, m, ns)
	checkNamespace(ctx, t, c, ns, serving.Private, translate.ToPrivate)
	if err := m.Rollback(ctx, ns); err != nil {
		t.Fatal(err)
	}
	checkNamespace(ctx, t, c, ns, serving.Upstream, translate.ToUpstream)
	got := waits.all()
	t.Logf("waits: %q", got)
	if len(got) != 4 {
		t.Errorf("wait events %q: want 4, two per move", got)
	}
	for _, msg := range got {
		if !strings.Contains(msg, "acknowledged by 1 proxies") {
			t.Errorf("wait event %q: want it ended by the proxy's acknowledgement", msg)
		}
	}

	// The Lease acknowledges the namespace's last change, and stays live.
	nsObj, err := c.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the Lease to acknowledge the rollback's last label", func(ctx context.Context) (bool, error) {
		l, err := c.kube.CoordinationV1().Leases(leaseNS).Get(ctx, "proxy-0", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c, err := resourceversion.CompareResourceVersion(l.Annotations[serving.AcknowledgedAnnotation], nsObj.ResourceVersion)
		return err == nil && c >= 0, nil
	})
	l, err := c.kube.CoordinationV1().Leases(leaseNS).Get(ctx, "proxy-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "proxy-0" {
		t.Errorf("Lease spec %+v: want renewTime, leaseDurationSeconds and holderIdentity proxy-0", l.Spec)
	}

	// A graceful stop deletes the Lease.
	p.Stop()
	if _, err := c.kube.CoordinationV1().Leases(leaseNS).Get(ctx, "proxy-0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Lease after the proxy stopped: %v, want NotFound", err)
	}
}

// TestAcknowledgementsThatCannotEndTheWait: with a live acknowledging proxy, Leases that say nothing
// trustworthy make each wait after a change of the label last the whole grace period, as it did before
// acknowledgements: an expired one (a proxy that may still serve), a live one whose annotation is no
// resourceVersion, and a live one that is behind beside one claiming a huge resourceVersion (the claim
// does not stand in for it). Without any Lease (acknowledgements turned off) the wait is whole too.
func TestAcknowledgementsThatCannotEndTheWait(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := newClients(t)
	startAcknowledgingProxy(ctx, t, c)
	now := metav1.NowMicro()
	forged := func(name, applied string, renewTime metav1.MicroTime) *coordinationv1.Lease {
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{serving.AcknowledgeLabel: serving.AcknowledgeLabelValue}},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](3600), RenewTime: &renewTime},
		}
		if applied != "" {
			l.Annotations = map[string]string{serving.AcknowledgedAnnotation: applied}
		}
		return l
	}
	for _, tc := range []struct {
		name   string
		leases []*coordinationv1.Lease
		ignore bool
		want   string
	}{
		{name: "expired", leases: []*coordinationv1.Lease{forged("gone", "99999999999", metav1.NewMicroTime(now.Add(-2*time.Hour)))}, want: "1 expired Leases"},
		{name: "bogus", leases: []*coordinationv1.Lease{forged("bogus", "not-a-resource-version", now)}, want: "of 2 live proxies acknowledged"},
		{name: "huge-claim", leases: []*coordinationv1.Lease{forged("huge", "99999999999999999999", now), forged("behind", "1", now)}, want: "of 3 live proxies acknowledged"},
		{name: "ignored", ignore: true, want: "waiting 2s for proxies to follow the label"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leaseNS := newNamespace(ctx, t, c, "forged")
			t.Cleanup(func() { _ = c.kube.CoreV1().Namespaces().Delete(context.Background(), leaseNS, metav1.DeleteOptions{}) })
			for _, l := range tc.leases {
				if _, err := c.kube.CoordinationV1().Leases(leaseNS).Create(ctx, l, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					_ = c.kube.CoordinationV1().Leases(leaseNS).Delete(context.Background(), l.Name, metav1.DeleteOptions{})
				})
			}
			ns := newNamespace(ctx, t, c, "unacked")
			smallShape.create(ctx, t, c.dyn, c.kube, ns)
			waits := &waitEvents{}
			m, err := migration.New(migration.Options{Config: env.DirectConfig(env.AdminToken), Grace: 2 * time.Second, RelistGrace: -1,
				IgnoreAcknowledgements: tc.ignore, RetireTimeout: 90 * time.Second, Progress: waits.event})
			if err != nil {
				t.Fatal(err)
			}
			adoptAndMigrate(ctx, t, m, ns)
			checkNamespace(ctx, t, c, ns, serving.Private, translate.ToPrivate)
			got := waits.all()
			if len(got) != 2 {
				t.Errorf("wait events %q: want 2", got)
			}
			for _, msg := range got {
				if strings.Contains(msg, "acknowledged by") || !strings.Contains(msg, tc.want) {
					t.Errorf("wait event %q: want the whole grace period, saying %q", msg, tc.want)
				}
			}
		})
	}
}

// TestNoLeaseWaitsTheGrace: with no acknowledging Lease at all (proxies that do not publish one), the
// wait is the whole grace period.
func TestNoLeaseWaitsTheGrace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := newClients(t)
	leases, err := c.kube.CoordinationV1().Leases(corev1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: ackSelector})
	if err != nil {
		t.Fatal(err)
	}
	if len(leases.Items) > 0 {
		t.Skipf("%d acknowledging Leases are left by other tests", len(leases.Items))
	}
	ns := newNamespace(ctx, t, c, "nolease")
	smallShape.create(ctx, t, c.dyn, c.kube, ns)
	waits := &waitEvents{}
	m, err := migration.New(migration.Options{Config: env.DirectConfig(env.AdminToken), Grace: time.Second, RelistGrace: -1,
		RetireTimeout: 90 * time.Second, Progress: waits.event})
	if err != nil {
		t.Fatal(err)
	}
	adoptAndMigrate(ctx, t, m, ns)
	got := waits.all()
	if len(got) != 2 {
		t.Errorf("wait events %q: want 2", got)
	}
	for _, msg := range got {
		if !strings.Contains(msg, "grace period (no proxy acknowledges)") {
			t.Errorf("wait event %q: want the whole grace period, no proxy acknowledging", msg)
		}
	}
}
