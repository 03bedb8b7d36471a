package server_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/openshift/hypershift-capi-proxy/proxy/convert"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/backendtesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/metricstesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/routestesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/proxy/server"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

func TestMetrics(t *testing.T) {
	watching := make(chan struct{})
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
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
	h, err := server.New(server.Options{Backend: &rest.Config{Host: b.URL}, Routes: routestesting.Table(), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	p := httptest.NewServer(h)
	defer p.Close()
	reg := m.Registry()
	machines := map[string]string{"class": "Mapped", "group": "cluster.x-k8s.io", "resource": "machines", "subresource": ""}
	value := func(name string, labels map[string]string) float64 {
		t.Helper()
		return metricstesting.Value(t, reg, name, labels)
	}

	backendtesting.Do(t, "GET", p.URL+upstreamMachines+"/m1", "", nil)
	backendtesting.Do(t, "GET", p.URL+upstreamMachines+"/m1/status", "", nil)
	backendtesting.Do(t, "GET", p.URL+"/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/widgets/w", "", nil)
	backendtesting.Do(t, "GET", p.URL+"/api/v1/namespaces/ns/secrets/"+"a-name-that-must-not-become-a-label", "", nil)
	// A body naming a group in a form the proxy cannot decode: a translation error of the request.
	backendtesting.Do(t, "POST", p.URL+upstreamMachines, "k8s\x00cluster.x-k8s.io/v1beta2", http.Header{"Content-Type": {"application/vnd.kubernetes.protobuf"}})
	backendtesting.Do(t, "GET", p.URL+upstreamMachines+"/broken", "", nil)

	get := metricstesting.With(machines, "verb", "get")
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"capi_proxy_requests_total", metricstesting.With(get, "code", "200"), 1},
		{"capi_proxy_requests_total", metricstesting.With(metricstesting.With(get, "subresource", "status"), "code", "200"), 1},
		{"capi_proxy_requests_total", map[string]string{"class": "Unrouted", "verb": "get", "group": "", "resource": "", "subresource": "", "code": "404"}, 1},
		{"capi_proxy_requests_total", map[string]string{"class": "Other", "verb": "get", "group": "", "resource": "", "subresource": "", "code": "200"}, 1},
		{"capi_proxy_requests_total", metricstesting.With(metricstesting.With(machines, "verb", "create"), "code", "415"), 1},
		{"capi_proxy_requests_total", metricstesting.With(get, "code", "500"), 1},
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
	if got := value("capi_proxy_requests_total", metricstesting.With(metricstesting.With(machines, "verb", "watch"), "code", "200")); got != 1 {
		t.Errorf("watch requests %v, want 1", got)
	}
}

func TestBackendReady(t *testing.T) {
	for _, tc := range []struct {
		code  int
		ready bool
	}{{200, true}, {401, true}, {403, true}, {500, false}, {404, false}} {
		b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
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
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) { t.Errorf("the backend got %s %s", r.Method, r.URL) })
	m := metrics.New()
	h, err := server.New(server.Options{Backend: &rest.Config{Host: b.URL}, Routes: routestesting.Table(), Metrics: m, Converter: conv})
	if err != nil {
		t.Fatal(err)
	}
	p := httptest.NewServer(h)
	defer p.Close()
	resp, data := backendtesting.Do(t, "POST", p.URL+"/convert", "{", http.Header{"Content-Type": {"application/json"}})
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("POST /convert: %d %s", resp.StatusCode, data)
	}
	labels := map[string]string{"class": "Webhook", "verb": "post", "group": "", "resource": "", "subresource": "", "code": "400"}
	if v := metricstesting.Value(t, m.Registry(), "capi_proxy_requests_total", labels); v != 1 {
		t.Errorf("requests_total%v = %v, want 1", labels, v)
	}

	plain := newProxy(t, b.URL)
	if resp, data := backendtesting.Do(t, "POST", plain.URL+"/convert", "{}", http.Header{"Content-Type": {"application/json"}}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /convert without a converter: %d %s", resp.StatusCode, data)
	}
}

