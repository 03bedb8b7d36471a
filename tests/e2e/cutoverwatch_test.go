package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/openshift/hypershift-capi-proxy/migration/serving"
	"github.com/openshift/hypershift-capi-proxy/tests/framework"
)

// TestCutoverInformerNoRelist: client-go's informer of Clusters across all namespaces, through the proxy,
// open while a namespace moves between the private and the upstream groups several times, both ways,
// once flipped back before the first move was served, while another namespace's Cluster is written in a
// burst. The informer never lists again (its ListWatch counts the lists and watch lists), sees every
// write of the namespace not moving once and in order, sees the moving namespace's objects change their
// uid as a deletion and a creation (never an update across uids), and ends holding what a fresh list
// holds. A watch resumed from before the moves is answered 410 Expired.
func TestCutoverInformerNoRelist(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := startOwnProxy(t)
	suffix := rand.String(5)
	nsMove, nsStay := "cutw-move-"+suffix, "cutw-stay-"+suffix
	for _, name := range []string{nsMove, nsStay} {
		framework.CreateNamespace(ctx, t, framework.CreateNamespaceInput{Client: o.kube, Name: name})
	}
	setMode := func(mode serving.Mode) {
		t.Helper()
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, serving.Label, mode)
		if _, err := o.kube.CoreV1().Namespaces().Patch(ctx, nsMove, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk := func(direct bool, ns, name string) *unstructured.Unstructured {
		t.Helper()
		client := o.proxyDyn // the private groups, the namespace being served from them
		if direct {
			client = o.directDyn // the platform's upstream CRD
		}
		u, err := client.Resource(upstreamClusters).Namespace(ns).Create(ctx, clusterObject(upstreamClusters, ns, name), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	// The moving namespace's objects: c1 in both groups (the migration's copy: another uid), up-only only
	// upstream, priv-only only private. The namespace staying private has w, which the burst writes.
	privC1, privOnly := mk(false, nsMove, "c1"), mk(false, nsMove, "priv-only")
	upC1, upOnly := mk(true, nsMove, "c1"), mk(true, nsMove, "up-only")
	mk(false, nsStay, "w")

	// The informer, counting its lists: a LIST, or a watch list (a watch asking for its initial events).
	var lists atomic.Int32
	client := o.proxyDyn.Resource(upstreamClusters)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			lists.Add(1)
			return client.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
				lists.Add(1)
			}
			return client.Watch(ctx, opts)
		},
	}
	informer := cache.NewSharedIndexInformer(lw, &unstructured.Unstructured{}, 0, cache.Indexers{})
	var mu sync.Mutex
	var seen []int          // the values of w's counter annotation, as the informer saw them
	var uidUpdates []string // updates across uids
	counter := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || u.GetNamespace() != nsStay || u.GetName() != "w" {
			return
		}
		if v, err := strconv.Atoi(u.GetAnnotations()["counter"]); err == nil {
			seen = append(seen, v)
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { mu.Lock(); defer mu.Unlock(); counter(obj) },
		UpdateFunc: func(old, obj any) {
			mu.Lock()
			defer mu.Unlock()
			a, b := old.(*unstructured.Unstructured), obj.(*unstructured.Unstructured)
			if a.GetUID() != b.GetUID() {
				uidUpdates = append(uidUpdates, b.GetNamespace()+"/"+b.GetName())
			}
			counter(obj)
		},
	}); err != nil {
		t.Fatal(err)
	}
	go informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("the informer did not sync")
	}
	// The resourceVersion before any move, for the resume below.
	before, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// The burst: w written again and again, one write after the other, until the moves are done.
	writes := make(chan int, 1)
	stop := make(chan struct{})
	go func() {
		n := 0
		defer func() { writes <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			patch := fmt.Sprintf(`{"metadata":{"annotations":{"counter":"%d"}}}`, n+1)
			if _, err := client.Namespace(nsStay).Patch(ctx, "w", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Errorf("write %d: %v", n+1, err)
				return
			}
			n++
		}
	}()

	cachedUID := func(name string) (string, bool) {
		obj, ok, _ := informer.GetStore().GetByKey(nsMove + "/" + name)
		if !ok {
			return "", false
		}
		return string(obj.(*unstructured.Unstructured).GetUID()), true
	}
	waitServed := func(upstream bool) {
		t.Helper()
		c1, only, gone := privC1, privOnly, upOnly
		if upstream {
			c1, only, gone = upC1, upOnly, privOnly
		}
		eventually(t, fmt.Sprintf("the informer serves the namespace from the upstream groups: %v", upstream), func() error {
			if uid, _ := cachedUID("c1"); uid != string(c1.GetUID()) {
				return fmt.Errorf("c1 has uid %q, want %s", uid, c1.GetUID())
			}
			if _, ok := cachedUID(only.GetName()); !ok {
				return fmt.Errorf("%s is not cached", only.GetName())
			}
			if _, ok := cachedUID(gone.GetName()); ok {
				return fmt.Errorf("%s is still cached", gone.GetName())
			}
			return nil
		})
	}
	for _, upstream := range []bool{true, false, true, false} {
		mode := serving.Private
		if upstream {
			mode = serving.Upstream
		}
		setMode(mode)
		waitServed(upstream)
	}
	// Flipped back before the first move was served (or while it was).
	setMode(serving.Upstream)
	setMode(serving.Private)
	waitServed(false)
	setMode(serving.Upstream)
	waitServed(true)
	close(stop)
	n := <-writes

	eventually(t, "the informer sees every write", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(seen) == 0 || seen[len(seen)-1] != n {
			return fmt.Errorf("saw %d writes, the last %v, want %d", len(seen), seen[max(0, len(seen)-1):], n)
		}
		return nil
	})
	mu.Lock()
	for i, v := range seen {
		if v != i+1 {
			t.Errorf("the writes seen: %v at %d, want every write from 1 to %d once and in order", v, i, n)
			break
		}
	}
	if len(uidUpdates) > 0 {
		t.Errorf("updates across uids: %v", uidUpdates)
	}
	mu.Unlock()
	if got := lists.Load(); got != 1 {
		t.Errorf("the informer listed %d times, want once (no relist)", got)
	}
	eventually(t, "the informer holds what a fresh list holds", func() error {
		fresh, err := client.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		want := map[string]string{}
		for _, item := range fresh.Items {
			want[item.GetNamespace()+"/"+item.GetName()] = string(item.GetUID()) + "@" + item.GetResourceVersion()
		}
		got := map[string]string{}
		for _, obj := range informer.GetStore().List() {
			u := obj.(*unstructured.Unstructured)
			got[u.GetNamespace()+"/"+u.GetName()] = string(u.GetUID()) + "@" + u.GetResourceVersion()
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("cached %v\nlisted %v", got, want)
		}
		return nil
	})
	t.Logf("%d writes seen once and in order across 7 moves, one list", n)

	// A watch resumed from before the moves cannot be served consistently: 410 Expired.
	cfg := o.p.Config(env.AdminToken)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/apis/cluster.x-k8s.io/v1beta1/clusters?watch=true&resourceVersion="+before.GetResourceVersion(), nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	var ev struct {
		Type   string        `json:"type"`
		Object metav1.Status `json:"object"`
	}
	if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Type != "ERROR" || ev.Object.Code != http.StatusGone {
		t.Errorf("a watch resumed from before the moves: %q", line)
	}
}
