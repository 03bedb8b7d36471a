package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/backendtesting"
)

// TestOpenAPIRevalidatesWithTheBackend: the proxy translates a document once per backend version, but asks
// the backend every time, with the client's credentials and If-None-Match, so that the backend authorizes
// every client.
func TestOpenAPIRevalidatesWithTheBackend(t *testing.T) {
	const doc = `{"swagger":"2.0","info":{"title":"t","version":"v"},"paths":{"/apis/cluster.hypershift.openshift.io/v1beta2/machines":{"get":{"responses":{"200":{"description":"OK"}}}}}}`
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer client" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`))
			return
		}
		w.Header().Set("ETag", `"B1"`)
		if r.Header.Get("If-None-Match") == `"B1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(doc))
	})
	p := newProxy(t, b.URL)
	auth := http.Header{"Authorization": {"Bearer client"}}

	resp, first := backendtesting.Do(t, http.MethodGet, p.URL+"/openapi/v2", "", auth)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(first), "/apis/cluster.x-k8s.io/v1beta2/machines") {
		t.Fatalf("first GET: %d %s", resp.StatusCode, first)
	}
	etag := resp.Header.Get("ETag")
	if etag == "" || etag == `"B1"` {
		t.Errorf("ETag %q: want the proxy's own", etag)
	}
	resp, second := backendtesting.Do(t, http.MethodGet, p.URL+"/openapi/v2", "", auth)
	if resp.StatusCode != http.StatusOK || string(second) != string(first) || b.Last(t).Header.Get("If-None-Match") != `"B1"` {
		t.Errorf("second GET: %d, backend asked with If-None-Match %q", resp.StatusCode, b.Last(t).Header.Get("If-None-Match"))
	}
	resp, _ = backendtesting.Do(t, http.MethodGet, p.URL+"/openapi/v2", "", http.Header{"Authorization": {"Bearer client"}, "If-None-Match": {etag}})
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match of the proxy's ETag: %d, want 304", resp.StatusCode)
	}
	resp, _ = backendtesting.Do(t, http.MethodGet, p.URL+"/openapi/v2", "", http.Header{"Authorization": {"Bearer someone-else"}})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("another client, refused by the backend: %d, want 403", resp.StatusCode)
	}
	resp, _ = backendtesting.Do(t, http.MethodGet, p.URL+"/openapi/v2", "", http.Header{"Authorization": {"Bearer client"}, "Accept": {"text/html"}})
	if resp.StatusCode != http.StatusNotAcceptable {
		t.Errorf("Accept text/html: %d, want 406", resp.StatusCode)
	}
}
