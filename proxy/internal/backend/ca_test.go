package backend_test

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"

	"github.com/openshift/hypershift-capi-proxy/proxy/auth"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/backend"
)

// TestCAReloaded: with a CA content provider, New's transports trust on each new connection the bundle
// as the provider last loaded it, not the rest.Config's CA: a backend that moved to a certificate of
// another CA is refused until the bundle on disk names that CA, and trusted from then on. (The proxy's
// own test of server.Options.BackendCA, in package server, does the same through the handler.)
func TestCAReloaded(t *testing.T) {
	certs := make([]tls.Certificate, 2)
	bundles := make([][]byte, 2)
	for i := range certs {
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if certs[i], err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
			t.Fatal(err)
		}
		bundles[i] = certPEM // the serving certificate and the CA that signed it
	}
	var current atomic.Int32
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	// GetConfigForClient, unlike GetCertificate, is asked even when httptest fills in Certificates.
	server.TLS = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return &tls.Config{Certificates: []tls.Certificate{certs[current.Load()]}}, nil
	}}
	server.StartTLS()
	t.Cleanup(server.Close)

	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, bundles[0], 0o600); err != nil {
		t.Fatal(err)
	}
	ca, err := dynamiccertificates.NewDynamicCAContentFromFile("backend-ca", caFile)
	if err != nil {
		t.Fatal(err)
	}
	// A CA in the rest.Config that trusts neither: ca replaces it.
	cfg := &rest.Config{Host: server.URL, TLSClientConfig: rest.TLSClientConfig{CAData: bundles[1][:0:0]}}
	b, err := backend.New(cfg, auth.PassThrough, 5*time.Second, ca)
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
		current.Store(0)
		server.CloseClientConnections()
		if err := os.WriteFile(caFile, bundles[0], 0o600); err != nil {
			t.Fatal(err)
		}
		if err := ca.RunOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := get(transport); err != nil {
			t.Fatalf("%s, trusting the backend's CA: %v", name, err)
		}
		current.Store(1)
		server.CloseClientConnections()
		if err := get(transport); err == nil {
			t.Fatalf("%s: a backend certificate of a CA the bundle does not name was trusted", name)
		}
		if err := os.WriteFile(caFile, bundles[1], 0o600); err != nil {
			t.Fatal(err)
		}
		// What the controller's file watch does on a change.
		if err := ca.RunOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := get(transport); err != nil {
			t.Fatalf("%s, after the CA bundle was rotated on disk: %v", name, err)
		}
	}
}
