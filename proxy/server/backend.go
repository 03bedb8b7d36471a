package server

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"k8s.io/client-go/rest"
)

// backend is where and how the proxy connects to kube-apiserver.
type backend struct {
	// url is the backend's base URL: scheme, host and an optional path prefix.
	url *url.URL
	// transport is client-go's transport (HTTP/2 when the backend offers it) without credentials.
	transport http.RoundTripper
	// upgradeTransport speaks HTTP/1.1 only, as connection upgrades (SPDY, WebSocket) need.
	upgradeTransport http.RoundTripper
}

// newBackend builds the transports from the backend's address and TLS trust only: rest.AnonymousClientConfig
// drops every credential (token, client certificate, exec and auth-provider plugins, impersonation,
// wrapping transports), so the proxy can never authenticate as anything but the client it forwards.
func newBackend(cfg *rest.Config, dialTimeout time.Duration) (*backend, error) {
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("backend URL: %w", err)
	}
	anon := rest.AnonymousClientConfig(cfg)
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	anon.Dial = dialer.DialContext

	transport, err := rest.TransportFor(anon)
	if err != nil {
		return nil, fmt.Errorf("backend transport: %w", err)
	}
	tlsConfig, err := rest.TLSConfigFor(anon)
	if err != nil {
		return nil, fmt.Errorf("backend TLS: %w", err)
	}
	if tlsConfig != nil {
		tlsConfig = tlsConfig.Clone()
		tlsConfig.NextProtos = []string{"http/1.1"}
	}
	proxy := http.ProxyFromEnvironment
	if cfg.Proxy != nil {
		proxy = cfg.Proxy
	}
	upgradeTransport := &http.Transport{
		Proxy:               proxy,
		DialContext:         dialer.DialContext,
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: 10 * time.Second,
		// A non-nil empty map disables HTTP/2.
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	return &backend{url: base, transport: transport, upgradeTransport: upgradeTransport}, nil
}
