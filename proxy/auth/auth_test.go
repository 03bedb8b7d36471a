package auth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

func TestParseMode(t *testing.T) {
	for _, s := range []string{"pass-through", "sidecar"} {
		if m, err := ParseMode(s); err != nil || string(m) != s {
			t.Errorf("ParseMode(%q) = %q, %v", s, m, err)
		}
	}
	for _, s := range []string{"", "Sidecar", "passthrough", "none"} {
		if _, err := ParseMode(s); err == nil {
			t.Errorf("ParseMode(%q) succeeded", s)
		}
	}
}

func TestRequireLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:8443": true, "127.1.2.3:1": true, "[::1]:8443": true, "localhost:8443": true,
		":8443": false, "0.0.0.0:8443": false, "[::]:8443": false, "10.0.0.1:8443": false, "example.com:8443": false,
		"127.0.0.1": false, "": false,
	} {
		if err := RequireLoopback(addr); (err == nil) != ok {
			t.Errorf("RequireLoopback(%q) = %v, want ok=%v", addr, err, ok)
		}
	}
}

func TestBackendConfig(t *testing.T) {
	cfg := &rest.Config{Host: "https://a:6443", BearerToken: "t", BearerTokenFile: "f", Username: "u", Password: "p",
		Impersonate:     rest.ImpersonationConfig{UserName: "bob"},
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca"), CertData: []byte("c"), KeyData: []byte("k"), ServerName: "a"},
		ExecProvider:    nil,
	}
	anon := BackendConfig(PassThrough, cfg)
	if anon.Host != cfg.Host || string(anon.CAData) != "ca" || anon.ServerName != "a" {
		t.Errorf("pass-through lost the address or trust: %+v", anon)
	}
	if anon.BearerToken != "" || anon.BearerTokenFile != "" || anon.Username != "" || anon.Password != "" ||
		anon.Impersonate.UserName != "" || anon.CertData != nil || anon.KeyData != nil {
		t.Errorf("pass-through kept credentials: %+v", anon)
	}
	own := BackendConfig(Sidecar, cfg)
	if own == cfg || own.BearerToken != "t" || string(own.CertData) != "c" || own.Impersonate.UserName != "bob" {
		t.Errorf("sidecar did not copy the credentials: %+v", own)
	}
}

// seen is what WithHeaderPolicy passed on.
func policy(t *testing.T, m Mode, header http.Header) (*httptest.ResponseRecorder, http.Header) {
	t.Helper()
	var got http.Header
	h := WithHeaderPolicy(m, DefaultIdentityHeaderPrefixes, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
	}))
	r := httptest.NewRequest("GET", "/api/v1/namespaces", nil)
	r.Header = header
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec, got
}

func TestHeaderPolicy(t *testing.T) {
	identity := http.Header{
		"X-Remote-User":         {"admin"},
		"X-Remote-Group":        {"system:masters"},
		"X-Remote-Extra-Scopes": {"all"},
		"X-Remote-Uid":          {"0"},
		"x-remote-user":         {"non-canonical"},
	}
	t.Run("pass-through forwards credentials and impersonation, never identity headers", func(t *testing.T) {
		h := identity.Clone()
		h.Set("Authorization", "Bearer client")
		h.Set("Impersonate-User", "bob")
		h.Add("Impersonate-Group", "g")
		h.Set("Accept", "application/json")
		rec, got := policy(t, PassThrough, h)
		want := http.Header{"Authorization": {"Bearer client"}, "Impersonate-User": {"bob"}, "Impersonate-Group": {"g"},
			"Accept": {"application/json"}}
		if rec.Code != 200 || !reflect.DeepEqual(got, want) {
			t.Errorf("passed on %v (code %d), want %v", got, rec.Code, want)
		}
	})
	t.Run("sidecar drops the client's credentials and identity headers", func(t *testing.T) {
		h := identity.Clone()
		h.Set("Authorization", "Bearer client")
		h.Set("Accept", "application/json")
		rec, got := policy(t, Sidecar, h)
		if want := (http.Header{"Accept": {"application/json"}}); rec.Code != 200 || !reflect.DeepEqual(got, want) {
			t.Errorf("passed on %v (code %d), want %v", got, rec.Code, want)
		}
	})
	t.Run("sidecar drops a bearer token offered as a websocket subprotocol", func(t *testing.T) {
		for _, tc := range []struct {
			protocols []string
			want      http.Header
		}{
			{[]string{"base64url.bearer.authorization.k8s.io.dG9rZW4, base64.binary.k8s.io"}, http.Header{"Sec-Websocket-Protocol": {"base64.binary.k8s.io"}}},
			{[]string{"v4.channel.k8s.io", "base64url.bearer.authorization.k8s.io.dG9rZW4"}, http.Header{"Sec-Websocket-Protocol": {"v4.channel.k8s.io"}}},
			{[]string{"base64url.bearer.authorization.k8s.io.dG9rZW4"}, http.Header{}},
		} {
			_, got := policy(t, Sidecar, http.Header{"Sec-Websocket-Protocol": tc.protocols})
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%q: passed on %v, want %v", tc.protocols, got, tc.want)
			}
			if _, got := policy(t, PassThrough, http.Header{"Sec-Websocket-Protocol": tc.protocols}); !reflect.DeepEqual(got["Sec-Websocket-Protocol"], tc.protocols) {
				t.Errorf("%q: pass-through passed on %v", tc.protocols, got)
			}
		}
	})
	for _, name := range []string{"Impersonate-User", "Impersonate-Group", "Impersonate-Uid", "Impersonate-Extra-Scopes", "impersonate-user"} {
		t.Run("sidecar refuses "+name, func(t *testing.T) {
			rec, got := policy(t, Sidecar, http.Header{name: {"bob"}})
			if got != nil {
				t.Fatalf("passed on %v", got)
			}
			var s metav1.Status
			if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil || rec.Code != 403 || s.Code != 403 ||
				s.Reason != metav1.StatusReasonForbidden || s.Kind != "Status" {
				t.Errorf("got %d %s (%v), want a 403 Status", rec.Code, rec.Body, err)
			}
		})
	}
	t.Run("more prefixes", func(t *testing.T) {
		var got http.Header
		h := WithHeaderPolicy(PassThrough, []string{"X-Remote-", "X-Front-"}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got = r.Header
		}))
		r := httptest.NewRequest("GET", "/", nil)
		r.Header = http.Header{"X-Front-User": {"a"}, "X-Remote-User": {"b"}, "X-Other": {"c"}}
		h.ServeHTTP(httptest.NewRecorder(), r)
		if want := (http.Header{"X-Other": {"c"}}); !reflect.DeepEqual(got, want) {
			t.Errorf("passed on %v, want %v", got, want)
		}
	})
}
