package server_test

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/routestesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/server"
)

// TestBackendCAReloaded: with Options.BackendCA, a new backend connection trusts the CA bundle as its
// controller last loaded it: a backend that moved to a certificate of another CA is refused until the
// bundle on disk names that CA, and trusted from then on, with no new handler.
func TestBackendCAReloaded(t *testing.T) {
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
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"NamespaceList","apiVersion":"v1","metadata":{},"items":[]}`))
	}))
	// GetConfigForClient, unlike GetCertificate, is asked even when httptest fills in Certificates.
	backend.TLS = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return &tls.Config{Certificates: []tls.Certificate{certs[current.Load()]}}, nil
	}}
	backend.StartTLS()
	t.Cleanup(backend.Close)

	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, bundles[0], 0o600); err != nil {
		t.Fatal(err)
	}
	ca, err := dynamiccertificates.NewDynamicCAContentFromFile("backend-ca", caFile)
	if err != nil {
		t.Fatal(err)
	}
	// A CA in the rest.Config that trusts neither: BackendCA replaces it.
	h, err := server.New(server.Options{
		Backend:   &rest.Config{Host: backend.URL, TLSClientConfig: rest.TLSClientConfig{CAData: bundles[1][:0:0]}},
		BackendCA: ca,
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
	current.Store(1)
	backend.CloseClientConnections()
	if code := get(); code == http.StatusOK {
		t.Fatal("a backend certificate of a CA the bundle does not name was trusted")
	}
	if err := os.WriteFile(caFile, bundles[1], 0o600); err != nil {
		t.Fatal(err)
	}
	// What the controller's file watch does on a change.
	if err := ca.RunOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if code := get(); code != http.StatusOK {
		t.Fatalf("after the CA bundle was rotated on disk: %d, want 200", code)
	}
}
