package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openshift/hypershift-capi-proxy/migration/serving"
	"github.com/openshift/hypershift-capi-proxy/tests/framework"
)

var (
	// upstreamClusters are Clusters in the platform's CRD (every platform release serves v1beta1); privateClusters
	// their private twins, as the backend stores them.
	upstreamClusters = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "clusters"}
	privateClusters  = schema.GroupVersionResource{Group: "cluster.hypershift.openshift.io", Version: "v1beta1", Resource: "clusters"}
)

// clusterObject is a v1beta1 Cluster of gvr's group with an empty spec.
func clusterObject(gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(gvr.GroupVersion().String())
	u.SetKind("Cluster")
	u.SetNamespace(ns)
	u.SetName(name)
	_ = unstructured.SetNestedMap(u.Object, map[string]any{}, "spec")
	return u
}

// TestCutover serves two namespaces side by side through a proxy of its own: one labelled upstream (a
// hosted cluster not migrated yet, its objects in the platform's upstream CRDs), one private. Reads,
// writes, lists and watches of each namespace reach its own groups, cluster-wide lists and watches (kubectl
// get -A, a controller-runtime cache) merge both, and the platform's objects of an unlabelled namespace
// never appear. Then the migration's steps: a write during a hold is answered 429 and succeeds, through
// client-go's retry, once the hold ends; a watch open across a mode change ends with 410 and the cache
// relists and converges on the objects of the groups now served.
func TestCutover(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // the informers' and the watches'
	o := startOwnProxy(t)
	p, kube, directDyn, proxyDyn := o.p, o.kube, o.directDyn, o.proxyDyn
	cfg := p.Config(env.AdminToken)
	suffix := rand.String(5)
	nsUp, nsPriv, nsPlatform := "cutover-up-"+suffix, "cutover-priv-"+suffix, "cutover-platform-"+suffix
	for name, labels := range map[string]map[string]string{
		nsUp: {serving.Label: string(serving.Upstream)}, nsPriv: nil, nsPlatform: nil,
	} {
		framework.CreateNamespace(ctx, t, framework.CreateNamespaceInput{Client: kube, Name: name, Labels: labels})
	}
	setMode := func(t *testing.T, mode serving.Mode) {
		t.Helper()
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, serving.Label, mode)
		if _, err := kube.CoreV1().Namespaces().Patch(ctx, nsUp, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// The hosted cluster not migrated yet, and the platform's own objects, straight in the upstream CRD.
	upObj, err := directDyn.Resource(upstreamClusters).Namespace(nsUp).Create(ctx, clusterObject(upstreamClusters, nsUp, "up1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := directDyn.Resource(upstreamClusters).Namespace(nsPlatform).Create(ctx, clusterObject(upstreamClusters, nsPlatform, "platform1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The proxy serves a namespace labelled upstream once its informer has seen the label.
	framework.WaitForServed(ctx, t, framework.WaitForServedInput{Getter: proxyDyn, Resource: upstreamClusters, Namespace: nsUp, Name: "up1"})

	t.Run("side by side", func(t *testing.T) {
		got, err := proxyDyn.Resource(upstreamClusters).Namespace(nsUp).Get(ctx, "up1", metav1.GetOptions{})
		if err != nil || got.GetUID() != upObj.GetUID() {
			t.Fatalf("upstream namespace's Cluster: %v, uid %s, want %s", err, got.GetUID(), upObj.GetUID())
		}
		// Create and patch in each namespace land in its own groups.
		for _, tc := range []struct {
			ns     string
			stored schema.GroupVersionResource
		}{{nsUp, upstreamClusters}, {nsPriv, privateClusters}} {
			created, err := proxyDyn.Resource(upstreamClusters).Namespace(tc.ns).Create(ctx, clusterObject(upstreamClusters, tc.ns, "made"), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create in %s: %v", tc.ns, err)
			}
			if created.GetAPIVersion() != "cluster.x-k8s.io/v1beta1" {
				t.Errorf("create in %s answered %s", tc.ns, created.GetAPIVersion())
			}
			patch := []byte(`{"metadata":{"labels":{"patched":"yes"}}}`)
			if _, err := proxyDyn.Resource(upstreamClusters).Namespace(tc.ns).Patch(ctx, "made", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Fatalf("patch in %s: %v", tc.ns, err)
			}
			stored, err := directDyn.Resource(tc.stored).Namespace(tc.ns).Get(ctx, "made", metav1.GetOptions{})
			if err != nil || stored.GetUID() != created.GetUID() || stored.GetLabels()["patched"] != "yes" {
				t.Fatalf("in %s, stored in %s: %v %v", tc.ns, tc.stored.Group, err, stored)
			}
		}
		list, err := proxyDyn.Resource(upstreamClusters).Namespace(nsUp).List(ctx, metav1.ListOptions{})
		if err != nil || itemNames(list) != "up1,made" && itemNames(list) != "made,up1" {
			t.Fatalf("list of the upstream namespace: %v %s", err, itemNames(list))
		}
		// A watch of the upstream namespace sees what happens in the upstream CRD.
		watcher, err := proxyDyn.Resource(upstreamClusters).Namespace(nsUp).Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		defer watcher.Stop()
		watched, err := directDyn.Resource(upstreamClusters).Namespace(nsUp).Create(ctx, clusterObject(upstreamClusters, nsUp, "watched"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-watcher.ResultChan():
			if u, ok := ev.Object.(*unstructured.Unstructured); !ok || ev.Type != "ADDED" || u.GetUID() != watched.GetUID() {
				t.Errorf("watch of the upstream namespace: %s %v", ev.Type, ev.Object)
			}
		case <-time.After(60 * time.Second):
			t.Error("the watch of the upstream namespace saw nothing")
		}

		// Cluster-wide: both namespaces merged, the platform's objects nowhere.
		all, err := proxyDyn.Resource(upstreamClusters).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, item := range all.Items {
			seen[item.GetNamespace()+"/"+item.GetName()] = true
			if item.GetNamespace() == nsPlatform {
				t.Errorf("the platform's Cluster %s/%s is visible", item.GetNamespace(), item.GetName())
			}
		}
		for _, want := range []string{nsUp + "/up1", nsUp + "/made", nsPriv + "/made"} {
			if !seen[want] {
				t.Errorf("cluster-wide list lacks %s: %v", want, seen)
			}
		}
		// Paging is answered with the whole list while namespaces are mixed.
		paged, err := proxyDyn.Resource(upstreamClusters).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil || len(paged.Items) != len(all.Items) || paged.GetContinue() != "" {
			t.Errorf("list with limit=1: %v, %d items, continue %q", err, len(paged.Items), paged.GetContinue())
		}

		out := kubectlVia(t, p, "get", "clusters.v1beta1.cluster.x-k8s.io", "-A", "--no-headers")
		for _, want := range []string{nsUp, nsPriv} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl get -A lacks %s:\n%s", want, out)
			}
		}
		if strings.Contains(out, nsPlatform) {
			t.Errorf("kubectl get -A shows the platform's Cluster:\n%s", out)
		}
	})

	// A controller-runtime cache across all namespaces, as every CAPI controller runs one.
	informers, err := cache.New(cfg, cache.Options{Scheme: runtime.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	cached := func(ns, name string) (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(upstreamClusters.GroupVersion().WithKind("Cluster"))
		return u, informers.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
	}
	eventually(t, "the cache holds both namespaces' Clusters", func() error {
		if _, err := cached(nsUp, "up1"); err != nil {
			return err
		}
		_, err := cached(nsPriv, "made")
		return err
	})

	t.Run("held write succeeds after the hold", func(t *testing.T) {
		writer, err := client.New(cfg, client.Options{Scheme: runtime.NewScheme()})
		if err != nil {
			t.Fatal(err)
		}
		before := heldRequests(t, p)
		setMode(t, serving.UpstreamHeld)
		// Without client-go's retry: kube-apiserver's 429 Status, with Retry-After.
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, "a raw write is answered 429", func() error {
			body, _ := json.Marshal(clusterObject(upstreamClusters, nsUp, "raw").Object)
			resp, err := hc.Post(cfg.Host+"/apis/cluster.x-k8s.io/v1beta1/namespaces/"+nsUp+"/clusters?dryRun=All", "application/json", strings.NewReader(string(body)))
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			var s metav1.Status
			if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
				return err
			}
			if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
				s.Reason != metav1.StatusReasonTooManyRequests || s.Details == nil || s.Details.RetryAfterSeconds < 1 {
				return fmt.Errorf("%d Retry-After=%q %+v", resp.StatusCode, resp.Header.Get("Retry-After"), s)
			}
			return nil
		})
		before = heldRequests(t, p)
		done := make(chan error, 1)
		go func() { done <- writer.Create(ctx, clusterObject(upstreamClusters, nsUp, "during-hold")) }()
		eventually(t, "the write is held", func() error {
			if n := heldRequests(t, p); n <= before {
				return fmt.Errorf("held_requests_total %v", n)
			}
			return nil
		})
		select {
		case err := <-done:
			t.Fatalf("the held write returned before the hold ended: %v", err)
		default:
		}
		setMode(t, serving.Upstream)
		if err := <-done; err != nil {
			t.Fatalf("the held write: %v", err)
		}
		if _, err := directDyn.Resource(upstreamClusters).Namespace(nsUp).Get(ctx, "during-hold", metav1.GetOptions{}); err != nil {
			t.Errorf("the held write did not reach the upstream CRD: %v", err)
		}
	})

	t.Run("watch ends on a mode change and the cache converges", func(t *testing.T) {
		// The migration's copy, in the private group: invisible while the namespace is served upstream.
		cp, err := directDyn.Resource(privateClusters).Namespace(nsUp).Create(ctx, clusterObject(privateClusters, nsUp, "up1"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		all, err := proxyDyn.Resource(upstreamClusters).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range all.Items {
			if item.GetUID() == cp.GetUID() {
				t.Errorf("the private copy in the upstream namespace is visible")
			}
		}

		// A plain watch of the namespace, open across the change.
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/apis/cluster.x-k8s.io/v1beta1/namespaces/"+nsUp+
			"/clusters?watch=true&resourceVersion="+all.GetResourceVersion(), nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		ended := make(chan string, 1)
		go func() {
			events := bufio.NewReader(resp.Body)
			last := ""
			for {
				line, err := events.ReadString('\n')
				if err != nil {
					ended <- last
					return
				}
				last = line
			}
		}()

		setMode(t, serving.UpstreamHeld)
		setMode(t, serving.PrivateHeld)
		select {
		case last := <-ended:
			var ev struct {
				Type   string        `json:"type"`
				Object metav1.Status `json:"object"`
			}
			if err := json.Unmarshal([]byte(last), &ev); err != nil || ev.Type != "ERROR" || ev.Object.Code != http.StatusGone {
				t.Errorf("the watch ended with %q, want an ERROR event with 410", last)
			}
		case <-time.After(90 * time.Second):
			t.Fatal("the watch did not end after the mode change")
		}
		eventually(t, "the cache relists and serves the private copy", func() error {
			u, err := cached(nsUp, "up1")
			if err != nil {
				return err
			}
			if u.GetUID() != cp.GetUID() {
				return fmt.Errorf("uid %s, want the copy's %s", u.GetUID(), cp.GetUID())
			}
			if _, err := cached(nsUp, "made"); err == nil {
				return errors.New("the upstream-only Cluster is still cached")
			} else if !apierrors.IsNotFound(err) {
				return fmt.Errorf("reading the upstream-only Cluster from the cache: %w", err)
			}
			return nil
		})
		setMode(t, serving.Private)
		// The private copy is served now; the upstream original is not.
		got, err := proxyDyn.Resource(upstreamClusters).Namespace(nsUp).Get(ctx, "up1", metav1.GetOptions{})
		if err != nil || got.GetUID() != cp.GetUID() {
			t.Errorf("after the switch: %v, uid %s, want %s", err, got.GetUID(), cp.GetUID())
		}
	})
}

// itemNames lists the names of a list's items.
func itemNames(l *unstructured.UnstructuredList) string {
	var out []string
	for _, item := range l.Items {
		out = append(out, item.GetName())
	}
	return strings.Join(out, ",")
}

// eventually polls check (every 200ms, for up to 90s) until it returns nil.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		last = check()
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, last)
	}
}

// kubectlVia runs kubectl against proxy p as the admin.
func kubectlVia(t *testing.T, p *framework.Proxy, args ...string) string {
	t.Helper()
	base := []string{"--server", p.URL, "--certificate-authority", p.CAFile, "--token", env.AdminToken,
		"--cache-dir", filepath.Join(t.TempDir(), "cache")}
	cmd := exec.Command(filepath.Join(env.BinDir, "kubectl"), append(base, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

var heldSeries = regexp.MustCompile(`(?m)^capi_proxy_held_requests_total\{[^}]*\} (\S+)$`)

// heldRequests reads the sum of p's capi_proxy_held_requests_total.
func heldRequests(t *testing.T, p *framework.Proxy) float64 {
	t.Helper()
	resp, err := http.Get(p.MetricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, m := range heldSeries.FindAllStringSubmatch(string(data), -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		sum += v
	}
	return sum
}
