package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/backendtesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/routestesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/server"
)

// TestBackendCAReloaded: with Options.BackendCA, a new backend connection trusts the CA bundle as its
// controller last loaded it: a backend that moved to a certificate of another CA is refused until the
// bundle on disk names that CA, and trusted from then on, with no new handler.
func TestBackendCAReloaded(t *testing.T) {
	r := backendtesting.NewRotatingCA(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"NamespaceList","apiVersion":"v1","metadata":{},"items":[]}`))
	}))
	// A CA in the rest.Config that trusts neither: BackendCA replaces it.
	h, err := server.New(server.Options{
		Backend:   &rest.Config{Host: r.Server.URL, TLSClientConfig: rest.TLSClientConfig{CAData: []byte{}}},
		BackendCA: r.CA,
		Routes:    routestesting.Table(),
	})
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewServer(h)
	t.Cleanup(proxy.Close)
	get := func() int {
		t.Helper()
		resp, err := http.Get(proxy.URL + "/api/v1/namespaces")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Logf("%d: %s", resp.StatusCode, body)
		}
		return resp.StatusCode
	}

	if code := get(); code != http.StatusOK {
		t.Fatalf("trusting the backend's CA: %d, want 200", code)
	}
	r.Serve(1)
	if code := get(); code == http.StatusOK {
		t.Fatal("a backend certificate of a CA the bundle does not name was trusted")
	}
	r.Trust(t, 1)
	if code := get(); code != http.StatusOK {
		t.Fatalf("after the CA bundle was rotated on disk: %d, want 200", code)
	}
}
