package server_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/openshift/hypershift-capi-proxy/proxy/convert"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/fakeroutes"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/metricstest"
	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/proxy/server"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

func TestMetrics(t *testing.T) {
	watching := make(chan struct{})
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Query().Get("watch") == "true":
			fmt.Fprintln(w, `{"type":"ADDED","object":`+privateMachine+`}`)
			w.(http.Flusher).Flush()
			<-watching
		case r.URL.Path == privateMachines+"/broken":
			io.WriteString(w, `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":`)
		default:
			io.WriteString(w, privateMachine)
		}
	})
	m := metrics.New()
	h, err := server.New(server.Options{Backend: &rest.Config{Host: b.URL}, Routes: fakeroutes.Table(), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	p := httptest.NewServer(h)
	defer p.Close()
	reg := m.Registry()
	machines := map[string]string{"class": "Mapped", "group": "cluster.x-k8s.io", "resource": "machines", "subresource": ""}
	value := func(name string, labels map[string]string) float64 {
		t.Helper()
		return metricstest.Value(t, reg, name, labels)
	}

	do(t, "GET", p.URL+upstreamMachines+"/m1", "", nil)
	do(t, "GET", p.URL+upstreamMachines+"/m1/status", "", nil)
	do(t, "GET", p.URL+"/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/widgets/w", "", nil)
	do(t, "GET", p.URL+"/api/v1/namespaces/ns/secrets/"+"a-name-that-must-not-become-a-label", "", nil)
	// A body naming a group in a form the proxy cannot decode: a translation error of the request.
	do(t, "POST", p.URL+upstreamMachines, "k8s\x00cluster.x-k8s.io/v1beta2", http.Header{"Content-Type": {"application/vnd.kubernetes.protobuf"}})
	do(t, "GET", p.URL+upstreamMachines+"/broken", "", nil)

	get := metricstest.With(machines, "verb", "get")
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"capi_proxy_requests_total", metricstest.With(get, "code", "200"), 1},
		{"capi_proxy_requests_total", metricstest.With(metricstest.With(get, "subresource", "status"), "code", "200"), 1},
		{"capi_proxy_requests_total", map[string]string{"class": "Unrouted", "verb": "get", "group": "", "resource": "", "subresource": "", "code": "404"}, 1},
		{"capi_proxy_requests_total", map[string]string{"class": "Other", "verb": "get", "group": "", "resource": "", "subresource": "", "code": "200"}, 1},
		{"capi_proxy_requests_total", metricstest.With(metricstest.With(machines, "verb", "create"), "code", "415"), 1},
		{"capi_proxy_requests_total", metricstest.With(get, "code", "500"), 1},
		{"capi_proxy_request_duration_seconds", get, 2},
		{"capi_proxy_translation_errors_total", map[string]string{"group": "cluster.x-k8s.io", "kind": "Machine", "direction": "request", "reason": "UnsupportedMediaType"}, 1},
		{"capi_proxy_translation_errors_total", map[string]string{"group": "cluster.x-k8s.io", "kind": "Machine", "direction": "response", "reason": "InternalError"}, 1},
		{"capi_proxy_translation_duration_seconds", map[string]string{"group": "cluster.x-k8s.io", "kind": "Machine", "direction": "response"}, 3},
	} {
		if got := value(c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	resp, err := http.Get(p.URL + upstreamMachines + "?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	open := map[string]string{"group": "cluster.x-k8s.io", "resource": "machines"}
	if got := value("capi_proxy_open_watches", open); got != 1 {
		t.Errorf("open watches %v during the watch, want 1", got)
	}
	close(watching)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	p.Close() // waits for the handler to finish
	if got := value("capi_proxy_open_watches", open); got != 0 {
		t.Errorf("open watches %v after the watch, want 0", got)
	}
	if got := value("capi_proxy_requests_total", metricstest.With(metricstest.With(machines, "verb", "watch"), "code", "200")); got != 1 {
		t.Errorf("watch requests %v, want 1", got)
	}
}

func TestBackendReady(t *testing.T) {
	for _, tc := range []struct {
		code  int
		ready bool
	}{{200, true}, {401, true}, {403, true}, {500, false}, {404, false}} {
		b := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/readyz" || r.Header.Get("Authorization") != "" {
				t.Errorf("probe %s with Authorization %q", r.URL.Path, r.Header.Get("Authorization"))
			}
			w.WriteHeader(tc.code)
		})
		check, err := server.BackendReady(server.Options{Backend: &rest.Config{Host: b.URL, BearerToken: "not-in-pass-through"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := check(httptest.NewRequest("GET", "/readyz", nil)); (err == nil) != tc.ready {
			t.Errorf("backend answering %d: %v, want ready=%v", tc.code, err, tc.ready)
		}
		b.Close()
		if err := check(httptest.NewRequest("GET", "/readyz", nil)); err == nil {
			t.Errorf("a backend that is down is ready")
		}
	}
}

// TestWebhookInTheChain: with a converter, the conversion webhook is served at classify.WebhookPath by the
// same handler chain as every request, and counted like one; without one, that path does not exist.
func TestWebhookInTheChain(t *testing.T) {
	conv, err := convert.New(translate.NewTable(routes.Routes), routes.APIVersionGetterSetters)
	if err != nil {
		t.Fatal(err)
	}
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) { t.Errorf("the backend got %s %s", r.Method, r.URL) })
	m := metrics.New()
	h, err := server.New(server.Options{Backend: &rest.Config{Host: b.URL}, Routes: fakeroutes.Table(), Metrics: m, Converter: conv})
	if err != nil {
		t.Fatal(err)
	}
	p := httptest.NewServer(h)
	defer p.Close()
	resp, data := do(t, "POST", p.URL+"/convert", "{", http.Header{"Content-Type": {"application/json"}})
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("POST /convert: %d %s", resp.StatusCode, data)
	}
	labels := map[string]string{"class": "Webhook", "verb": "post", "group": "", "resource": "", "subresource": "", "code": "400"}
	if v := metricstest.Value(t, m.Registry(), "capi_proxy_requests_total", labels); v != 1 {
		t.Errorf("requests_total%v = %v, want 1", labels, v)
	}

	plain := newProxy(t, b.URL)
	if resp, data := do(t, "POST", plain.URL+"/convert", "{}", http.Header{"Content-Type": {"application/json"}}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /convert without a converter: %d %s", resp.StatusCode, data)
	}
}

