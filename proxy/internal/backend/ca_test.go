package backend_test

import (
	"net/http"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/openshift/hypershift-capi-proxy/proxy/auth"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/backend"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/backendtesting"
)

// TestCAReloaded: with a CA content provider, New's transports trust on each new connection the bundle
// as the provider last loaded it, not the rest.Config's CA: a backend that moved to a certificate of
// another CA is refused until the bundle on disk names that CA, and trusted from then on. (The proxy's
// own test of server.Options.BackendCA, in package server, does the same through the handler.)
func TestCAReloaded(t *testing.T) {
	r := backendtesting.NewRotatingCA(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	// A CA in the rest.Config that trusts neither: r.CA replaces it.
	cfg := &rest.Config{Host: r.Server.URL, TLSClientConfig: rest.TLSClientConfig{CAData: []byte{}}}
	b, err := backend.New(cfg, auth.PassThrough, 5*time.Second, r.CA)
	if err != nil {
		t.Fatal(err)
	}
	get := func(transport http.RoundTripper) error {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, b.URL.String()+"/readyz", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := transport.RoundTrip(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}

	for name, transport := range map[string]http.RoundTripper{"Transport": b.Transport, "UpgradeTransport": b.UpgradeTransport} {
		r.Serve(0)
		r.Trust(t, 0)
		if err := get(transport); err != nil {
			t.Fatalf("%s, trusting the backend's CA: %v", name, err)
		}
		r.Serve(1)
		if err := get(transport); err == nil {
			t.Fatalf("%s: a backend certificate of a CA the bundle does not name was trusted", name)
		}
		r.Trust(t, 1)
		if err := get(transport); err != nil {
			t.Fatalf("%s, after the CA bundle was rotated on disk: %v", name, err)
		}
	}
}
