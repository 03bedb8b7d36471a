package cutover_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/openshift/hypershift-capi-proxy/migration/serving"
	"github.com/openshift/hypershift-capi-proxy/proxy/cutover"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/backendtesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/routestesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/proxy/server"
)

// newCutoverProxy serves the proxy in front of backendURL, following ns (synced unless told otherwise).
func newCutoverProxy(t *testing.T, backendURL string, ns *cutover.Namespaces) *httptest.Server {
	t.Helper()
	h, err := server.New(server.Options{
		Backend:    &rest.Config{Host: backendURL},
		Routes:     routestesting.Table(),
		Namespaces: ns,
	})
	if err != nil {
		t.Fatal(err)
	}
	p := httptest.NewServer(h)
	t.Cleanup(p.Close)
	return p
}

func labelled(mode string) map[string]string { return map[string]string{serving.Label: mode} }

const (
	upMachines   = "/apis/cluster.x-k8s.io/v1beta2/namespaces/up/machines"
	privMachines = "/apis/cluster.x-k8s.io/v1beta2/namespaces/priv/machines"
	// upstreamMachineIn is a Machine as the backend stores it in the upstream group, naming a private
	// group where the proxy would translate it (to see that it does not).
	upstreamMachineIn = `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"u1","namespace":"up","resourceVersion":"7"},"spec":{"infrastructureRef":{"apiGroup":"cluster.hypershift.openshift.io"}}}`
	// privateNamedMachine is a Machine in the private group: translated unless passed through as it is.
	privateNamedMachine = `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"u1","namespace":"up","resourceVersion":"7"}}`
)

// okBackend answers every request with a Machine in the private group (200, or 201 for a POST).
func okBackend(t *testing.T) *backendtesting.Backend {
	return backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
		}
		io.WriteString(w, privateNamedMachine)
	})
}