// TestWebhooksTakeDeadlines: the conversion and admission webhooks on the mux given in Options.Webhooks
// are the ones served (not copies), each request classified and counted in requests_total (class
// Webhook, Admission), and the ResponseWriter the chain hands them takes read and write deadlines
// (http.ResponseController): the API listener has no http.Server ReadTimeout, and the webhooks bound
// their own requests with them.
func TestWebhooksTakeDeadlines(t *testing.T) {
	conv, err := convert.New(translate.NewTable(routes.Routes), routes.APIVersionGetterSetters)
	if err != nil {
		t.Fatal(err)
	}
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) { t.Errorf("the backend got %s %s", r.Method, r.URL) })
	served := map[string]error{}
	deadlines := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rc := http.NewResponseController(w)
			err := errors.Join(rc.SetReadDeadline(time.Now().Add(time.Minute)), rc.SetWriteDeadline(time.Now().Add(time.Minute)))
			served[name] = err
			w.WriteHeader(http.StatusNoContent)
		})
	}
	m := metrics.New()
	h, err := server.New(server.Options{Backend: &rest.Config{Host: b.URL}, Routes: routestesting.Table(), Metrics: m,
		Converter: conv, Webhooks: webhook.Mux(deadlines("conversion"), deadlines("admission"))})
	if err != nil {
		t.Fatal(err)
	}
	p := httptest.NewServer(h)
	defer p.Close()
	for path, name := range map[string]string{"/convert": "conversion", "/admission/cluster-api/validate": "admission"} {
		if resp, data := backendtesting.Do(t, "POST", p.URL+path, "{}", http.Header{"Content-Type": {"application/json"}}); resp.StatusCode != http.StatusNoContent {
			t.Errorf("POST %s: %d %s", path, resp.StatusCode, data)
		}
		if err, ok := served[name]; !ok || err != nil {
			t.Errorf("the %s webhook: served %v, deadlines: %v", name, ok, err)
		}
	}
	for _, class := range []string{"Webhook", "Admission"} {
		labels := map[string]string{"class": class, "verb": "post", "group": "", "resource": "", "subresource": "", "code": "204"}
		if v := metricstesting.Value(t, m.Registry(), "capi_proxy_requests_total", labels); v != 1 {
			t.Errorf("requests_total%v = %v, want 1", labels, v)
		}
	}
}

