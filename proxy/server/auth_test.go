package server_test

import (
	"crypto/tls"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"

	"github.com/openshift/hypershift-capi-proxy/proxy/auth"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/backendtesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/routestesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/server"
)

// clientIdentity is what a TLS backend saw of a request: its credentials and identity headers, and the
// common name of the client certificate, if any.
type clientIdentity struct {
	Authorization, Impersonate, RemoteUser, CertCN string
}

// tlsBackend is a TLS backend asking for (not requiring) client certificates, and a rest.Config for it
// whose credentials are a bearer token and a client certificate with the common name "pod".
func tlsBackend(t *testing.T) (*rest.Config, chan clientIdentity) {
	t.Helper()
	seen := make(chan clientIdentity, 10)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := clientIdentity{Authorization: r.Header.Get("Authorization"), Impersonate: r.Header.Get("Impersonate-User"),
			RemoteUser: r.Header.Get("X-Remote-User")}
		if len(r.TLS.PeerCertificates) > 0 {
			// GenerateSelfSignedCertKey names it "<host>@<time>".
			id.CertCN, _, _ = strings.Cut(r.TLS.PeerCertificates[0].Subject.CommonName, "@")
		}
		seen <- id
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"kind":"NamespaceList","apiVersion":"v1","metadata":{},"items":[]}`))
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("pod", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return &rest.Config{Host: srv.URL, BearerToken: "pod-token", TLSClientConfig: rest.TLSClientConfig{
		CAData: caPEM, CertData: certPEM, KeyData: keyPEM,
	}}, seen
}

func proxyFor(t *testing.T, cfg *rest.Config, mode auth.Mode) *httptest.Server {
	t.Helper()
	h, err := server.New(server.Options{Backend: cfg, Routes: routestesting.Table(), AuthMode: mode})
	if err != nil {
		t.Fatal(err)
	}
	p := httptest.NewServer(h)
	t.Cleanup(p.Close)
	return p
}

func TestAuthModes(t *testing.T) {
	cfg, seen := tlsBackend(t)
	clientHeaders := http.Header{
		"Authorization":  {"Bearer client-token"},
		"X-Remote-User":  {"admin"},
		"X-Remote-Group": {"system:masters"},
	}

	t.Run("pass-through carries the client's token, never the proxy's credentials", func(t *testing.T) {
		p := proxyFor(t, cfg, auth.PassThrough)
		h := clientHeaders.Clone()
		h.Set("Impersonate-User", "bob")
		resp, data := backendtesting.Do(t, "GET", p.URL+"/api/v1/namespaces", "", h)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, data)
		}
		want := clientIdentity{Authorization: "Bearer client-token", Impersonate: "bob"}
		if got := <-seen; got != want {
			t.Errorf("backend saw %+v, want %+v", got, want)
		}
		backendtesting.Do(t, "GET", p.URL+"/api/v1/namespaces", "", nil)
		if got := <-seen; got != (clientIdentity{}) {
			t.Errorf("an anonymous client reached the backend as %+v", got)
		}
	})

	t.Run("sidecar carries the pod's credentials, never the client's", func(t *testing.T) {
		p := proxyFor(t, cfg, auth.Sidecar)
		resp, data := backendtesting.Do(t, "GET", p.URL+"/api/v1/namespaces", "", clientHeaders)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, data)
		}
		want := clientIdentity{Authorization: "Bearer pod-token", CertCN: "pod"}
		if got := <-seen; got != want {
			t.Errorf("backend saw %+v, want %+v", got, want)
		}

		h := clientHeaders.Clone()
		h.Set("Impersonate-User", "bob")
		resp, data = backendtesting.Do(t, "GET", p.URL+"/api/v1/namespaces", "", h)
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("impersonating through the sidecar: status %d: %s", resp.StatusCode, data)
		}
		if s := backendtesting.Status(t, data); s.Code != 403 {
			t.Errorf("Status %+v", s)
		}
		select {
		case got := <-seen:
			t.Errorf("the backend got an impersonating request as %+v", got)
		default:
		}
	})
}

func TestSidecarUpgradeCarriesThePodsCredentials(t *testing.T) {
	var got http.Header
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.WriteHeader(http.StatusBadRequest)
	})
	p := proxyFor(t, &rest.Config{Host: b.URL, BearerToken: "pod-token"}, auth.Sidecar)
	backendtesting.Do(t, "POST", p.URL+"/api/v1/namespaces/ns/pods/p/exec?command=sh", "", http.Header{
		"Authorization": {"Bearer client-token"}, "Connection": {"Upgrade"}, "Upgrade": {"SPDY/3.1"},
	})
	if a := got.Values("Authorization"); !reflect.DeepEqual(a, []string{"Bearer pod-token"}) {
		t.Errorf("backend got Authorization %q", a)
	}
}
