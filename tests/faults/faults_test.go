package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	privclusterv1 "github.com/openshift/hypershift-capi-proxy/apis/private/core/v1beta2"
	"github.com/openshift/hypershift-capi-proxy/tests/framework"
)

var machines = schema.GroupVersionResource{Group: clusterv1.GroupVersion.Group, Version: "v1beta2", Resource: "machines"}

func newNamespace(t *testing.T) string {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(env.DirectConfig(env.AdminToken))
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "faults-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// createMachine creates a Machine straight in the private group, as another client of the backend would.
func createMachine(t *testing.T, ns, name string) {
	t.Helper()
	direct, err := env.AdminClient()
	if err != nil {
		t.Fatal(err)
	}
	m := &privclusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: privclusterv1.MachineSpec{ClusterName: "c", Bootstrap: privclusterv1.Bootstrap{DataSecretName: ptrTo("s")},
			InfrastructureRef: privclusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.hypershift.openshift.io", Kind: "AWSMachine", Name: name}}}
	if err := direct.Create(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

func ptrTo[T any](v T) *T { return &v }

// status sends a GET through the proxy as the admin and returns its status code and Status message.
func status(t *testing.T, path string) (int, string) {
	t.Helper()
	hc, err := rest.HTTPClientFor(proxy.Config(env.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(proxy.URL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var s metav1.Status
	_ = json.Unmarshal(data, &s)
	return resp.StatusCode, s.Message
}

func readyz(t *testing.T) int {
	t.Helper()
	resp, err := http.Get(proxy.MetricsURL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestBackendDownAndBack: while the apiserver is down the proxy answers every request with a 503
// Status at once and is not ready; when it is back, requests succeed again with no action on the proxy.
func TestBackendDownAndBack(t *testing.T) {
	ns := newNamespace(t)
	path := "/apis/cluster.x-k8s.io/v1beta2/namespaces/" + ns + "/machines"
	// Right after the CRDs are established the apiserver may still answer 429 for a while.
	if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		code, _ := status(t, path)
		return code == http.StatusOK, nil
	}); err != nil {
		t.Fatalf("before: %v", err)
	}
	if err := env.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	defer func() {
		if !restarted {
			_ = env.StartAPIServer()
		}
	}()

	start := time.Now()
	code, msg := status(t, path)
	took := time.Since(start)
	if code != http.StatusServiceUnavailable || !strings.Contains(msg, "unavailable") {
		t.Errorf("backend down: %d %q, want a 503 Status", code, msg)
	}
	// Connection refused: no wait for a timeout. (A generous bound: this is not a speed target.)
	if took > 5*time.Second {
		t.Errorf("backend down: the 503 took %v", took)
	}
	if code := readyz(t); code == http.StatusOK {
		t.Errorf("/readyz is 200 while the backend is down")
	}

	if err := env.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	restarted = true
	if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		code, _ := status(t, path)
		return code == http.StatusOK && readyz(t) == http.StatusOK, nil
	}); err != nil {
		t.Errorf("the proxy did not recover when the backend came back: %v", err)
	}
}

// TestWatchAcrossRestart: an apiserver restart in the middle of a watch ends the client's watch cleanly
// (its result channel closes without an ERROR event), and a client-go informer through the proxy keeps
// working: it sees an object created after the restart and one deleted after it.
func TestWatchAcrossRestart(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	createMachine(t, ns, "before")

	// A plain watch through the proxy with the upstream types.
	c, err := client.NewWithWatch(proxy.Config(env.AdminToken), client.Options{Scheme: framework.UpstreamScheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(ctx, &clusterv1.MachineList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := <-w.ResultChan(); ev.Type != watch.Added {
		t.Fatalf("first event %s %v", ev.Type, ev.Object)
	}

	// An informer through the proxy.
	dyn := dynamic.NewForConfigOrDie(proxy.Config(env.AdminToken))
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	informer := factory.ForResource(machines).Informer()
	var mu sync.Mutex
	seen := map[string]string{}
	record := func(what string) func(obj any) {
		return func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if m, ok := obj.(metav1.Object); ok {
				mu.Lock()
				seen[m.GetName()] = what
				mu.Unlock()
			}
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    record("added"),
		UpdateFunc: func(_, obj any) { record("updated")(obj) },
		DeleteFunc: record("deleted"),
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	if !cache.WaitForCacheSync(stop, informer.HasSynced) {
		t.Fatal("the informer did not sync")
	}

	if err := env.RestartAPIServer(); err != nil {
		t.Fatal(err)
	}

	// The plain watch ends, without an error event.
	timeout := time.After(60 * time.Second)
	for ended := false; !ended; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				ended = true
				break
			}
			if ev.Type == watch.Error {
				t.Errorf("the watch ended with an error event: %v", apierrors.FromObject(ev.Object))
			}
		case <-timeout:
			t.Fatal("the watch did not end when the apiserver restarted")
		}
	}

	// The informer carries on: it sees a Machine created and one deleted after the restart.
	createMachine(t, ns, "after")
	direct, err := env.AdminClient()
	if err != nil {
		t.Fatal(err)
	}
	if err := direct.Delete(ctx, &privclusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "before", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return seen["after"] == "added" && seen["before"] == "deleted", nil
	}); err != nil {
		mu.Lock()
		t.Errorf("the informer did not follow the restart: saw %v", seen)
		mu.Unlock()
	}
}

// TestOversizedBodies: a body over kube-apiserver's limit (3 MiB) is refused with 413 through the proxy,
// for a mapped resource (which the proxy would translate) as for any other, as directly.
func TestOversizedBodies(t *testing.T) {
	ns := newNamespace(t)
	big := strings.Repeat("x", 3<<20+1)
	machine := fmt.Sprintf(`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"big","annotations":{"a":%q}}}`, big)
	configMap := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a":%q}}`, big)
	for _, tc := range []struct{ name, path, body string }{
		{"a Machine", "/apis/cluster.x-k8s.io/v1beta2/namespaces/" + ns + "/machines", machine},
		{"a ConfigMap", "/api/v1/namespaces/" + ns + "/configmaps", configMap},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, side := range []struct {
				name string
				cfg  *rest.Config
				path string
			}{
				{"through the proxy", proxy.Config(env.AdminToken), tc.path},
				{"directly", env.DirectConfig(env.AdminToken), strings.Replace(tc.path, "cluster.x-k8s.io", "cluster.hypershift.openshift.io", 1)},
			} {
				hc, err := rest.HTTPClientFor(side.cfg)
				if err != nil {
					t.Fatal(err)
				}
				resp, err := hc.Post(side.cfg.Host+side.path, "application/json", strings.NewReader(tc.body))
				if err != nil {
					t.Fatalf("%s: %v", side.name, err)
				}
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var s metav1.Status
				if err := json.Unmarshal(data, &s); err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge || s.Code != http.StatusRequestEntityTooLarge {
					t.Errorf("%s: %d %.200s, want a 413 Status", side.name, resp.StatusCode, data)
				}
			}
		})
	}
}