// TestDeprecatedRequests: every request of a deprecated version (routestesting's Machine v1beta1) counts in
// requested_deprecated_apis_total, whatever its verb and however it is answered but 401, by the component
// its User-Agent names; a watch counts as soon as it is answered, while it is still open. Requests of
// v1beta2 never count.
func TestDeprecatedRequests(t *testing.T) {
	const (
		v1beta1         = "/apis/cluster.x-k8s.io/v1beta1/namespaces/ns/machines"
		privateV1beta1  = `{"apiVersion":"cluster.hypershift.openshift.io/v1beta1","kind":"Machine","metadata":{"name":"m1","namespace":"ns"}}`
		upstreamV1beta1 = `{"apiVersion":"cluster.x-k8s.io/v1beta1","kind":"Machine","metadata":{"name":"m1","namespace":"ns"}}`
	)
	watching := make(chan struct{})
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Query().Get("watch") == "true":
			fmt.Fprintln(w, `{"type":"ADDED","object":`+privateV1beta1+`}`)
			w.(http.Flusher).Flush()
			<-watching
		case strings.HasSuffix(r.URL.Path, "/unauthorized"):
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`)
		case strings.HasSuffix(r.URL.Path, "/forbidden"):
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"no","reason":"Forbidden","code":403}`)
		case strings.HasSuffix(r.URL.Path, "/machines") && r.Method == http.MethodGet:
			io.WriteString(w, `{"apiVersion":"`+strings.Split(r.URL.Path, "/")[2]+"/"+strings.Split(r.URL.Path, "/")[3]+`","kind":"MachineList","metadata":{},"items":[]}`)
		case strings.Contains(r.URL.Path, "/v1beta2/"):
			io.WriteString(w, privateMachine)
		default:
			io.WriteString(w, privateV1beta1)
		}
	})
	m := metrics.New()
	h, err := server.New(server.Options{Backend: &rest.Config{Host: b.URL}, Routes: routestesting.Table(), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	p := httptest.NewServer(h)
	defer p.Close()
	operator := http.Header{"User-Agent": {"hypershift-operator-manager"}}
	jsonBody := http.Header{"User-Agent": {"hypershift-operator-manager"}, "Content-Type": {"application/json"}}
	merge := http.Header{"User-Agent": {"hypershift-operator-manager"}, "Content-Type": {"application/merge-patch+json"}}
	for _, r := range []struct {
		method, path, body string
		header             http.Header
		code               int
	}{
		{"GET", v1beta1 + "/m1", "", operator, 200},
		{"GET", v1beta1, "", operator, 200},
		{"POST", v1beta1, upstreamV1beta1, jsonBody, 200},
		{"PUT", v1beta1 + "/m1/status", upstreamV1beta1, jsonBody, 200},
		{"PATCH", v1beta1 + "/m1", `{"metadata":{"labels":{"a":"b"}}}`, merge, 200},
		{"DELETE", v1beta1 + "/m1", "", operator, 200},
		{"GET", v1beta1 + "/forbidden", "", operator, 403},
		{"GET", v1beta1 + "/unauthorized", "", operator, 401},
		{"GET", v1beta1 + "/m1", "", http.Header{"User-Agent": {"kubectl/v1.35.4 (linux/amd64) kubernetes/abcdef0"}}, 200},
		{"GET", upstreamMachines + "/m1", "", operator, 200},
		{"GET", upstreamMachines, "", operator, 200},
		{"PATCH", upstreamMachines + "/m1", `{"metadata":{"labels":{"a":"b"}}}`, merge, 200},
	} {
		if resp, data := backendtesting.Do(t, r.method, p.URL+r.path, r.body, r.header); resp.StatusCode != r.code {
			t.Fatalf("%s %s: %d, want %d: %s", r.method, r.path, resp.StatusCode, r.code, data)
		}
	}
	series := map[string]string{"group": "cluster.x-k8s.io", "version": "v1beta1", "resource": "machines", "subresource": "",
		"removed_release": "v1.16", "component": "hypershift-operator"}
	value := func(labels map[string]string) float64 {
		t.Helper()
		return metricstesting.Value(t, m.Registry(), "capi_proxy_requested_deprecated_apis_total", labels)
	}
	// get, list, create, patch, delete and the forbidden get; not the 401.
	if v := value(series); v != 6 {
		t.Errorf("%v = %v, want 6", series, v)
	}
	if v := value(metricstesting.With(series, "subresource", "status")); v != 1 {
		t.Errorf("the status update: %v, want 1", v)
	}
	if v := value(metricstesting.With(series, "component", "kubectl")); v != 1 {
		t.Errorf("kubectl's get: %v, want 1", v)
	}

	req, _ := http.NewRequest("GET", p.URL+v1beta1+"?watch=true", nil)
	req.Header.Set("User-Agent", "hypershift-operator-manager")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if v := value(series); v != 7 {
		t.Errorf("during the watch %v, want 7: a watch counts once answered", v)
	}
	close(watching)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	p.Close() // waits for the handler to finish
	if v := value(series); v != 7 {
		t.Errorf("after the watch %v, want 7: a watch counts once", v)
	}

	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "capi_proxy_requested_deprecated_apis_total" {
			continue
		}
		if len(f.GetMetric()) != 3 {
			t.Errorf("%d series, want 3", len(f.GetMetric()))
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "version" && l.GetValue() != "v1beta1" {
					t.Errorf("a series of version %s, which is not deprecated", l.GetValue())
				}
			}
		}
	}
}
