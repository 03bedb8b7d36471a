package migration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/openshift/hypershift-capi-proxy/migration"
	"github.com/openshift/hypershift-capi-proxy/tests/framework"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// TestMigrateWhileCAPIManagerRuns migrates a HyperShift-shaped namespace while Cluster API's real manager
// (sigs.k8s.io/cluster-api at the version hack/capi pins, hack/build-capi.sh; watching every namespace)
// reconciles it through the proxy, beside a second namespace that stays in the upstream groups. At the
// switch every copy holds its source's content; after it every ownerReference names a live copy, no
// Secret was collected, no deletion logic ran (nothing in the private groups is being deleted, the
// infrastructure machines a Machine's deletion would delete are there), the manager reconciles a
// MachineDeployment scaled through the proxy, and a cluster-wide list through the proxy shows both
// namespaces.
func TestMigrateWhileCAPIManagerRuns(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := newClients(t)
	ns := newNamespace(ctx, t, c, "hcp-live")
	other := newNamespace(ctx, t, c, "hcp-other")
	shape{nodePools: 1, machinesPerPool: 2}.create(ctx, t, c.dyn, c.kube, ns)
	smallShape.create(ctx, t, c.dyn, c.kube, other)
	for _, n := range []string{ns, other} {
		if err := newMigrator(t, nil).Adopt(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	viaProxy, err := dynamic.NewForConfig(proxy.Config(env.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	// The proxy follows the label: the namespace is served from the upstream groups.
	waitFor(ctx, t, "the MachineDeployment through the proxy", func(ctx context.Context) (bool, error) {
		_, err := viaProxy.Resource(machineDeployments).Namespace(ns).Get(ctx, "np0", metav1.GetOptions{})
		return err == nil, nil
	})

	// The manager watches every namespace, not only ns as HyperShift runs it (--namespace): CAPI v1.14.2's
	// MachineDeployment, MachineSet, KubeadmControlPlane and topology controllers cannot reconcile under a
	// namespaced cache once they have written an object (util/controller/consistency.go casts the
	// informer of controller-runtime's multi-namespace cache to a SharedIndexInformer: "failed to cast
	// MachineSet informer to SharedIndexInformer"; docs/upgrade.md). Pass ns again once a CAPI release
	// without that bug is pinned.
	manager, err := env.StartManager(ctx, proxy, framework.CAPIManager, "")
	if err != nil {
		t.Fatal(err)
	}
	defer manager.Stop()
	defer func() {
		if t.Failed() {
			logs, _ := os.ReadFile(manager.Log)
			t.Logf("manager log (last 8 KiB):\n%s", tail(logs, 8<<10))
		}
	}()
	// It reconciles the MachineDeployment in the upstream groups.
	waitReconciled(ctx, t, viaProxy, ns, "np0")
	secrets := secretsOf(ctx, t, c, ns)

	// At the switch (the first event of the retiring phase, with writes held and the copies verified)
	// every copy holds its source's content.
	var atSwitch []string
	checked := false
	m, err := migration.New(migration.Options{Config: env.DirectConfig(env.AdminToken), Grace: 2 * time.Second, RetireTimeout: 90 * time.Second,
		Progress: func(e migration.Event) {
			if e.Phase != migration.PhaseRetiring || checked {
				return
			}
			checked = true
			src, dst := readShape(ctx, t, c, ns, translate.ToPrivate), readShape(ctx, t, c, ns, translate.ToUpstream)
			for name, u := range src {
				copied, ok := dst[name]
				if !ok {
					atSwitch = append(atSwitch, name+": no copy")
					continue
				}
				want, got := content(translated(t, u, translate.ToPrivate)), content(copied)
				got["annotations"] = withoutMigrationAnnotations(copied.GetAnnotations())
				if diff := cmp.Diff(want, got); diff != "" {
					atSwitch = append(atSwitch, fmt.Sprintf("%s (-source +copy):\n%s", name, diff))
				}
			}
			if len(src) == 0 || len(dst) != len(src) {
				atSwitch = append(atSwitch, fmt.Sprintf("%d sources, %d copies", len(src), len(dst)))
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Migrate(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if !checked {
		t.Fatal("no event of the retiring phase")
	}
	for _, d := range atSwitch {
		t.Errorf("at the switch: %s", d)
	}
	gcBarrier(ctx, t, c, ns)
	if diff := cmp.Diff(secrets, secretsOf(ctx, t, c, ns)); diff != "" {
		t.Errorf("Secrets changed (-before +after):\n%s", diff)
	}
	checkOwners(ctx, t, c, ns, translate.ToPrivate)
	if left := readShape(ctx, t, c, ns, translate.ToPrivate); len(left) > 0 {
		t.Errorf("left in the upstream groups: %v", keys(left))
	}
	copies := readShape(ctx, t, c, ns, translate.ToUpstream)
	for name, u := range copies {
		if u.GetDeletionTimestamp() != nil {
			t.Errorf("%s is being deleted", name)
		}
	}
	for _, name := range []string{"awsmachines/np0-5d4f8-0", "awsmachines/np0-5d4f8-1"} {
		if _, ok := copies[name]; !ok {
			t.Errorf("%s is gone: a Machine's deletion logic ran", name)
		}
	}

	// The manager keeps reconciling, now from the private groups: scale the MachineDeployment through the
	// proxy and see its MachineSets follow.
	patch := []byte(`{"spec":{"replicas":3}}`)
	if _, err := viaProxy.Resource(machineDeployments).Namespace(ns).Patch(ctx, "np0", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the MachineSets of np0 to hold 3 replicas", func(ctx context.Context) (bool, error) {
		list, err := viaProxy.Resource(machineSets).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		var replicas int64
		for _, ms := range list.Items {
			if r, ok, _ := unstructured.NestedInt64(ms.Object, "spec", "replicas"); ok && ms.GetLabels()["cluster.x-k8s.io/deployment-name"] == "np0" {
				replicas += r
			}
		}
		return replicas >= 3, nil
	})
	waitReconciled(ctx, t, viaProxy, ns, "np0")

	// Side by side: a cluster-wide list through the proxy shows the migrated namespace's Cluster (private)
	// and the other's (upstream).
	list, err := viaProxy.Resource(clusters).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, u := range list.Items {
		seen[u.GetNamespace()] = true
		if u.GetAPIVersion() != clusters.GroupVersion().String() {
			t.Errorf("%s/%s listed as %s", u.GetNamespace(), u.GetName(), u.GetAPIVersion())
		}
	}
	if !seen[ns] || !seen[other] {
		t.Errorf("a cluster-wide list through the proxy shows namespaces %v, want %s and %s", seen, ns, other)
	}
}

// waitReconciled waits until the manager has observed the MachineDeployment's generation.
func waitReconciled(ctx context.Context, t testing.TB, c dynamic.Interface, ns, name string) {
	t.Helper()
	waitReconciledWithin(ctx, t, c, ns, name, 90*time.Second)
}

// waitReconciledWithin is waitReconciled with a timeout of its own.
func waitReconciledWithin(ctx context.Context, t testing.TB, c dynamic.Interface, ns, name string, timeout time.Duration) {
	t.Helper()
	waitForWithin(ctx, t, "MachineDeployment "+name+" to be reconciled", timeout, func(ctx context.Context) (bool, error) {
		md, err := c.Resource(machineDeployments).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		observed, _, _ := unstructured.NestedInt64(md.Object, "status", "observedGeneration")
		return observed == md.GetGeneration(), nil
	})
}

func waitFor(ctx context.Context, t testing.TB, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	waitForWithin(ctx, t, what, 90*time.Second, cond)
}

// waitForWithin is waitFor with a timeout of its own.
func waitForWithin(ctx context.Context, t testing.TB, what string, timeout time.Duration, cond wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// withoutMigrationAnnotations returns the annotations without the migration's own.
func withoutMigrationAnnotations(in map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		if k != migration.SourceUIDAnnotation && k != migration.SourceResourceVersionAnnotation {
			out[k] = v
		}
	}
	return out
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.ToValidUTF8(string(b), "?")
}