func TestNotSyncedAnswers503(t *testing.T) {
	b := okBackend(t)
	p := newCutoverProxy(t, b.URL, cutover.NewNamespaces(nil))
	for _, tc := range []struct{ method, target string }{
		{"GET", privMachines},
		{"GET", "/apis/cluster.x-k8s.io/v1beta2/machines"},
		{"POST", "/api/v1/namespaces/up/secrets"},
	} {
		resp, data := backendtesting.Do(t, tc.method, p.URL+tc.target, `{}`, nil)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
			t.Errorf("%s %s: %d Retry-After=%q, want 503 with Retry-After", tc.method, tc.target, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		if s := backendtesting.Status(t, data); s.Details == nil || s.Details.RetryAfterSeconds != 1 {
			t.Errorf("%s %s: %s", tc.method, tc.target, data)
		}
	}
	if b.Count() != 0 {
		t.Errorf("the backend got %d requests", b.Count())
	}
	// Reads of built-in kinds do not depend on the modes.
	if resp, _ := backendtesting.Do(t, "GET", p.URL+"/api/v1/namespaces/up/secrets", "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("a built-in read: %d", resp.StatusCode)
	}
}

func TestServedByMode(t *testing.T) {
	b := okBackend(t)
	ns := cutover.NewNamespaces(nil)
	ns.SetGuarded(true, "1")
	ns.Set("up", "10", labelled("upstream"))
	ns.Set("held", "11", labelled("upstream-held"))
	ns.Set("pheld", "12", labelled("private-held"))
	ns.Set("bogus", "13", labelled("sideways"))
	ns.Set("priv", "14", labelled("private"))
	ns.MarkSynced()
	p := newCutoverProxy(t, b.URL, ns)

	for _, tc := range []struct {
		name, target string
		backendPath  string
		translated   bool
	}{
		{"upstream", upMachines + "/u1", "/apis/cluster.x-k8s.io/v1beta2/namespaces/up/machines/u1", false},
		{"upstream, escaped namespace", "/apis/cluster.x-k8s.io/v1beta2/namespaces/%75p/machines/u1", "/apis/cluster.x-k8s.io/v1beta2/namespaces/up/machines/u1", false},
		{"upstream-held read", "/apis/cluster.x-k8s.io/v1beta2/namespaces/held/machines/u1", "/apis/cluster.x-k8s.io/v1beta2/namespaces/held/machines/u1", false},
		{"private-held read", "/apis/cluster.x-k8s.io/v1beta2/namespaces/pheld/machines/u1", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/pheld/machines/u1", true},
		{"unknown mode read", "/apis/cluster.x-k8s.io/v1beta2/namespaces/bogus/machines/u1", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/bogus/machines/u1", true},
		{"private", privMachines + "/u1", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/priv/machines/u1", true},
		{"unlabelled", "/apis/cluster.x-k8s.io/v1beta2/namespaces/other/machines/u1", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/other/machines/u1", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, data := backendtesting.Do(t, "GET", p.URL+tc.target, "", nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s", resp.StatusCode, data)
			}
			got := b.Last(t)
			if u, _ := url.PathUnescape(got.Path); u != tc.backendPath {
				t.Errorf("backend path %s, want %s", got.Path, tc.backendPath)
			}
			// The proxy translates the private group's name in a response; untranslated, it stays.
			if untouched := string(data) == privateNamedMachine; untouched == tc.translated {
				t.Errorf("answer %s, translated: want %v", data, tc.translated)
			}
		})
	}

	t.Run("upstream write is untranslated", func(t *testing.T) {
		body := `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"u2"},"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io"}}}`
		resp, _ := backendtesting.Do(t, "POST", p.URL+upMachines+"?fieldManager=x", body, http.Header{"Content-Type": {"application/json"}})
		got := b.Last(t)
		if resp.StatusCode != http.StatusCreated || string(got.Body) != body || got.Path != "/apis/cluster.x-k8s.io/v1beta2/namespaces/up/machines" {
			t.Errorf("%d: backend got %s %s", resp.StatusCode, got.Path, got.Body)
		}
	})
	t.Run("built-in write in an upstream namespace is untranslated", func(t *testing.T) {
		body := `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","name":"u1","uid":"1"}]}}`
		backendtesting.Do(t, "POST", p.URL+"/api/v1/namespaces/up/secrets", body, http.Header{"Content-Type": {"application/json"}})
		if got := b.Last(t); string(got.Body) != body {
			t.Errorf("backend got %s", got.Body)
		}
		backendtesting.Do(t, "POST", p.URL+"/api/v1/namespaces/priv/secrets", body, http.Header{"Content-Type": {"application/json"}})
		if got := b.Last(t); !strings.Contains(string(got.Body), "cluster.hypershift.openshift.io/v1beta2") {
			t.Errorf("in a private namespace, backend got %s", got.Body)
		}
	})
}

// TestUnguardedLabel: while no admission policy guards the serving label, a namespace labelled upstream
// is served as a held private one (reads from the private groups, writes 429), so that whoever may
// label Namespaces cannot point clients at the upstream groups; once guarded it is followed, and a watch
// of the namespace from before the change is ended.
func TestUnguardedLabel(t *testing.T) {
	b := okBackend(t)
	ns := cutover.NewNamespaces(nil)
	ns.Set("up", "10", labelled("upstream"))
	ns.MarkSynced()
	p := newCutoverProxy(t, b.URL, ns)

	resp, data := backendtesting.Do(t, "GET", p.URL+upMachines+"/u1", "", nil)
	if resp.StatusCode != http.StatusOK || b.Last(t).Path != "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/up/machines/u1" {
		t.Fatalf("unguarded read: %d %s from %s, want the private group", resp.StatusCode, data, b.Last(t).Path)
	}
	resp, data = backendtesting.Do(t, "POST", p.URL+upMachines, `{}`, http.Header{"Content-Type": {"application/json"}})
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(data), "not guarded") {
		t.Errorf("unguarded write: %d %s, want 429 naming the missing guard", resp.StatusCode, data)
	}

	ns.SetGuarded(true, "20")
	if resp, _ := backendtesting.Do(t, "GET", p.URL+upMachines+"/u1", "", nil); resp.StatusCode != http.StatusOK || b.Last(t).Path != upMachines+"/u1" {
		t.Errorf("guarded read: %d from %s, want the upstream group", resp.StatusCode, b.Last(t).Path)
	}
	// From before the guard's change: expired, as after a label change.
	before := b.Count()
	if resp, data := backendtesting.Do(t, "GET", p.URL+upMachines+"?watch=true&resourceVersion=15", "", nil); resp.StatusCode != http.StatusOK || !strings.Contains(string(data), `"code":410`) {
		t.Errorf("watch from before the change: %d %s, want an ERROR event with 410", resp.StatusCode, data)
	}
	if b.Count() != before {
		t.Errorf("the watch from before the change reached the backend")
	}

	// Losing the guard (the policy deleted) holds the namespace again.
	ns.SetGuarded(false, "30")
	if resp, _ := backendtesting.Do(t, "DELETE", p.URL+upMachines+"/u1", "", nil); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("write after the guard went: %d, want 429", resp.StatusCode)
	}
	// A namespace labelled private is served as before whatever the guard.
	ns.Set("priv", "31", labelled("private"))
	if resp, _ := backendtesting.Do(t, "DELETE", p.URL+privMachines+"/u1", "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("a namespace labelled private: %d", resp.StatusCode)
	}
}

