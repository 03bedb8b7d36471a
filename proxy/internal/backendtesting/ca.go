package backendtesting

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	certutil "k8s.io/client-go/util/cert"
)

// RotatingCA is a TLS backend on 127.0.0.1 that serves one of two self-signed certificates (0 or 1, each its
// own CA), and a CA bundle file its clients trust through a dynamiccertificates provider, for tests of a
// CA rotated on disk. It starts serving certificate 0 with bundle 0 on disk and loaded.
type RotatingCA struct {
	// Server is the backend, closed when the test ends.
	Server *httptest.Server
	// CA loads the bundle file; it is not run: Trust loads it again, as its controller's file watch would.
	CA *dynamiccertificates.DynamicFileCAContent

	certs   [2]tls.Certificate
	bundles [2][]byte
	file    string
	current atomic.Int32
}

// NewRotatingCA starts a RotatingCA serving handler.
func NewRotatingCA(t testing.TB, handler http.Handler) *RotatingCA {
	t.Helper()
	r := &RotatingCA{file: filepath.Join(t.TempDir(), "ca.crt")}
	for i := range r.certs {
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.certs[i], err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
			t.Fatal(err)
		}
		r.bundles[i] = certPEM // the serving certificate and the CA that signed it
	}
	r.Server = httptest.NewUnstartedServer(handler)
	// GetConfigForClient, unlike GetCertificate, is asked even when httptest fills in Certificates.
	r.Server.TLS = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return &tls.Config{Certificates: []tls.Certificate{r.certs[r.current.Load()]}}, nil
	}}
	r.Server.StartTLS()
	t.Cleanup(r.Server.Close)

	if err := os.WriteFile(r.file, r.bundles[0], 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	if r.CA, err = dynamiccertificates.NewDynamicCAContentFromFile("backend-ca", r.file); err != nil {
		t.Fatal(err)
	}
	return r
}

// Serve makes the backend present certificate i (0 or 1) from its next connection on, and closes the
// connections it has.
func (r *RotatingCA) Serve(i int) {
	r.current.Store(int32(i))
	r.Server.CloseClientConnections()
}

// Trust writes bundle i (0 or 1, the CA of certificate i) to the bundle file and has CA load it, as its
// controller's file watch does on a change.
func (r *RotatingCA) Trust(t testing.TB, i int) {
	t.Helper()
	if err := os.WriteFile(r.file, r.bundles[i], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.CA.RunOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
}
