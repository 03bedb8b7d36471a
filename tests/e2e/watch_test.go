package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	privclusterv1 "github.com/openshift/hypershift-capi-proxy/apis/private/core/v1beta2"
)

// watchEvent is one event of a JSON watch stream.
type watchEvent struct {
	Type   string         `json:"type"`
	Object map[string]any `json:"object"`
}

// openWatch starts a raw watch and returns its events as they arrive; the stream ends with ctx.
func openWatch(ctx context.Context, t *testing.T, rc *rawClient, path string) (*http.Response, <-chan watchEvent) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rc.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rc.hc.Do(req)
	if err != nil {
		t.Fatalf("watch %s: %v", path, err)
	}
	events := make(chan watchEvent, 100)
	go func() {
		defer resp.Body.Close()
		defer close(events)
		s := bufio.NewScanner(resp.Body)
		s.Buffer(nil, 16<<20)
		for s.Scan() {
			var ev watchEvent
			if json.Unmarshal(s.Bytes(), &ev) == nil {
				events <- ev
			}
		}
	}()
	return resp, events
}

func nextEvent(t *testing.T, events <-chan watchEvent) watchEvent {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("the watch ended")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event within 30s")
	}
	return watchEvent{}
}

// TestWatchSurfaces covers the watch events beyond ADDED/MODIFIED/DELETED (BOOKMARK, the watch-list
// initial-events-end bookmark, ERROR 410 Gone) and a client-go informer that must survive a restart of
// the apiserver behind the proxy.
func TestWatchSurfaces(t *testing.T) {
	ctx := context.Background()
	c, _ := clients(t)
	ns := namespace(t, c)
	for i := 0; i < 2; i++ {
		mustCreate(t, c, &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%d", i), Namespace: ns}, Spec: machineSpec("c1", fmt.Sprintf("w%d", i))})
	}
	machines := "/apis/cluster.x-k8s.io/v1beta2/namespaces/" + ns + "/machines"

	t.Run("sendInitialEvents and its initial-events-end bookmark", func(t *testing.T) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		_, events := openWatch(ctx, t, viaProxy(t), machines+"?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
		for i := 0; i < 2; i++ {
			ev := nextEvent(t, events)
			if ev.Type != "ADDED" || ev.Object["apiVersion"] != "cluster.x-k8s.io/v1beta2" || field(ev.Object, "spec.infrastructureRef.apiGroup") != upstreamInfra {
				t.Fatalf("initial event %d: %s %v", i, ev.Type, ev.Object)
			}
		}
		ev := nextEvent(t, events)
		annotations, _ := field(ev.Object, "metadata.annotations").(map[string]any)
		if ev.Type != "BOOKMARK" || ev.Object["apiVersion"] != "cluster.x-k8s.io/v1beta2" || ev.Object["kind"] != "Machine" ||
			annotations["k8s.io/initial-events-end"] != "true" || field(ev.Object, "metadata.resourceVersion") == nil {
			t.Errorf("the initial-events-end bookmark came as %s %v", ev.Type, ev.Object)
		}
	})

	t.Run("ERROR 410 Gone", func(t *testing.T) {
		// A resourceVersion older than the watch cache's window: the apiserver answers with an ERROR event
		// (or a 410 response) whose Status says Expired; client-go relists on it.
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		resp, events := openWatch(ctx, t, viaProxy(t), machines+"?watch=1&resourceVersion=1")
		if resp.StatusCode == http.StatusGone {
			return
		}
		ev := nextEvent(t, events)
		if ev.Type != "ERROR" || ev.Object["kind"] != "Status" || fmt.Sprint(ev.Object["code"]) != "410" {
			t.Errorf("watch from resourceVersion 1: %d, %s %v; want an ERROR event with a 410 Status", resp.StatusCode, ev.Type, ev.Object)
		}
	})

	t.Run("an informer survives a restart of the apiserver", func(t *testing.T) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		dc, err := dynamic.NewForConfig(proxy.Config(env.AdminToken))
		if err != nil {
			t.Fatal(err)
		}
		factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, 0, ns, nil)
		informer := factory.ForResource(schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machines"})
		factory.Start(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), informer.Informer().HasSynced) {
			t.Fatal("the informer never synced")
		}
		if err := env.RestartAPIServer(); err != nil {
			t.Fatal(err)
		}
		// Written directly, after the restart: the informer must see it through the proxy.
		_, direct := clients(t)
		if err := direct.Create(ctx, &privclusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "after-restart", Namespace: ns},
			Spec: privclusterv1.MachineSpec{ClusterName: "c1", Bootstrap: privclusterv1.Bootstrap{DataSecretName: ptr.To("s")},
				InfrastructureRef: privclusterv1.ContractVersionedObjectReference{APIGroup: privateInfra, Kind: "DockerMachine", Name: "after-restart"}}}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(90 * time.Second)
		for {
			obj, err := informer.Lister().ByNamespace(ns).Get("after-restart")
			if err == nil {
				if u := obj.(*unstructured.Unstructured); field(u.Object, "spec.infrastructureRef.apiGroup") != upstreamInfra {
					t.Errorf("the informer holds %v", u.Object["spec"])
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the informer did not see an object created after the apiserver restarted")
			}
			time.Sleep(500 * time.Millisecond)
		}
	})
}
