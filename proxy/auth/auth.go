// Package auth decides who the proxy's requests reach the backend as. The proxy never authenticates or
// authorizes anyone itself: kube-apiserver does, for every request, so the proxy can only ever pass on
// an identity, never widen one. What it must guarantee is that no client can make the backend believe it
// is someone it is not. Two modes:
//
//   - PassThrough (the default): the backend connection carries no credentials of the proxy's own (only
//     the backend's address and TLS trust are used, see BackendConfig); each request carries the client's
//     own Authorization header. A client without one reaches the backend as system:anonymous. Inbound
//     Impersonate-* headers are forwarded unchanged: the backend authorizes the impersonate verb for the
//     client's own identity, as it would without the proxy. Client certificates cannot be carried (the
//     proxy terminates TLS and does not assert identities as a front proxy), so a client that
//     authenticates with a certificate alone reaches the backend as system:anonymous.
//   - Sidecar (the HyperShift design: the proxy runs in the controller's pod): the proxy listens on
//     loopback only (RequireLoopback) and talks to the backend with the pod's own kubeconfig, whatever
//     authentication it uses (bearer token or token file, client certificate, exec plugin). The client's
//     Authorization header is dropped, so is a bearer token it offers as a websocket subprotocol
//     ("base64url.bearer.authorization.k8s.io.<token>", which kube-apiserver's websocket
//     ProtocolAuthenticator reads), and a request with an Impersonate-* header is refused with 403:
//     forwarded, it would borrow the pod's impersonation rights; dropped, the client would act as the pod
//     rather than as the identity it named.
//
// In both modes the front-proxy identity headers (X-Remote-User, X-Remote-Group, X-Remote-Extra-*,
// X-Remote-Uid, or whatever prefixes the backend's --requestheader-* flags name) are removed from every
// request: the proxy never presents a front-proxy client certificate, so the backend would ignore them,
// but a client's claim must never travel further in case it one day does.
package auth

import (
	"fmt"
	"net"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/openshift/hypershift-capi-proxy/proxy/status"
)

// Mode is how the proxy authenticates to the backend.
type Mode string

const (
	// PassThrough forwards each client's credentials (its Authorization header) unchanged.
	PassThrough Mode = "pass-through"
	// Sidecar uses the pod's own credentials for every request and listens on loopback only.
	Sidecar Mode = "sidecar"
)

// Modes lists the valid modes.
var Modes = []Mode{PassThrough, Sidecar}

// ParseMode parses a --auth-mode value.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown authentication mode %q, want one of %v", s, Modes)
}

// DefaultIdentityHeaderPrefixes are the header name prefixes removed from every inbound request: those of
// kube-apiserver's front-proxy (request header) authentication as kubeadm and most installers configure it
// (--requestheader-username-headers=X-Remote-User, --requestheader-group-headers=X-Remote-Group,
// --requestheader-extra-headers-prefix=X-Remote-Extra-, --requestheader-uid-headers=X-Remote-Uid).
var DefaultIdentityHeaderPrefixes = []string{"X-Remote-"}

// impersonatePrefix starts every impersonation header (Impersonate-User, Impersonate-Group,
// Impersonate-Uid, Impersonate-Extra-<key>), as k8s.io/api/authentication/v1 names them.
const impersonatePrefix = "Impersonate-"

// BackendConfig returns the rest.Config the proxy connects to the backend with in mode m: for PassThrough
// a copy holding only the backend's address and TLS trust (rest.AnonymousClientConfig drops the bearer
// token, token file, basic auth, client certificate, exec and auth-provider plugins, impersonation and
// wrapping transports); for Sidecar a full copy, credentials included.
func BackendConfig(m Mode, cfg *rest.Config) *rest.Config {
	if m == Sidecar {
		return rest.CopyConfig(cfg)
	}
	return rest.AnonymousClientConfig(cfg)
}

// RequireLoopback fails unless the listen address addr ("host:port") names a loopback IP or "localhost".
// An empty host (all interfaces) fails.
func RequireLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("listen address %q is not a loopback address: the %s mode serves the pod's own credentials and must only be reachable from inside the pod", addr, Sidecar)
}

// WithHeaderPolicy applies mode m's rules to the headers of every request before next sees it: it removes
// every header whose name starts with one of identityPrefixes (compared case-insensitively), and in
// Sidecar mode removes Authorization and a bearer token offered as a websocket subprotocol and refuses a request with an Impersonate-* header with a 403 Status.
func WithHeaderPolicy(m Mode, identityPrefixes []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Keys are compared and deleted as they are: net/http canonicalizes the headers it parses, but a
		// handler in front of this one might not have.
		for name := range r.Header {
			if hasPrefixFold(name, identityPrefixes...) {
				delete(r.Header, name)
			}
		}
		if m == Sidecar {
			for name := range r.Header {
				if hasPrefixFold(name, impersonatePrefix) {
					status.Write(w, forbidden(fmt.Sprintf(
						"impersonation is not allowed through the proxy in %s mode, which acts with the pod's own credentials: remove the %s header", Sidecar, name)))
					return
				}
			}
			for name := range r.Header {
				switch {
				case strings.EqualFold(name, "Authorization"):
					delete(r.Header, name)
				case strings.EqualFold(name, webSocketProtocolHeader):
					if protocols := withoutBearerProtocols(r.Header[name]); len(protocols) > 0 {
						r.Header[name] = []string{strings.Join(protocols, ", ")}
					} else {
						delete(r.Header, name)
					}
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// webSocketProtocolHeader lists a websocket client's subprotocols; bearerProtocolPrefix starts the one
// that carries a bearer token, as k8s.io/apiserver/pkg/authentication/request/websocket reads it.
const (
	webSocketProtocolHeader = "Sec-WebSocket-Protocol"
	bearerProtocolPrefix    = "base64url.bearer.authorization.k8s.io."
)

// withoutBearerProtocols returns the subprotocols of the Sec-WebSocket-Protocol values but those that carry
// a bearer token.
func withoutBearerProtocols(values []string) []string {
	var kept []string
	for _, v := range values {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" && !strings.HasPrefix(p, bearerProtocolPrefix) {
				kept = append(kept, p)
			}
		}
	}
	return kept
}

// forbidden is a 403 Forbidden error with message.
func forbidden(message string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: message,
	}}
}

func hasPrefixFold(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if p != "" && len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) {
			return true
		}
	}
	return false
}
