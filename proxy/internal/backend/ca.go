package backend

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/rest"
)

// transportFor returns client-go's transport for cfg (rest.TransportFor), except that with ca set the
// backend's serving certificate is verified against the bundle ca holds at each TLS handshake instead of
// the CA of cfg: ca is typically a dynamiccertificates.DynamicFileCAContent whose controller reloads the
// file when it changes (k8s.io/apiserver's dynamic certificate controllers), so new connections trust
// the new bundle while open ones (watches, upgraded streams) keep going. cfg's other TLS settings (server
// name, client certificate, next protocols) and its credentials and wrappers are kept.
//
// client-go cannot verify against a changing pool itself, so this builds the *http.Transport client-go
// would (utilnet.SetTransportDefaults over cfg's tls.Config, cfg.Dial) and hands it to rest.TransportFor
// as cfg.Transport, which then adds only the credential wrappers. A client certificate read from a file
// is loaded once (rest.TLSConfigFor), not rotated as client-go's own cache rotates it.
func transportFor(cfg *rest.Config, ca dynamiccertificates.CAContentProvider) (http.RoundTripper, error) {
	if ca == nil {
		return rest.TransportFor(cfg)
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	if tlsConfig == nil {
		// cfg names no TLS setting of its own (client-go would use the system roots).
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	serverName := tlsConfig.ServerName
	if serverName == "" {
		u, err := url.Parse(cfg.Host)
		if err != nil {
			return nil, fmt.Errorf("backend URL %q: %w", cfg.Host, err)
		}
		serverName = u.Hostname()
	}
	tlsConfig.RootCAs = nil
	// Verification is VerifyConnection's, against the bundle current at the handshake; crypto/tls's own
	// would use a fixed RootCAs.
	tlsConfig.InsecureSkipVerify = true //nolint:gosec // verified below
	tlsConfig.VerifyConnection = func(cs tls.ConnectionState) error {
		return verifyServer(ca, serverName, cs)
	}
	dial := cfg.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	transport := utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               cfg.Proxy,
		TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig:     tlsConfig,
		MaxIdleConnsPerHost: 25,
		DialContext:         dial,
	})
	if cfg.Proxy == nil {
		transport.Proxy = http.ProxyFromEnvironment
	}
	wrapped := rest.CopyConfig(cfg)
	wrapped.TLSClientConfig = rest.TLSClientConfig{}
	wrapped.Transport = transport
	return rest.TransportFor(wrapped)
}

// verifyServer verifies the backend's certificate chain in cs for serverName against ca's current bundle,
// as crypto/tls verifies a server (x509.ExtKeyUsageServerAuth, the peer's intermediates).
func verifyServer(ca dynamiccertificates.CAContentProvider, serverName string, cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("the backend presented no certificate")
	}
	opts, ok := ca.VerifyOptions()
	if !ok {
		return fmt.Errorf("no certificate authority loaded from %s", ca.Name())
	}
	opts.DNSName = serverName
	opts.KeyUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	opts.CurrentTime = time.Time{}
	opts.Intermediates = x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
		return fmt.Errorf("the backend's serving certificate (trusted: %s): %w", ca.Name(), err)
	}
	return nil
}