func TestHeldWrites(t *testing.T) {
	b := okBackend(t)
	m := metrics.New()
	reg := m.Registry()
	ns := cutover.NewNamespaces(m)
	ns.SetGuarded(true, "1")
	ns.Set("held", "11", labelled("upstream-held"))
	ns.Set("pheld", "12", labelled("private-held"))
	ns.Set("bogus", "13", labelled("sideways"))
	ns.MarkSynced()
	p := newCutoverProxy(t, b.URL, ns)
	held := 0
	for _, namespace := range []string{"held", "pheld", "bogus", "%68eld"} {
		base := "/apis/cluster.x-k8s.io/v1beta2/namespaces/" + namespace + "/machines"
		for _, tc := range []struct{ method, target, contentType string }{
			{"POST", base, "application/json"},
			{"POST", base + "?dryRun=All", "application/json"},
			{"PUT", base + "/m1", "application/json"},
			{"PUT", base + "/m1/status", "application/json"},
			{"PATCH", base + "/m1", "application/merge-patch+json"},
			{"PATCH", base + "/m1/scale", "application/merge-patch+json"},
			{"PATCH", base + "/m1?dryRun=All", "application/apply-patch+yaml"},
			{"DELETE", base + "/m1", ""},
			{"DELETE", base, ""},
		} {
			resp, data := backendtesting.Do(t, tc.method, p.URL+tc.target, `{}`, http.Header{"Content-Type": {tc.contentType}})
			held++
			if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
				t.Errorf("%s %s: %d Retry-After=%q, want 429", tc.method, tc.target, resp.StatusCode, resp.Header.Get("Retry-After"))
				continue
			}
			s := backendtesting.Status(t, data)
			if s.Reason != metav1.StatusReasonTooManyRequests || s.Details == nil || s.Details.RetryAfterSeconds != 1 {
				t.Errorf("%s %s: %s", tc.method, tc.target, data)
			}
		}
	}
	if b.Count() != 0 {
		t.Errorf("the backend got %d writes", b.Count())
	}
	// A cluster-wide deletecollection would reach held namespaces.
	if resp, _ := backendtesting.Do(t, "DELETE", p.URL+"/apis/cluster.x-k8s.io/v1beta2/machines", "", nil); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("cluster-wide deletecollection: %d", resp.StatusCode)
	}
	held++
	if got := metricSum(t, reg, "capi_proxy_held_requests_total"); int(got) != held {
		t.Errorf("held_requests_total = %v, want %d", got, held)
	}
}

// metricSum is the sum of every series of the metric name in reg.
func metricSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

