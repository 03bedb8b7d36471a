package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/httpstream" //nolint:staticcheck // k8s.io/streaming, its new home, has no release before Kubernetes 0.36, and the tree must build at CAPI v1.13's pins too
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/rest"

	"github.com/openshift/hypershift-capi-proxy/proxy/auth"
	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
)

// backend is where and how the proxy connects to kube-apiserver.
type backend struct {
	// url is the backend's base URL: scheme, host and an optional path prefix.
	url *url.URL
	// transport is client-go's transport (HTTP/2 when the backend offers it), with the credentials the
	// authentication mode allows (none in pass-through mode); requests asking for a connection upgrade (a
	// watch over a websocket) take upgradeTransport.
	transport http.RoundTripper
	// upgradeTransport is the same on HTTP/1.1 only, as connection upgrades (SPDY, WebSocket) need.
	upgradeTransport http.RoundTripper
}

// newBackend builds the transports from the backend config as auth.BackendConfig reduces it for the mode:
// in pass-through mode only the address and TLS trust are kept, so the proxy can never authenticate as
// anything but the client it forwards.
// With ca set, the backend's certificate is verified against ca's current bundle (transportFor).
func newBackend(cfg *rest.Config, mode auth.Mode, dialTimeout time.Duration, ca dynamiccertificates.CAContentProvider) (*backend, error) {
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
	return &backend{url: base, transport: byUpgrade{plain: transport, upgrade: upgradeTransport}, upgradeTransport: upgradeTransport}, nil
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

// errHeaderTimeout cancels a request whose response headers did not arrive in time.
var errHeaderTimeout = errors.New("no response headers from the backend in time")

// headerTimeout bounds the wait for the backend's response headers of requests that are not long-running
// (classify.Request.LongRunning): a backend that accepts connections but does not answer must not hold a
// client, and the proxy's goroutines, forever. A watch is exempt (kube-apiserver sends its headers at
// once, but events may be minutes away), as are logs, exec, attach, port-forward and proxy requests. On
// expiry the request is cancelled and answered with 504 Timeout. The response body is not bounded.
type headerTimeout struct {
	next    http.RoundTripper
	timeout time.Duration
}

func (t *headerTimeout) RoundTrip(req *http.Request) (*http.Response, error) {
	info, ok := classify.FromContext(req.Context())
	if t.timeout <= 0 || !ok || info.LongRunning {
		return t.next.RoundTrip(req)
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	timer := time.AfterFunc(t.timeout, func() { cancel(errHeaderTimeout) })
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if !timer.Stop() {
		// The timer fired: whatever RoundTrip returned is the cancellation.
		if err == nil {
			_ = resp.Body.Close()
		}
		cancel(nil)
		return nil, apierrors.NewTimeoutError(fmt.Sprintf("the backend kube-apiserver sent no response headers within %s", t.timeout), 0)
	}
	if err != nil {
		cancel(nil)
		return nil, err
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// The body is the upgraded connection (an io.ReadWriteCloser): leave it as it is; the context
		// ends with the request's.
		return resp, nil
	}
	// The body is read after RoundTrip returns: keep the context alive until it is closed.
	body := resp.Body
	resp.Body = &readCloser{Reader: body, close: func() error {
		defer cancel(nil)
		return body.Close()
	}}
	return resp, nil
}
