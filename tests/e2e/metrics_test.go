package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// TestDiagnostics: /metrics, /healthz and /readyz are the proxy's on its metrics listener, while on its
// main port those paths still reach the apiserver.
func TestDiagnostics(t *testing.T) {
	c, _ := clients(t)
	namespace(t, c) // at least one request through the proxy

	if code, body := get(t, proxy.MetricsURL+"/healthz"); code != 200 || body != "ok" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body := get(t, proxy.MetricsURL+"/readyz?verbose"); code != 200 || !strings.Contains(body, "[+]backend ok") {
		t.Errorf("/readyz: %d %q", code, body)
	}
	code, body := get(t, proxy.MetricsURL+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`capi_proxy_requests_total{class="Other",code="201",group="",resource="",subresource="",verb="create"}`,
		"capi_proxy_request_duration_seconds_bucket",
		"go_goroutines",
		"process_resident_memory_bytes",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// kubectl get --raw /readyz through the proxy: the apiserver's answer, with its own checks.
	code, data := raw(t, proxy.Config(env.AdminToken), "GET", "/readyz?verbose", "", nil)
	if code != 200 || !strings.Contains(string(data), "[+]etcd ok") {
		t.Errorf("/readyz through the proxy: %d %s", code, data)
	}
}