func TestNamespacesByModeMetric(t *testing.T) {
	m := metrics.New()
	reg := m.Registry()
	ns := cutover.NewNamespaces(m)
	ns.SetGuarded(true, "1")
	ns.Set("a", "1", labelled("upstream"))
	ns.Set("b", "2", labelled("upstream"))
	ns.Set("c", "3", labelled("weird"))
	ns.Set("a", "4", labelled("upstream-held"))
	ns.Set("d", "5", nil)
	ns.Delete("b", "6")
	got, err := testutil.GatherAndLint(reg)
	if err != nil || len(got) > 0 {
		t.Errorf("lint: %v %v", got, err)
	}
	want := `
# HELP capi_proxy_namespaces Namespaces by the serving mode their capi-proxy.hypershift.openshift.io/serve-from label gives (unknown: a value that is not a mode, or a label not guarded); unlabelled namespaces and those labelled private are not counted.
# TYPE capi_proxy_namespaces gauge
capi_proxy_namespaces{mode="private"} 0
capi_proxy_namespaces{mode="private-held"} 0
capi_proxy_namespaces{mode="unknown"} 1
capi_proxy_namespaces{mode="upstream"} 0
capi_proxy_namespaces{mode="upstream-held"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "capi_proxy_namespaces"); err != nil {
		t.Error(err)
	}
}

// watchEvent reads one watch event.
func watchEvent(t *testing.T, r *bufio.Reader) (string, metav1.Status) {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading an event: %q %v", line, err)
	}
	var ev struct {
		Type   string          `json:"type"`
		Object json.RawMessage `json:"object"`
	}
	if err := json.Unmarshal([]byte(line), &ev); err != nil {
		t.Fatalf("event %q: %v", line, err)
	}
	var s metav1.Status
	if ev.Type == "ERROR" {
		_ = json.Unmarshal(ev.Object, &s)
	}
	return ev.Type, s
}

// TestWatchEndsOnModeChange: a watch open across a change of the groups its namespace is served from
// ends with a 410 Expired ERROR event after the event in flight; a watch of another namespace goes on; a
// watch or exact list from before the change is answered 410. A change that only holds writes ends and
// expires nothing (TestWatchEndsOnlyWhenGroupsChange).
func TestWatchEndsOnModeChange(t *testing.T) {
	release := make(chan struct{})
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") != "true" {
			io.WriteString(w, `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineList","metadata":{"resourceVersion":"30"},"items":[]}`)
			return
		}
		w.WriteHeader(http.StatusOK)
		ns := strings.Split(r.URL.Path, "/")[5]
		obj := fmt.Sprintf(`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m","namespace":%q,"resourceVersion":"20"}}`, ns)
		// Half an event, then the rest once the test changed the mode.
		half := len(obj) / 2
		io.WriteString(w, `{"type":"ADDED","object":`+obj+"}\n")
		w.(http.Flusher).Flush()
		if ns != "a" {
			<-r.Context().Done()
			return
		}
		io.WriteString(w, `{"type":"MODIFIED","object":`+obj[:half])
		w.(http.Flusher).Flush()
		<-release
		io.WriteString(w, obj[half:]+"}\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	ns := cutover.NewNamespaces(nil)
	ns.SetGuarded(true, "1")
	ns.Set("a", "10", labelled("upstream")) // passed through as it is: the backend's half event too
	ns.MarkSynced()
	p := newCutoverProxy(t, b.URL, ns)

	open := func(namespace string) (*http.Response, *bufio.Reader) {
		resp, err := http.Get(p.URL + "/apis/cluster.x-k8s.io/v1beta2/namespaces/" + namespace + "/machines?watch=true&resourceVersion=15")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		r := bufio.NewReader(resp.Body)
		if typ, _ := watchEvent(t, r); typ != "ADDED" {
			t.Fatalf("first event %s", typ)
		}
		return resp, r
	}
	_, a := open("a")
	_, other := open("b")
	// A change that only holds writes expires nothing: an exact list from between it and the namespace's
	// last change of groups (10) is served.
	ns.Set("a", "12", labelled("upstream-held"))
	if resp, data := backendtesting.Do(t, "GET", p.URL+"/apis/cluster.x-k8s.io/v1beta2/namespaces/a/machines?resourceVersion=11&resourceVersionMatch=Exact", "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("an exact list from before a change that holds writes only: %d %s", resp.StatusCode, data)
	}
	// The first bytes of a's next event reached the client: the event is in flight.
	if _, err := a.Peek(1); err != nil {
		t.Fatal(err)
	}
	ns.Set("a", "25", labelled("private-held"))
	close(release) // the event in flight completes after the change
	if typ, _ := watchEvent(t, a); typ != "MODIFIED" {
		t.Fatalf("the event in flight: %s", typ)
	}
	typ, s := watchEvent(t, a)
	if typ != "ERROR" || s.Code != http.StatusGone || s.Reason != metav1.StatusReasonExpired {
		t.Fatalf("after the mode change: %s %+v", typ, s)
	}
	if rest, _ := io.ReadAll(a); len(rest) > 0 {
		t.Errorf("after the ERROR event: %q", rest)
	}
	// Namespace b's watch is still open: it ends when the test's cleanup closes it. A watch of b from
	// before a's change is fine; of a, it is expired.
	_ = other
	resp, data := backendtesting.Do(t, "GET", p.URL+"/apis/cluster.x-k8s.io/v1beta2/namespaces/a/machines?watch=true&resourceVersion=20", "", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(data), `"code":410`) {
		t.Errorf("a watch from before the change: %d %s", resp.StatusCode, data)
	}
	// A watch list (sendInitialEvents) from before is served, as kube-apiserver serves it: client-go's
	// reflector relists so, from the last resourceVersion it saw.
	wl, err := http.Get(p.URL + "/apis/cluster.x-k8s.io/v1beta2/namespaces/a/machines?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=20")
	if err != nil {
		t.Fatal(err)
	}
	if typ, s := watchEvent(t, bufio.NewReader(wl.Body)); typ != "ADDED" {
		t.Errorf("a watch list from before the change: %s %+v, want the backend's events", typ, s)
	}
	wl.Body.Close()
	resp, data = backendtesting.Do(t, "GET", p.URL+"/apis/cluster.x-k8s.io/v1beta2/namespaces/a/machines?resourceVersion=20&resourceVersionMatch=Exact", "", nil)
	if resp.StatusCode != http.StatusGone {
		t.Errorf("an exact list from before the change: %d %s", resp.StatusCode, data)
	}
	resp, _ = backendtesting.Do(t, "GET", p.URL+"/apis/cluster.x-k8s.io/v1beta2/namespaces/a/machines?resourceVersion=20", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a list not older than before the change: %d", resp.StatusCode)
	}
	// Cluster-wide: expired from before any namespace moved between the groups (a at 10).
	resp, data = backendtesting.Do(t, "GET", p.URL+"/apis/cluster.x-k8s.io/v1beta2/machines?watch=true&resourceVersion=9", "", nil)
	if !strings.Contains(string(data), `"code":410`) {
		t.Errorf("a cluster-wide watch from before the move: %d %s", resp.StatusCode, data)
	}
}

func TestNamespaceDeletedAndRecreated(t *testing.T) {
	b := okBackend(t)
	ns := cutover.NewNamespaces(nil)
	ns.SetGuarded(true, "1")
	ns.Set("up", "10", labelled("upstream"))
	ns.MarkSynced()
	p := newCutoverProxy(t, b.URL, ns)
	get := func() string {
		backendtesting.Do(t, "GET", p.URL+upMachines+"/u1", "", nil)
		return b.Last(t).Path
	}
	if got := get(); !strings.HasPrefix(got, "/apis/cluster.x-k8s.io/") {
		t.Errorf("upstream: %s", got)
	}
	ns.Delete("up", "20")
	if got := get(); !strings.HasPrefix(got, "/apis/cluster.hypershift.openshift.io/") {
		t.Errorf("deleted: %s", got)
	}
	ns.Set("up", "30", nil)
	if got := get(); !strings.HasPrefix(got, "/apis/cluster.hypershift.openshift.io/") {
		t.Errorf("recreated unlabelled: %s", got)
	}
	ns.Set("up", "40", labelled("upstream"))
	if got := get(); !strings.HasPrefix(got, "/apis/cluster.x-k8s.io/") {
		t.Errorf("recreated upstream: %s", got)
	}
	// Once every namespace is private again, a cluster-wide deletecollection is no longer held.
	ns.Set("up", "50", labelled("private"))
	if resp, data := backendtesting.Do(t, "DELETE", p.URL+"/apis/cluster.x-k8s.io/v1beta2/machines", "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("cluster-wide deletecollection: %d %s", resp.StatusCode, data)
	}
}