// TestWebhooksTakeDeadlines: the conversion webhook given in Options.Webhook and the admission webhook
// are the ones served (not copies), and the ResponseWriter the chain hands them takes read and write
// deadlines (http.ResponseController): the API listener has no http.Server ReadTimeout, and the
// webhooks bound their own requests with them.
func TestWebhooksTakeDeadlines(t *testing.T) {
	conv, err := convert.New(translate.NewTable(routes.Routes), routes.APIVersionGetterSetters)
	if err != nil {
		t.Fatal(err)
	}
	b := newBackend(t, func(w http.ResponseWriter, r *http.Request) { t.Errorf("the backend got %s %s", r.Method, r.URL) })
	served := map[string]error{}
	deadlines := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rc := http.NewResponseController(w)
			err := errors.Join(rc.SetReadDeadline(time.Now().Add(time.Minute)), rc.SetWriteDeadline(time.Now().Add(time.Minute)))
			served[name] = err
			w.WriteHeader(http.StatusNoContent)
		})
	}
	h, err := server.New(server.Options{Backend: &rest.Config{Host: b.URL}, Routes: fakeroutes.Table(), Metrics: metrics.New(),
		Converter: conv, Webhook: deadlines("conversion"), Admission: deadlines("admission")})
	if err != nil {
		t.Fatal(err)
	}
	p := httptest.NewServer(h)
	defer p.Close()
	for path, name := range map[string]string{"/convert": "conversion", "/admission/cluster-api/validate": "admission"} {
		if resp, data := do(t, "POST", p.URL+path, "{}", http.Header{"Content-Type": {"application/json"}}); resp.StatusCode != http.StatusNoContent {
			t.Errorf("POST %s: %d %s", path, resp.StatusCode, data)
		}
		if err, ok := served[name]; !ok || err != nil {
			t.Errorf("the %s webhook: served %v, deadlines: %v", name, ok, err)
		}
	}
}
