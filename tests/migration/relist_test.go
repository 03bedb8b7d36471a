package migration

import (
	"context"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/openshift/hypershift-capi-proxy/migration"
)

// relistCounts counts what a reflector did through a ListWatch: syncs (LISTs and watch lists, the
// initial one included) and the watches that ended with 410 Expired.
type relistCounts struct {
	mu             sync.Mutex
	syncs, expired int
}

func (r *relistCounts) get() (syncs, expired int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.syncs, r.expired
}

// listWatch is a ListWatch of resource in namespace ns with client, counting into r.
func (r *relistCounts) listWatch(client dynamic.NamespaceableResourceInterface, ns string) *cache.ListWatch {
	count := func(n *int) {
		r.mu.Lock()
		defer r.mu.Unlock()
		*n++
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			count(&r.syncs)
			return client.Namespace(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if o.SendInitialEvents != nil && *o.SendInitialEvents {
				count(&r.syncs)
			}
			w, err := client.Namespace(ns).Watch(ctx, o)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
				if e.Type == watch.Error && apierrors.IsResourceExpired(apierrors.FromObject(e.Object)) {
					count(&r.expired)
				}
				return e, true
			}), nil
		},
	}
}

// TestNamespacedInformerRelistsOnce: a client-go informer of one namespace's Clusters through an
// acknowledging proxy sees its watch end once in a move, when the namespace is served from the copies
// (not when its writes are held or released), lists once more (a watch list from its last
// resourceVersion is served, not answered 410), and ends up holding the copy. What it held when writes
// were released depends on client-go's backoff against RelistGrace, so it is logged, not asserted.
func TestNamespacedInformerRelistsOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := newClients(t)
	p, _ := startAcknowledgingProxy(ctx, t, c)
	ns := newNamespace(ctx, t, c, "relist")
	smallShape.create(ctx, t, c.dyn, c.kube, ns)
	progress := func(migration.Event) {} // set once the informer runs; Progress calls come one at a time

	m, err := migration.New(migration.Options{Config: env.DirectConfig(env.AdminToken), Grace: 30 * time.Minute,
		RetireTimeout: 90 * time.Second, Progress: func(e migration.Event) { progress(e) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Adopt(ctx, ns); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(p.Config(env.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	// Once the proxy serves the namespace from the upstream groups (it followed the label), nothing changes
	// them until the move.
	waitFor(ctx, t, "the proxy to serve the namespace's Cluster", func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(clusters).Namespace(ns).Get(ctx, "hc", metav1.GetOptions{})
		return err == nil, nil
	})
	counts := &relistCounts{}
	informer := cache.NewSharedIndexInformer(counts.listWatch(dyn.Resource(clusters), ns), &unstructured.Unstructured{}, 0, cache.Indexers{})
	go informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("the informer did not sync")
	}
	cachedUID := func() types.UID {
		obj, ok, err := informer.GetStore().GetByKey(ns + "/hc")
		if err != nil || !ok {
			return ""
		}
		return obj.(*unstructured.Unstructured).GetUID()
	}
	source := cachedUID()
	if source == "" {
		t.Fatal("the informer does not hold Cluster hc")
	}

	var atRelease types.UID
	progress = func(e migration.Event) {
		if e.Phase == migration.PhaseResuming && e.Step == "label" {
			atRelease = cachedUID()
		}
	}
	if err := m.Migrate(ctx, ns); err != nil {
		t.Fatal(err)
	}
	cp, err := c.dyn.Resource(private(clusters)).Namespace(ns).Get(ctx, "hc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the informer to hold the copy", func(context.Context) (bool, error) { return cachedUID() == cp.GetUID(), nil })
	t.Logf("when writes were released the informer held the %s", map[bool]string{true: "copy", false: "source or nothing"}[atRelease == cp.GetUID()])
	if syncs, expired := counts.get(); syncs != 2 || expired != 1 {
		t.Errorf("%d syncs and %d watches ended with 410 Expired: want 2 (the first and one relist) and 1 (when the namespace was served from the copies)", syncs, expired)
	}
}