// TestClusterWideUnlabelled: with no namespace labelled, a cluster-wide list is today's request.
func TestClusterWideUnlabelled(t *testing.T) {
	b := okBackend(t)
	ns := cutover.NewNamespaces(nil)
	ns.SetGuarded(true, "1")
	ns.MarkSynced()
	p := newCutoverProxy(t, b.URL, ns)
	backendtesting.Do(t, "GET", p.URL+"/apis/cluster.x-k8s.io/v1beta2/machines?limit=5&labelSelector=a%3Db", "", nil)
	got := b.Last(t)
	if got.Path != "/apis/cluster.hypershift.openshift.io/v1beta2/machines" || got.RawQuery != "limit=5&labelSelector=a%3Db" {
		t.Errorf("backend got %s?%s", got.Path, got.RawQuery)
	}
}

func TestMergedList(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		q := r.URL.Query()
		switch r.URL.Path {
		case "/apis/cluster.hypershift.openshift.io/v1beta2/machines":
			if q.Get("fieldSelector") != "spec.x=y,metadata.namespace!=up,metadata.namespace!=up2" || q.Has("limit") {
				t.Errorf("private list query %s", r.URL.RawQuery)
			}
			io.WriteString(w, `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineList","metadata":{"resourceVersion":"42"},"items":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"p1","namespace":"priv"}}]}`)
		case "/apis/cluster.x-k8s.io/v1beta2/namespaces/up/machines":
			if q.Get("resourceVersion") != "42" || q.Get("resourceVersionMatch") != "Exact" || q.Get("fieldSelector") != "spec.x=y" {
				t.Errorf("upstream list query %s", r.URL.RawQuery)
			}
			io.WriteString(w, `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineList","metadata":{"resourceVersion":"42"},"items":[`+upstreamMachineIn+`]}`)
		case "/apis/cluster.x-k8s.io/v1beta2/namespaces/up2/machines":
			// No upstream CRD of this version: kube-apiserver's 404 for a path it does not serve.
			http.NotFound(w, r)
		default:
			t.Errorf("unexpected request %s", r.URL)
			http.NotFound(w, r)
		}
	})
	ns := cutover.NewNamespaces(nil)
	ns.SetGuarded(true, "1")
	ns.Set("up", "10", labelled("upstream"))
	ns.Set("up2", "11", labelled("upstream-held"))
	ns.MarkSynced()
	p := newCutoverProxy(t, b.URL, ns)
	resp, data := backendtesting.Do(t, "GET", p.URL+"/apis/cluster.x-k8s.io/v1beta2/machines?limit=1&fieldSelector=spec.x%3Dy", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
	backendtesting.EqualJSON(t, data, `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineList","metadata":{"resourceVersion":"42"},"items":[`+
		`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"p1","namespace":"priv"}},`+upstreamMachineIn+`]}`)
	if !strings.Contains(string(data), upstreamMachineIn) {
		t.Errorf("the upstream item was not kept byte for byte: %s", data)
	}
	resp, data = backendtesting.Do(t, "GET", p.URL+"/apis/cluster.x-k8s.io/v1beta2/machines?limit=1&continue=abc", "", nil)
	if resp.StatusCode != http.StatusGone {
		t.Errorf("a continued list while mixed: %d %s", resp.StatusCode, data)
	}
}

