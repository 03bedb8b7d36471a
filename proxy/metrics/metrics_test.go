package metrics

import (
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/metricstesting"
)

func TestNilRecordsNothing(t *testing.T) {
	var m *Metrics
	m.StartRequest(RequestLabels{Verb: "get"}, true, false)(200)
	m.ObserveTranslation("g", "K", Request, time.Second)
	m.TranslationError("g", "K", Response, "InternalError")
	m.ObserveConversionReview("Machine", "cluster.x-k8s.io/v1beta1", 200, time.Second)
}

func TestRequests(t *testing.T) {
	m := New()
	done := m.StartRequest(RequestLabels{Class: "Mapped", Verb: "watch", Group: "cluster.x-k8s.io", Resource: "machines"}, true, true)
	watches := map[string]string{"group": "cluster.x-k8s.io", "resource": "machines"}
	if v := metricstesting.Value(t, m.Registry(), "capi_proxy_open_watches", watches); v != 1 {
		t.Errorf("open watches %v, want 1", v)
	}
	done(200)
	if v := metricstesting.Value(t, m.Registry(), "capi_proxy_open_watches", watches); v != 0 {
		t.Errorf("open watches %v after the watch, want 0", v)
	}
	watch := map[string]string{"class": "Mapped", "verb": "watch", "group": "cluster.x-k8s.io", "resource": "machines", "subresource": ""}
	if v := metricstesting.Value(t, m.Registry(), "capi_proxy_requests_total", metricstesting.With(watch, "code", "200")); v != 1 {
		t.Errorf("requests %v, want 1", v)
	}
	if v := metricstesting.Value(t, m.Registry(), "capi_proxy_request_duration_seconds", watch); v != -1 {
		t.Errorf("a long-running request's duration was observed")
	}

	// A made-up method is not a label value.
	m.StartRequest(RequestLabels{Class: "Other", Verb: "brew"}, false, false)(405)
	other := map[string]string{"class": "Other", "verb": "other", "group": "", "resource": "", "subresource": ""}
	if v := metricstesting.Value(t, m.Registry(), "capi_proxy_requests_total", metricstesting.With(other, "code", "405")); v != 1 {
		t.Errorf("requests %v, want 1", v)
	}
	if v := metricstesting.Value(t, m.Registry(), "capi_proxy_request_duration_seconds", other); v != 1 {
		t.Errorf("request durations %v, want 1", v)
	}
}

func TestTranslationsAndConversions(t *testing.T) {
	m := New()
	m.ObserveTranslation("cluster.x-k8s.io", "Machine", Response, time.Millisecond)
	m.TranslationError("cluster.x-k8s.io", "Machine", Request, "BadRequest")
	m.ObserveConversionReview("Machine", "cluster.x-k8s.io/v1beta1", 200, time.Millisecond)
	for _, c := range []struct {
		name   string
		labels map[string]string
	}{
		{"capi_proxy_translation_duration_seconds", map[string]string{"group": "cluster.x-k8s.io", "kind": "Machine", "direction": "response"}},
		{"capi_proxy_translation_errors_total", map[string]string{"group": "cluster.x-k8s.io", "kind": "Machine", "direction": "request", "reason": "BadRequest"}},
		{"capi_proxy_conversion_webhook_requests_total", map[string]string{"kind": "Machine", "desired_api_version": "cluster.x-k8s.io/v1beta1", "code": "200"}},
		{"capi_proxy_conversion_webhook_duration_seconds", map[string]string{"kind": "Machine", "desired_api_version": "cluster.x-k8s.io/v1beta1"}},
	} {
		if v := metricstesting.Value(t, m.Registry(), c.name, c.labels); v != 1 {
			t.Errorf("%s%v = %v, want 1", c.name, c.labels, v)
		}
	}
}

func TestLintAndExposition(t *testing.T) {
	m := New()
	m.StartRequest(RequestLabels{Class: "Other", Verb: "get"}, false, false)(200)
	m.DeprecatedRequest(DeprecatedRequestLabels{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "machines"}, "kubectl/v1.35.4")
	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, namespace) {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
	// Uncompressed whatever the scraper accepts (Prometheus sends the first): see Handler.
	for _, accept := range []string{"gzip", "zstd,gzip;q=0.9", "identity"} {
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Header.Set("Accept-Encoding", accept)
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, req)
		if enc := rec.Header().Get("Content-Encoding"); enc != "" || !strings.Contains(rec.Body.String(), "go_goroutines") {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q, body starts %.40q", accept, enc, rec.Body.String())
		}
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, name := range []string{"capi_proxy_requests_total", "capi_proxy_requested_deprecated_apis_total", "go_goroutines", "process_resident_memory_bytes"} {
		if !strings.Contains(string(body), name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}

// TestDefinitions: what Definitions lists is what the registry exposes once every metric was recorded:
// the same names, types, help and labels, and nothing of the proxy's besides.
func TestDefinitions(t *testing.T) {
	m := New()
	m.StartRequest(RequestLabels{Class: "Mapped", Verb: "watch"}, true, false)(200)
	m.StartRequest(RequestLabels{Class: "Mapped", Verb: "watch"}, true, true)
	m.ObserveTranslation("g", "K", Request, time.Millisecond)
	m.TranslationError("g", "K", Request, "BadRequest")
	m.ObserveConversionReview("Machine", "cluster.x-k8s.io/v1beta1", 200, time.Millisecond)
	m.NamespaceModeChanged("", UnknownMode)
	m.HeldRequest("g", "r")
	m.SetServingLabelGuarded(true)
	m.DeprecatedRequest(DeprecatedRequestLabels{Group: "g", Version: "v1beta1", Resource: "r", RemovedRelease: "v1.16"}, "kubectl/v1.34.0")
	m.ObserveAdmissionReview("cluster-api", "Machine", "CREATE", 200, time.Millisecond)
	m.AdmissionError("cluster-api", "Machine", "CREATE", "timeout")
	held, active := m.WebhookGauges("conversion")
	held.Set(1)
	active.Set(1)

	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]Definition{}
	for _, d := range Definitions() {
		if _, dup := defined[d.Name]; dup {
			t.Errorf("%s is defined twice", d.Name)
		}
		defined[d.Name] = d
	}
	gathered := map[string]bool{}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), namespace+"_") {
			continue
		}
		gathered[f.GetName()] = true
		d, ok := defined[f.GetName()]
		if !ok {
			t.Errorf("%s is registered but not in Definitions", f.GetName())
			continue
		}
		if typ := strings.ToLower(f.GetType().String()); typ != d.Type || f.GetHelp() != d.Help {
			t.Errorf("%s: gathered %s %q, defined %s %q", d.Name, typ, f.GetHelp(), d.Type, d.Help)
		}
		var labels []string
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		// The exposition sorts label names.
		want := slices.Clone(d.Labels)
		slices.Sort(want)
		if !slices.Equal(labels, want) {
			t.Errorf("%s: labels %q, defined %q", d.Name, labels, d.Labels)
		}
	}
	for name := range defined {
		if !gathered[name] {
			t.Errorf("%s is in Definitions but was not gathered: record it above", name)
		}
	}
}
