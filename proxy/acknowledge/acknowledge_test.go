package acknowledge

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/openshift/hypershift-capi-proxy/migration/serving"
)

// recorder counts the Lease updates a fake clientset gets and can hold them until released.
type recorder struct {
	mu      sync.Mutex
	updates []string // the annotation of each update, in order
	hold    chan struct{}
	seen    chan string // every update's annotation, as it arrives
}

func newPublisher(t *testing.T, o Options) (*Publisher, *fake.Clientset, *recorder) {
	t.Helper()
	client := fake.NewClientset()
	r := &recorder{seen: make(chan string, 100)}
	client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		v := l.Annotations[serving.AcknowledgedAnnotation]
		r.mu.Lock()
		r.updates = append(r.updates, v)
		hold := r.hold
		r.mu.Unlock()
		r.seen <- v
		if hold != nil {
			<-hold
		}
		return false, nil, nil // the tracker applies it
	})
	if o.Namespace == "" {
		o.Namespace, o.Name = "proxies", "proxy-0"
	}
	p, err := New(client.CoordinationV1(), o)
	if err != nil {
		t.Fatal(err)
	}
	return p, client, r
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.updates)
}

func TestNewNeedsNamespaceAndName(t *testing.T) {
	client := fake.NewClientset()
	for _, o := range []Options{{}, {Namespace: "a"}, {Name: "b"}} {
		if _, err := New(client.CoordinationV1(), o); err == nil {
			t.Errorf("New(%+v) = nil error, want one", o)
		}
	}
}

func TestRegisterCreatesTheLease(t *testing.T) {
	ctx := context.Background()
	p, client, _ := newPublisher(t, Options{Namespace: "proxies", Name: "proxy-0", PodName: "proxy-0", PodUID: "uid-0"})
	p.Applied("42", false)
	p.Applied("7", false)    // lower: ignored
	p.Applied("bogus", true) // not a resourceVersion: ignored
	if err := p.Register(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := client.CoordinationV1().Leases("proxies").Get(ctx, "proxy-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Labels[serving.AcknowledgeLabel]; got != serving.AcknowledgeLabelValue {
		t.Errorf("label %s = %q, want %q", serving.AcknowledgeLabel, got, serving.AcknowledgeLabelValue)
	}
	if got := l.Annotations[serving.AcknowledgedAnnotation]; got != "42" {
		t.Errorf("annotation %s = %q, want 42", serving.AcknowledgedAnnotation, got)
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "proxy-0" {
		t.Errorf("holderIdentity = %v, want proxy-0", l.Spec.HolderIdentity)
	}
	if l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds != int32(DefaultDuration/time.Second) {
		t.Errorf("leaseDurationSeconds = %v, want %d", l.Spec.LeaseDurationSeconds, int32(DefaultDuration/time.Second))
	}
	if l.Spec.RenewTime == nil || l.Spec.AcquireTime == nil {
		t.Errorf("renewTime %v, acquireTime %v: want both set", l.Spec.RenewTime, l.Spec.AcquireTime)
	}
	if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].Kind != "Pod" || l.OwnerReferences[0].Name != "proxy-0" || l.OwnerReferences[0].UID != "uid-0" {
		t.Errorf("ownerReferences = %+v, want the pod proxy-0 (uid-0)", l.OwnerReferences)
	}
}

// A Lease of the same name (a proxy restarted in the same pod, or another's) is taken over, not an
// error; without a pod UID there is no owner.
func TestRegisterTakesOverAnExistingLease(t *testing.T) {
	ctx := context.Background()
	p, client, _ := newPublisher(t, Options{})
	old := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "proxy-0", Namespace: "proxies",
		Annotations: map[string]string{serving.AcknowledgedAnnotation: "999999"}}}
	if _, err := client.CoordinationV1().Leases("proxies").Create(ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := p.Register(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := client.CoordinationV1().Leases("proxies").Get(ctx, "proxy-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := l.Annotations[serving.AcknowledgedAnnotation]; ok {
		t.Errorf("annotation %s = %q: a proxy that applied nothing yet must not keep another's", serving.AcknowledgedAnnotation, v)
	}
	if l.Labels[serving.AcknowledgeLabel] != serving.AcknowledgeLabelValue || len(l.OwnerReferences) != 0 {
		t.Errorf("lease %+v: want the label and no owner", l.ObjectMeta)
	}
}

// While one write is in flight, any number of mode changes coalesce into one more write, of the
// latest value.
func TestRunCoalescesWrites(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, _, r := newPublisher(t, Options{RenewEvery: time.Hour})
	if err := p.Register(ctx); err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	r.mu.Lock()
	r.hold = hold
	r.mu.Unlock()
	go p.Run(ctx)

	p.Applied("10", true)
	if v := <-r.seen; v != "10" {
		t.Fatalf("first write published %q, want 10", v)
	}
	for rv := 11; rv <= 20; rv++ {
		p.Applied(strconv.Itoa(rv), true)
	}
	r.mu.Lock()
	r.hold = nil
	r.mu.Unlock()
	close(hold)
	if v := <-r.seen; v != "20" {
		t.Fatalf("second write published %q, want 20", v)
	}
	// An event that changed no mode asks for no write; the same value is not written again.
	p.Applied("21", false)
	p.Applied("20", true)
	if err := p.write(ctx, false); err != nil {
		t.Fatal(err)
	}
	if v := <-r.seen; v != "21" {
		t.Fatalf("a write after an unchanged event published %q, want 21", v)
	}
	if err := p.write(ctx, false); err != nil {
		t.Fatal(err)
	}
	if n := r.count(); n != 3 {
		t.Errorf("%d updates (%v), want 3: 10, 20, 21", n, r.updates)
	}
}

// A renewal writes the Lease even when nothing changed; a Lease deleted meanwhile is created again.
func TestRenewalRecreatesADeletedLease(t *testing.T) {
	ctx := context.Background()
	p, client, _ := newPublisher(t, Options{})
	p.Applied("5", true)
	if err := p.Register(ctx); err != nil {
		t.Fatal(err)
	}
	if err := client.CoordinationV1().Leases("proxies").Delete(ctx, "proxy-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := p.write(ctx, true); err != nil {
		t.Fatal(err)
	}
	l, err := client.CoordinationV1().Leases("proxies").Get(ctx, "proxy-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Annotations[serving.AcknowledgedAnnotation]; got != "5" {
		t.Errorf("annotation = %q, want 5", got)
	}
}

// Delete removes the Lease, and nothing writes it again afterwards.
func TestDeleteIsFinal(t *testing.T) {
	ctx := context.Background()
	p, client, _ := newPublisher(t, Options{})
	if err := p.Register(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Delete(ctx); err != nil {
		t.Errorf("a second Delete: %v, want nil", err)
	}
	p.Applied("9", true)
	if err := p.write(ctx, true); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoordinationV1().Leases("proxies").Get(ctx, "proxy-0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Get after Delete: %v, want NotFound", err)
	}
}