func TestMergedWatch(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		q := r.URL.Query()
		if q.Get("watch") != "true" || q.Get("resourceVersion") != "5" {
			t.Errorf("watch query %s", r.URL.RawQuery)
		}
		switch r.URL.Path {
		case "/apis/cluster.hypershift.openshift.io/v1beta2/machines":
			if q.Get("fieldSelector") != "metadata.namespace!=up" {
				t.Errorf("private watch query %s", r.URL.RawQuery)
			}
			io.WriteString(w, `{"type":"ADDED","object":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"p1","namespace":"priv","resourceVersion":"8"}}}`+"\n")
			io.WriteString(w, `{"type":"BOOKMARK","object":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}`+"\n")
			io.WriteString(w, `{"type":"BOOKMARK","object":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"resourceVersion":"12"}}}`+"\n")
		case "/apis/cluster.x-k8s.io/v1beta2/namespaces/up/machines":
			io.WriteString(w, `{"type":"ADDED","object":`+upstreamMachineIn+`}`+"\n")
			io.WriteString(w, `{"type":"BOOKMARK","object":{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"resourceVersion":"7","annotations":{"k8s.io/initial-events-end":"true"}}}}`+"\n")
		default:
			t.Errorf("unexpected request %s", r.URL)
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	ns := cutover.NewNamespaces(nil)
	ns.SetGuarded(true, "1")
	ns.Set("up", "3", labelled("upstream"))
	ns.MarkSynced()
	p := newCutoverProxy(t, b.URL, ns)
	resp, err := http.Get(p.URL + "/apis/cluster.x-k8s.io/v1beta2/machines?watch=true&resourceVersion=5&sendInitialEvents=true&allowWatchBookmarks=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	var added, bookmarks []string
	for len(added) < 2 || len(bookmarks) < 1 {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("after %v %v: %v", added, bookmarks, err)
		}
		ev := decodeEvent(t, line)
		if ev.Object.APIVersion != "cluster.x-k8s.io/v1beta2" {
			t.Errorf("event %s", line)
		}
		switch ev.Type {
		case "ADDED":
			added = append(added, ev.Object.Metadata.Namespace+"/"+ev.Object.Metadata.Name)
		case "BOOKMARK":
			if len(added) < 2 {
				t.Errorf("the initial-events-end bookmark before every part's initial events: %s", line)
			}
			bookmarks = append(bookmarks, ev.Object.Metadata.ResourceVersion)
		}
	}
	if bookmarks[0] != "7" {
		t.Errorf("initial-events-end bookmark at %s, want the lowest (7)", bookmarks[0])
	}
	// Moves inside the open watch: TestMergedWatchMoves.
}

// TestMergedTable: kubectl's Table of a cluster-wide list while mixed takes the private Table's columns;
// upstream rows get their cells by column name. Asked for YAML, the merged answer is YAML.
func TestMergedTable(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json;as=Table;v=v1;g=meta.k8s.io")
		switch r.URL.Path {
		case "/apis/cluster.hypershift.openshift.io/v1beta2/machines":
			io.WriteString(w, `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"42"},`+
				`"columnDefinitions":[{"name":"Name"},{"name":"Phase"},{"name":"Age"}],"rows":[{"cells":["p1","Running","1d"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"p1","namespace":"priv"}}}]}`)
		case "/apis/cluster.x-k8s.io/v1beta2/namespaces/up/machines":
			io.WriteString(w, `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"42"},`+
				`"columnDefinitions":[{"name":"Name"},{"name":"Age"},{"name":"Paused"}],"rows":[{"cells":["u1","2d",true],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"u1","namespace":"up"}}}]}`)
		default:
			t.Errorf("unexpected request %s", r.URL)
			http.NotFound(w, r)
		}
	})
	ns := cutover.NewNamespaces(nil)
	ns.SetGuarded(true, "1")
	ns.Set("up", "10", labelled("upstream"))
	ns.MarkSynced()
	p := newCutoverProxy(t, b.URL, ns)
	table := http.Header{"Accept": {"application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}}
	resp, data := backendtesting.Do(t, "GET", p.URL+"/apis/cluster.x-k8s.io/v1beta2/machines", "", table)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
	backendtesting.EqualJSON(t, data, `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"42"},`+
		`"columnDefinitions":[{"name":"Name"},{"name":"Phase"},{"name":"Age"}],"rows":[`+
		`{"cells":["p1","Running","1d"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"p1","namespace":"priv"}}},`+
		`{"cells":["u1","","2d"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"u1","namespace":"up"}}}]}`)

	resp, data = backendtesting.Do(t, "GET", p.URL+"/apis/cluster.x-k8s.io/v1beta2/machines", "", http.Header{"Accept": {"application/yaml"}})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/yaml" || !strings.Contains(string(data), "name: u1") {
		t.Errorf("YAML: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), data)
	}
}

// TestMergedWatchEndsWithAPart: a namespace whose kind the upstream CRDs do not serve contributes
// nothing; when one part ends, the merged watch ends cleanly after its last whole event.
func TestMergedWatchEndsWithAPart(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/apis/cluster.hypershift.openshift.io/v1beta2/machines":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, `{"type":"ADDED","object":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"p1","namespace":"priv","resourceVersion":"8"}}}`+"\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case "/apis/cluster.x-k8s.io/v1beta2/namespaces/up/machines":
			// Ends (as a watch's timeout ends it) after one event and half of another.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, `{"type":"ADDED","object":`+upstreamMachineIn+`}`+"\n"+`{"type":"ADDED","obj`)
		case "/apis/cluster.x-k8s.io/v1beta2/namespaces/gone/machines":
			http.NotFound(w, r)
		default:
			t.Errorf("unexpected request %s", r.URL)
		}
	})
	ns := cutover.NewNamespaces(nil)
	ns.SetGuarded(true, "1")
	ns.Set("up", "3", labelled("upstream"))
	ns.Set("gone", "4", labelled("upstream"))
	ns.MarkSynced()
	p := newCutoverProxy(t, b.URL, ns)
	resp, data := backendtesting.Do(t, "GET", p.URL+"/apis/cluster.x-k8s.io/v1beta2/machines?watch=true", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	var got []string
	for _, l := range lines {
		ev := decodeEvent(t, l)
		got = append(got, ev.Type+" "+ev.Object.Metadata.Namespace+"/"+ev.Object.Metadata.Name)
	}
	// The private event may or may not have arrived before the upstream part ended.
	if !slices.Contains(got, "ADDED up/u1") || len(got) > 2 {
		t.Errorf("events %q", got)
	}
}

