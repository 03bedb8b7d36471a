package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"

	"github.com/openshift/hypershift-capi-proxy/proxy/options"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook"
)

func TestFileSnapshot(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(cert, "cert 1")
	write(key, "key 1")
	s := &fileSnapshot{paths: []string{cert, key}}
	step := func(what string, wantChanged, wantErr bool) {
		t.Helper()
		changed, err := s.refresh()
		if changed != wantChanged || (err != nil) != wantErr {
			t.Fatalf("%s: refresh() = %v, %v; want changed %v, an error %v", what, changed, err, wantChanged, wantErr)
		}
	}
	step("first reading", true, false)
	step("nothing written", false, false)
	write(key, "key 1")
	step("the same bytes written again", false, false)
	write(key, "key 2")
	step("the key rewritten", true, false)
	step("read again", false, false)

	// A rotation caught half way: the certificate is new, the key cannot be read. The change is reported
	// once both can be read, even though the certificate is unchanged since the failed reading.
	write(cert, "cert 3")
	if err := os.Remove(key); err != nil {
		t.Fatal(err)
	}
	step("the key missing", false, true)
	write(key, "key 2")
	step("the key back", true, false)

	s.forget()
	step("after forget", true, false)
}

func TestPollServingCertificate(t *testing.T) {
	dir := t.TempDir()
	cert := filepath.Join(dir, "tls.crt")
	if err := os.WriteFile(cert, []byte("cert 1"), 0o600); err != nil {
		t.Fatal(err)
	}
	files := &fileSnapshot{paths: []string{cert}}
	if _, err := files.refresh(); err != nil {
		t.Fatal(err)
	}
	reloads := make(chan struct{}, 10)
	fail := make(chan bool, 10)
	reload := func() error {
		reloads <- struct{}{}
		select {
		case f := <-fail:
			if f {
				return errors.New("the key does not match the certificate")
			}
		default:
		}
		return nil
	}
	go pollServingCertificate(t.Context(), "test", time.Millisecond, files, reload)

	waitReload := func(what string) {
		t.Helper()
		select {
		case <-reloads:
		case <-time.After(time.Minute):
			t.Fatalf("%s: no reload", what)
		}
	}
	// A failed reload is tried again at a later poll, with no further change to the files.
	fail <- true
	if err := os.WriteFile(cert, []byte("cert 2"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitReload("the certificate changed")
	waitReload("the reload failed")
}

// TestWebhookServerBounds: the webhook listener serves the handlers it is given (the API listener's
// own, so that both share their bounds) and bounds every request with the webhooks' timeouts.
func TestWebhookServerBounds(t *testing.T) {
	dir := t.TempDir()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := errors.Join(os.WriteFile(cert, certPEM, 0o600), os.WriteFile(key, keyPEM, 0o600)); err != nil {
		t.Fatal(err)
	}
	var conversion, admission http.Handler = http.NewServeMux(), http.NewServeMux()
	o := options.NewOptions()
	o.WebhookListen, o.TLSCertFile, o.TLSKeyFile = "127.0.0.1:0", cert, key
	ws, err := newWebhookServer(t.Context(), o, webhook.Mux(conversion, admission))
	if err != nil {
		t.Fatal(err)
	}
	defer ws.ln.Close()
	srv := ws.srv
	if srv.ReadTimeout != webhook.ReadTimeout || srv.WriteTimeout != webhook.WriteTimeout || srv.ReadHeaderTimeout == 0 || srv.IdleTimeout == 0 {
		t.Errorf("timeouts: read %v, write %v, headers %v, idle %v", srv.ReadTimeout, srv.WriteTimeout, srv.ReadHeaderTimeout, srv.IdleTimeout)
	}
	mux := srv.Handler.(*http.ServeMux)
	for path, want := range map[string]http.Handler{"/convert": conversion, "/admission/cluster-api/x": admission} {
		if got, _ := mux.Handler(httptest.NewRequest(http.MethodPost, path, nil)); got != want {
			t.Errorf("%s is served by %v, not the handler given", path, got)
		}
	}
}
