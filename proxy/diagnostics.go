package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/proxy/server"
)

// defaultMetricsListen is --metrics-listen's default: every interface, so that kubelet probes and
// Prometheus reach it on the pod's IP, on a port that the CAPI managers and providers the proxy runs
// beside in sidecar mode (same network namespace) do not use for their own metrics, probes or webhooks
// (8080, 8443, 9440, 9443).
const defaultMetricsListen = ":9446"

// diagnostics serves /metrics, /healthz and /readyz on a listener of its own.
type diagnostics struct {
	srv *http.Server
	ln  net.Listener
	// shuttingDown makes /readyz fail once the proxy has begun to shut down.
	shuttingDown atomic.Bool
}

// diagnostics listens on --metrics-listen (nil if disabled): /metrics serves m; /healthz answers while
// the process serves; /readyz while the backend answers (server.BackendReady) and the proxy is not
// shutting down. Both health endpoints take controller-runtime's healthz forms: /readyz/<check>, and
// ?verbose for a per-check report.
func (o *options) diagnostics(opts server.Options, m *metrics.Metrics) (*diagnostics, error) {
	if o.metricsListen == "" || o.metricsListen == "0" {
		return nil, nil
	}
	backendReady, err := server.BackendReady(opts)
	if err != nil {
		return nil, err
	}
	d := &diagnostics{}
	ready := &healthz.Handler{Checks: map[string]healthz.Checker{
		"backend": backendReady,
		"shutdown": func(*http.Request) error {
			if d.shuttingDown.Load() {
				return errors.New("shutting down")
			}
			return nil
		},
	}}
	if opts.Namespaces != nil {
		ready.Checks["namespaces"] = opts.Namespaces.Ready
	}
	live := &healthz.Handler{Checks: map[string]healthz.Checker{"ping": healthz.Ping}}

	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	for path, h := range map[string]http.Handler{"/healthz": live, "/readyz": ready} {
		mux.Handle(path, http.StripPrefix(path, h))
		mux.Handle(path+"/", http.StripPrefix(path, h))
	}
	d.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          klog.NewStandardLogger("WARNING"),
	}
	if d.ln, err = net.Listen("tcp", o.metricsListen); err != nil {
		return nil, fmt.Errorf("listening on --metrics-listen %s: %w", o.metricsListen, err)
	}
	return d, nil
}

func (d *diagnostics) serve() error {
	klog.InfoS("Serving /metrics, /healthz and /readyz", "address", d.ln.Addr().String())
	if err := d.srv.Serve(d.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (d *diagnostics) close() { _ = d.srv.Close() }