// benchFollow runs fn under two sub-benchmarks, follow=false and follow=true, with a proxy in front of a
// backend that answers every request with body (JSON): one that does not follow namespaces, and one that
// does with no namespace labelled.
func benchFollow(b *testing.B, body string, fn func(b *testing.B, h http.Handler)) {
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}))
	defer fake.Close()
	for _, follow := range []bool{false, true} {
		b.Run(fmt.Sprintf("follow=%v", follow), func(b *testing.B) {
			o := server.Options{Backend: &rest.Config{Host: fake.URL}, Routes: routestesting.Table()}
			if follow {
				o.Namespaces = cutover.NewNamespaces(nil)
				o.Namespaces.MarkSynced()
			}
			h, err := server.New(o)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			fn(b, h)
		})
	}
}

// BenchmarkUnlabelled: what a request of a mapped kind costs the serving-mode filter when no namespace
// is labelled, against a proxy that does not follow namespaces.
func BenchmarkUnlabelled(b *testing.B) {
	benchFollow(b, privateNamedMachine, func(b *testing.B, h http.Handler) {
		req := httptest.NewRequest("GET", privMachines+"/u1", nil)
		for b.Loop() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatal(rec.Code)
			}
		}
	})
}

// TestMergedWatchMoves: a cluster-wide watch open across a namespace's moves to the upstream groups and
// back goes on: at each move it sends, in the client's terms, what turns the namespace's objects as
// the client holds them (the old groups' list at the part's last resourceVersion) into the new groups'
// (a changed uid as DELETED then ADDED), then the namespace's events from the new groups only, and a
// BOOKMARK once every part has passed the move.
func TestMergedWatchMoves(t *testing.T) {
	machine := func(group, ns, name, uid string, rv int) string {
		return fmt.Sprintf(`{"apiVersion":"%s/v1beta2","kind":"Machine","metadata":{"name":%q,"namespace":%q,"uid":%q,"resourceVersion":"%d"}}`, group, name, ns, uid, rv)
	}
	const priv, up = "cluster.hypershift.openshift.io", "cluster.x-k8s.io"
	list := func(rv int, items ...string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"MachineList","metadata":{"resourceVersion":"%d"},"items":[%s]}`, rv, strings.Join(items, ","))
	}
	privNext, upClosed := make(chan struct{}), make(chan struct{})
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		q := r.URL.Query()
		event := func(typ, obj string) {
			io.WriteString(w, `{"type":"`+typ+`","object":`+obj+"}\n")
			w.(http.Flusher).Flush()
		}
		key := r.URL.Path + " " + q.Get("resourceVersion") + " " + q.Get("resourceVersionMatch")
		switch {
		case q.Get("watch") == "true" && r.URL.Path == "/apis/"+priv+"/v1beta2/machines" && q.Get("fieldSelector") == "":
			event("ADDED", machine(priv, "a", "m1", "p1", 6))
			<-privNext
			event("MODIFIED", machine(priv, "a", "m2", "p2", 14))
			event("MODIFIED", machine(priv, "b", "x", "px", 15))
			<-r.Context().Done()
		case q.Get("watch") == "true" && r.URL.Path == "/apis/"+up+"/v1beta2/namespaces/a/machines" && q.Get("resourceVersion") == "12":
			event("MODIFIED", machine(up, "a", "m1", "u1", 13))
			<-r.Context().Done()
			close(upClosed)
		case key == "/apis/"+priv+"/v1beta2/namespaces/a/machines 6 Exact":
			io.WriteString(w, list(6, machine(priv, "a", "m1", "p1", 6), machine(priv, "a", "m2", "p2", 4)))
		case key == "/apis/"+up+"/v1beta2/namespaces/a/machines  ":
			io.WriteString(w, list(12, machine(up, "a", "m3", "u3", 9), machine(up, "a", "m1", "u1", 11)))
		case key == "/apis/"+up+"/v1beta2/namespaces/a/machines 13 Exact":
			io.WriteString(w, list(13, machine(up, "a", "m1", "u1", 13), machine(up, "a", "m3", "u3", 9)))
		case key == "/apis/"+priv+"/v1beta2/namespaces/a/machines  ":
			io.WriteString(w, list(21, machine(priv, "a", "m1", "p1", 6)))
		default:
			t.Errorf("unexpected request %s", r.URL)
			w.WriteHeader(http.StatusInternalServerError)
		}
	})
	ns := cutover.NewNamespaces(nil)
	ns.SetGuarded(true, "1")
	ns.MarkSynced()
	p := newCutoverProxy(t, b.URL, ns)
	resp, err := http.Get(p.URL + "/apis/cluster.x-k8s.io/v1beta2/machines?watch=true&resourceVersion=5&allowWatchBookmarks=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	next := func(n int) []string {
		t.Helper()
		var got []string
		for range n {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("after %q: %v", got, err)
			}
			ev := decodeEvent(t, line)
			if ev.Object.APIVersion != "cluster.x-k8s.io/v1beta2" {
				t.Errorf("not in the client's terms: %s", line)
			}
			m := ev.Object.Metadata
			got = append(got, fmt.Sprintf("%s %s/%s %s %s", ev.Type, m.Namespace, m.Name, m.UID, m.ResourceVersion))
		}
		return got
	}
	expect := func(what string, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s:\n got %q\nwant %q", what, got, want)
		}
	}
	expect("before the move", next(1), "ADDED a/m1 p1 6")
	ns.Set("a", "10", labelled("upstream"))
	expect("the move to the upstream groups", next(5),
		"DELETED a/m1 p1 6", "ADDED a/m1 u1 11", "DELETED a/m2 p2 4", "ADDED a/m3 u3 9", "MODIFIED a/m1 u1 13")
	close(privNext)
	// The private part's event of a is dropped; once it passed 12 (the move's list), the BOOKMARK at the
	// lowest part's progress.
	expect("after the move", next(2), "MODIFIED b/x px 15", "BOOKMARK /  13")
	ns.Set("a", "20", labelled("private"))
	expect("the move back", next(3), "DELETED a/m1 u1 13", "ADDED a/m1 p1 6", "DELETED a/m3 u3 9")
	<-upClosed // the upstream part ended with the move
	// A watch resumed from before the last move is expired.
	if _, data := backendtesting.Do(t, "GET", p.URL+"/apis/cluster.x-k8s.io/v1beta2/machines?watch=true&resourceVersion=15", "", nil); !strings.Contains(string(data), `"code":410`) {
		t.Errorf("a watch from before the move: %s", data)
	}
}

// BenchmarkClusterWideWatch: a cluster-wide watch of 100 MODIFIED events of a Machine (about 2 KB each)
// with no namespace labelled, through a proxy that does not follow namespaces (the private watch as it
// is) and through one that does (the merge, which a namespace's move needs); per watch.
func BenchmarkClusterWideWatch(b *testing.B) {
	obj := `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m","namespace":"a","resourceVersion":"20",` +
		`"annotations":{"a":"` + strings.Repeat("x", 1800) + `"}},"spec":{"clusterName":"c","infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"AWSMachine","name":"m"}}}`
	var stream strings.Builder
	for range 100 {
		stream.WriteString(`{"type":"MODIFIED","object":` + obj + "}\n")
	}
	benchFollow(b, stream.String(), func(b *testing.B, h http.Handler) {
		for b.Loop() {
			req := httptest.NewRequest("GET", "/apis/cluster.x-k8s.io/v1beta2/machines?watch=true&resourceVersion=10", nil)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK || strings.Count(rec.Body.String(), "\n") != 100 {
				b.Fatal(rec.Code, rec.Body.Len())
			}
		}
	})
}

// TestMergedWatchMoveUnknownPosition: a cluster-wide watch from no resourceVersion (its first events are
// the objects as they are, whose resourceVersions say nothing of the watch's position) cannot tell what
// the client holds of a moving namespace: it ends with 410 Expired, and the client lists again.
func TestMergedWatchMoveUnknownPosition(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") != "true" || r.URL.Path != "/apis/cluster.hypershift.openshift.io/v1beta2/machines" {
			t.Errorf("unexpected request %s", r.URL)
			return
		}
		io.WriteString(w, `{"type":"ADDED","object":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m","namespace":"a","resourceVersion":"6"}}}`+"\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	ns := cutover.NewNamespaces(nil)
	ns.SetGuarded(true, "1")
	ns.MarkSynced()
	p := newCutoverProxy(t, b.URL, ns)
	resp, err := http.Get(p.URL + "/apis/cluster.x-k8s.io/v1beta2/machines?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	if typ, _ := watchEvent(t, r); typ != "ADDED" {
		t.Fatalf("first event %s", typ)
	}
	ns.Set("a", "10", labelled("upstream"))
	if typ, s := watchEvent(t, r); typ != "ERROR" || s.Code != http.StatusGone {
		t.Fatalf("after the move: %s %+v", typ, s)
	}
	if rest, _ := io.ReadAll(r); len(rest) > 0 {
		t.Errorf("after the ERROR event: %q", rest)
	}
}

// objectEvent is what the tests read of a watch event: its type, and its object's apiVersion and metadata.
type objectEvent struct {
	Type   string `json:"type"`
	Object struct {
		APIVersion string            `json:"apiVersion"`
		Metadata   metav1.ObjectMeta `json:"metadata"`
	} `json:"object"`
}

// decodeEvent decodes one line of a watch's answer, failing t if it is not a whole event.
func decodeEvent(t testing.TB, line string) objectEvent {
	t.Helper()
	var ev objectEvent
	if err := json.Unmarshal([]byte(line), &ev); err != nil {
		t.Fatalf("not a whole event: %q: %v", line, err)
	}
	return ev
}
