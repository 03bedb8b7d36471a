package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"

	"github.com/openshift/hypershift-capi-proxy/proxy/options"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook/admission"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook/conversion"
)

// Serving certificates are read again when their files change: fsnotify tells at once, and a poll every
// certPollInterval catches what fsnotify misses (a Secret volume's atomic symlink swap, some network
// volumes). controller-runtime's certwatcher polls as often, but parses the pair each time
// (tls.X509KeyPair: PEM, ASN.1, the key's checks), which on an idle proxy is the only work between two
// scrapes, and brought back about 0.8 MiB of the binary (crypto, ASN.1, big numbers) that
// pageout.Executable had released. So its own poll runs once a day (certwatcherPollInterval), and
// pollServingCertificate compares the files' bytes instead, asking it to read them only when they
// changed.
const (
	certPollInterval        = 10 * time.Second
	certwatcherPollInterval = 24 * time.Hour
)

// servingTLS returns the TLS configuration of a listener serving certFile and keyFile, and starts
// controller-runtime's certwatcher on them: the files are read again when they change (fsnotify, and a
// poll of their bytes every certPollInterval), and each new TLS handshake gets the certificate current
// then. Connections already open keep theirs, so a rotation never cuts a watch. The watcher stops with
// ctx.
func servingTLS(ctx context.Context, name, certFile, keyFile string) (*tls.Config, error) {
	// Read before the watcher does: a change in between is then a difference the first poll sees.
	files := &fileSnapshot{paths: []string{certFile, keyFile}}
	if _, err := files.refresh(); err != nil {
		return nil, fmt.Errorf("%s serving certificate: %w", name, err)
	}
	w, err := certwatcher.New(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("%s serving certificate: %w", name, err)
	}
	w = w.WithWatchInterval(certwatcherPollInterval)
	go func() {
		if err := w.Start(ctx); err != nil {
			klog.ErrorS(err, "Watching the serving certificate failed: rotations are not picked up", "listener", name, "certFile", certFile)
		}
	}()
	go pollServingCertificate(ctx, name, certPollInterval, files, w.ReadCertificate)
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: w.GetCertificate,
		// HTTP/2 first, as kube-apiserver offers it; watches multiplex over one connection.
		NextProtos: []string{"h2", "http/1.1"},
	}, nil
}

// pollServingCertificate reads files every interval and calls reload when their bytes changed, until ctx
// ends. A reload that fails (a pair caught half written) is tried again at the next poll.
func pollServingCertificate(ctx context.Context, name string, every time.Duration, files *fileSnapshot, reload func() error) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		changed, err := files.refresh()
		if err != nil {
			klog.ErrorS(err, "Reading the serving certificate's files failed", "listener", name)
			continue
		}
		if !changed {
			continue
		}
		if err := reload(); err != nil {
			klog.ErrorS(err, "Loading the changed serving certificate failed; trying again at the next poll", "listener", name)
			files.forget()
		}
	}
}

// fileSnapshot holds the bytes of a set of files as last read, to tell whether any of them changed.
type fileSnapshot struct {
	paths    []string
	contents [][]byte // by index of paths; nil until read
}

// refresh reads every file and reports whether any differs from the last reading, which it then
// replaces. On an error (a file that cannot be read) it keeps the last reading whole, so that a change
// is still reported once the files can be read.
func (s *fileSnapshot) refresh() (bool, error) {
	read := make([][]byte, len(s.paths))
	for i, p := range s.paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return false, err
		}
		read[i] = b
	}
	changed := len(s.contents) != len(read)
	for i := 0; !changed && i < len(read); i++ {
		changed = !bytes.Equal(read[i], s.contents[i])
	}
	s.contents = read
	return changed, nil
}

// forget drops the last reading: the next refresh reports a change.
func (s *fileSnapshot) forget() { s.contents = nil }

// backendCA returns the dynamic certificate authority of the backend when its trust comes from a file
// (--backend-ca-file, a kubeconfig's certificate-authority, the pod's service account CA) and starts
// its controller (k8s.io/apiserver's DynamicFileCAContent: fsnotify plus a resync every minute), so
// that a CA bundle rotated on disk is trusted by new backend connections without a restart. It returns
// nil when the CA is inline (certificate-authority-data) or absent (the system roots): those do not
// change while the process runs.
func backendCA(ctx context.Context, cfg *rest.Config) (dynamiccertificates.CAContentProvider, error) {
	if cfg.TLSClientConfig.CAFile == "" || len(cfg.TLSClientConfig.CAData) > 0 || cfg.TLSClientConfig.Insecure {
		return nil, nil
	}
	ca, err := dynamiccertificates.NewDynamicCAContentFromFile("backend-ca", cfg.TLSClientConfig.CAFile)
	if err != nil {
		return nil, fmt.Errorf("backend certificate authority: %w", err)
	}
	go ca.Run(ctx, 1)
	return ca, nil
}

// webhookServer serves the private CRDs' conversion webhook (conversion.Path, package conversion) and,
// with --admission-webhook, the admission webhooks (admission.PathPrefix) on --webhook-listen over
// TLS: the apiserver must reach them from outside the pod, while in sidecar mode the API listener is
// confined to loopback. Any other path is 404. It serves the mux the API listener serves its webhooks
// with (webhook.Mux: one conversion.Handler, one admission.Handler), so that the two listeners share
// their turns and budgets; unlike the API listener, it neither classifies nor counts its requests in
// capi_proxy_requests_total (the webhooks' own metrics count them).
//
// Only the apiserver calls it, with small requests it sends at once, so its http.Server bounds every
// request: headers within 10 s (the apiserver sends them at once; kube-apiserver's own secure serving
// waits 32 s, k8s.io/apiserver/pkg/server/secure_serving.go, for any client), the whole request within
// webhook.ReadTimeout and its answer within webhook.WriteTimeout (which the handlers also set on their
// request, for the API listener), an idle connection for 90 s and headers of up to 1 MiB, as
// kube-apiserver's.
type webhookServer struct {
	srv *http.Server
	ln  net.Listener
}

// newWebhookServer listens on --webhook-listen, serving webhooks (the proxy's webhook.Mux), or returns
// nil when it is empty.
func newWebhookServer(ctx context.Context, o *options.Options, webhooks http.Handler) (*webhookServer, error) {
	if o.WebhookListen == "" {
		return nil, nil
	}
	certFile, keyFile := o.WebhookServingFiles()
	tlsConfig, err := servingTLS(ctx, "webhook", certFile, keyFile)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", o.WebhookListen)
	if err != nil {
		return nil, fmt.Errorf("listening on --webhook-listen %s: %w", o.WebhookListen, err)
	}
	return &webhookServer{
		ln: ln,
		srv: &http.Server{
			Handler:           webhooks,
			TLSConfig:         tlsConfig,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       webhook.ReadTimeout,
			WriteTimeout:      webhook.WriteTimeout,
			IdleTimeout:       90 * time.Second,
			MaxHeaderBytes:    1 << 20,
			ErrorLog:          klog.NewStandardLogger("WARNING"),
		},
	}, nil
}

func (w *webhookServer) serve() error {
	klog.InfoS("Serving the webhooks", "address", w.ln.Addr().String(), "conversion", conversion.Path, "admission", admission.PathPrefix)
	if err := w.srv.ServeTLS(w.ln, "", ""); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
