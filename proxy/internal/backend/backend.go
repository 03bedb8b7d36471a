// Package backend is where and how the proxy connects to kube-apiserver (server.Options.Backend): the
// backend's base URL and client-go's transports to it, with the credentials the authentication mode
// allows (package auth), and, with a CA content provider (server.Options.BackendCA), its serving
// certificate verified against the provider's current bundle at each TLS handshake (ca.go); the wait
// for a response's headers bounded (WithHeaderTimeout, timeout.go), and the backend's readiness (Ready).
package backend

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"k8s.io/apimachinery/pkg/util/httpstream" //nolint:staticcheck // k8s.io/streaming, its new home, has no release before Kubernetes 0.36, and the tree must build at CAPI v1.13's pins too
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/rest"

	"github.com/openshift/hypershift-capi-proxy/proxy/auth"
)

// Backend is where and how the proxy connects to kube-apiserver.
type Backend struct {
	// URL is the backend's base URL: scheme, host and an optional path prefix.
	URL *url.URL
	// Transport is client-go's transport (HTTP/2 when the backend offers it), with the credentials the
	// authentication mode allows (none in pass-through mode); requests asking for a connection upgrade (a
	// watch over a websocket) take UpgradeTransport.
	Transport http.RoundTripper
	// UpgradeTransport is the same on HTTP/1.1 only, as connection upgrades (SPDY, WebSocket) need.
	UpgradeTransport http.RoundTripper
}

// New builds the transports from the backend config as auth.BackendConfig reduces it for the mode:
// in pass-through mode only the address and TLS trust are kept, so the proxy can never authenticate as
// anything but the client it forwards.
// With ca set, the backend's certificate is verified against ca's current bundle (transportFor).
func New(cfg *rest.Config, mode auth.Mode, dialTimeout time.Duration, ca dynamiccertificates.CAContentProvider) (*Backend, error) {
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("backend URL: %w", err)
	}
	cfg = auth.BackendConfig(mode, cfg)
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	cfg.Dial = dialer.DialContext

	transport, err := transportFor(cfg, ca)
	if err != nil {
		return nil, fmt.Errorf("backend transport: %w", err)
	}
	// Offering only http/1.1 in ALPN makes client-go build an HTTP/1.1 transport (k8s.io/apimachinery's
	// SetTransportDefaults configures HTTP/2 only when NextProtos allows it).
	upgradeCfg := rest.CopyConfig(cfg)
	upgradeCfg.NextProtos = []string{"http/1.1"}
	upgradeTransport, err := transportFor(upgradeCfg, ca)
	if err != nil {
		return nil, fmt.Errorf("backend transport for upgrades: %w", err)
	}
	return &Backend{URL: base, Transport: byUpgrade{plain: transport, upgrade: upgradeTransport}, UpgradeTransport: upgradeTransport}, nil
}

// byUpgrade sends a request whose Connection header names upgrade (httpstream.IsUpgradeRequest) over
// upgrade, which speaks HTTP/1.1 (HTTP/2 has no connection upgrade), and any other over plain.
type byUpgrade struct {
	plain, upgrade http.RoundTripper
}

func (t byUpgrade) RoundTrip(req *http.Request) (*http.Response, error) {
	if httpstream.IsUpgradeRequest(req) {
		return t.upgrade.RoundTrip(req)
	}
	return t.plain.RoundTrip(req)
}
