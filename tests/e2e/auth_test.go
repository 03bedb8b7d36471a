package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// raw sends one request with cfg's transport (TLS trust and credentials) plus header, and returns the
// status code and body.
func raw(t *testing.T, cfg *rest.Config, method, path, body string, header http.Header) (int, []byte) {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, cfg.Host+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return resp.StatusCode, data
}

// identity is what the apiserver authenticated a request as (a SelfSubjectReview), or the status code
// and message of the refusal.
type identity struct {
	Code     int
	User     string
	Groups   []string
	Refusal  string
	Anyone   bool // system:anonymous
	Unauthed bool // 401
}

func whoami(t *testing.T, cfg *rest.Config, header http.Header) identity {
	t.Helper()
	code, data := raw(t, cfg, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
		`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`, header)
	id := identity{Code: code}
	if code != http.StatusCreated {
		var s metav1.Status
		_ = json.Unmarshal(data, &s)
		id.Refusal = s.Message
		id.Anyone = strings.Contains(s.Message, `"system:anonymous"`)
		id.Unauthed = code == http.StatusUnauthorized
		return id
	}
	var review authenticationv1.SelfSubjectReview
	if err := json.Unmarshal(data, &review); err != nil {
		t.Fatalf("SelfSubjectReview: %s: %v", data, err)
	}
	id.User, id.Groups = review.Status.UserInfo.Username, review.Status.UserInfo.Groups
	return id
}

func withToken(cfg *rest.Config, token string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.BearerToken = token
	return c
}

// frontProxyClaim is what a client would send to pass itself off as an administrator, were the proxy a
// front proxy the apiserver trusted.
var frontProxyClaim = http.Header{
	"X-Remote-User":         {"admin"},
	"X-Remote-Group":        {"system:masters"},
	"X-Remote-Extra-Scopes": {"everything"},
	"X-Remote-Uid":          {"0"},
}

// TestPassThroughIdentity: through the proxy in pass-through mode every client is exactly who it is
// directly: its own token, no token (anonymous), a bad token (401), front-proxy headers (ignored), and
// impersonation (authorized by the apiserver for the client itself).
func TestPassThroughIdentity(t *testing.T) {
	direct, viaProxy := env.DirectConfig(""), proxy.Config("")
	for _, tc := range []struct {
		name   string
		token  string
		header http.Header
		want   identity
	}{
		{"alice", env.UserToken, nil, identity{Code: 201, User: "alice"}},
		{"alice claiming to be admin in front-proxy headers", env.UserToken, frontProxyClaim, identity{Code: 201, User: "alice"}},
		{"no token", "", nil, identity{Code: 403, Anyone: true}},
		{"no token, front-proxy headers", "", frontProxyClaim, identity{Code: 403, Anyone: true}},
		{"a bad token", "not-a-token", nil, identity{Code: 401, Unauthed: true}},
		{"alice impersonating admin", env.UserToken, http.Header{"Impersonate-User": {"admin"}}, identity{Code: 403}},
		{"alice impersonating system:masters", env.UserToken, http.Header{"Impersonate-User": {"alice"}, "Impersonate-Group": {"system:masters"}}, identity{Code: 403}},
		{"admin impersonating alice", env.AdminToken, http.Header{"Impersonate-User": {"alice"}}, identity{Code: 201, User: "alice"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := whoami(t, withToken(viaProxy, tc.token), tc.header)
			want := whoami(t, withToken(direct, tc.token), tc.header)
			if got.Code != want.Code || got.User != want.User || got.Anyone != want.Anyone || got.Unauthed != want.Unauthed {
				t.Errorf("through the proxy %+v, directly %+v", got, want)
			}
			if got.Code != tc.want.Code || got.User != tc.want.User || got.Anyone != tc.want.Anyone || got.Unauthed != tc.want.Unauthed {
				t.Errorf("through the proxy %+v, want %+v", got, tc.want)
			}
			for _, g := range got.Groups {
				if g == "system:masters" {
					t.Errorf("authenticated into system:masters: %+v", got)
				}
			}
		})
	}
}

// TestSidecarIdentity: a proxy in sidecar mode (with alice's kubeconfig standing for the pod's) acts as
// the pod whatever the client sends, refuses impersonation, and refuses to listen off loopback.
func TestSidecarIdentity(t *testing.T) {
	sidecar, err := env.StartProxy(context.Background(), "--auth-mode=sidecar", "--kubeconfig="+env.UserKubeconfig, "--follow-namespaces=false")
	if err != nil {
		t.Fatal(err)
	}
	defer sidecar.Stop()
	viaSidecar := sidecar.Config("")
	for _, tc := range []struct {
		name   string
		token  string
		header http.Header
		want   identity
	}{
		{"no token", "", nil, identity{Code: 201, User: "alice"}},
		{"the admin's token", env.AdminToken, nil, identity{Code: 201, User: "alice"}},
		{"a bad token", "not-a-token", nil, identity{Code: 201, User: "alice"}},
		{"front-proxy headers", "", frontProxyClaim, identity{Code: 201, User: "alice"}},
		{"impersonating", env.AdminToken, http.Header{"Impersonate-User": {"admin"}}, identity{Code: 403}},
		{"impersonating a group", "", http.Header{"Impersonate-User": {"alice"}, "Impersonate-Group": {"system:masters"}}, identity{Code: 403}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := whoami(t, withToken(viaSidecar, tc.token), tc.header)
			if got.Code != tc.want.Code || got.User != tc.want.User {
				t.Errorf("through the sidecar %+v, want %+v", got, tc.want)
			}
			if got.Code == 403 && !strings.Contains(got.Refusal, "impersonation is not allowed through the proxy in sidecar mode") {
				t.Errorf("refused by the backend, not by the proxy: %q", got.Refusal)
			}
		})
	}

	t.Run("refuses a listen address off loopback", func(t *testing.T) {
		_, err := env.StartProxy(context.Background(), "--auth-mode=sidecar", "--kubeconfig="+env.UserKubeconfig, "--listen=0.0.0.0:0")
		if err == nil || !strings.Contains(err.Error(), "not a loopback address") {
			t.Errorf("started: %v", err)
		}
	})
}
