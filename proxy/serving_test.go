package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestValidateWebhook(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    options
		ok   bool
	}{
		{"none", options{}, true},
		{"sharing the API certificate", options{webhookListen: ":9444", tlsCertFile: "c", tlsKeyFile: "k"}, true},
		{"its own certificate", options{webhookListen: ":9444", webhookTLSCertFile: "c", webhookTLSKeyFile: "k", insecureServeHTTP: true}, true},
		{"no certificate", options{webhookListen: ":9444", insecureServeHTTP: true}, false},
		{"half a certificate", options{webhookListen: ":9444", webhookTLSCertFile: "c", tlsCertFile: "c", tlsKeyFile: "k"}, false},
		{"a certificate without a listener", options{webhookTLSCertFile: "c", webhookTLSKeyFile: "k"}, false},
		{"a negative budget", options{conversionMaxHeldBytes: -1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.o.validateWebhook(); (err == nil) != tc.ok {
				t.Errorf("validateWebhook() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

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
