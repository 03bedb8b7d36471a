package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/openshift/hypershift-capi-proxy/proxy/crdcache"
	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/proxy/options"
	"github.com/openshift/hypershift-capi-proxy/proxy/server"
)

// diagnostics serves /metrics, /healthz and /readyz on a listener of its own.
type diagnostics struct {
	srv *http.Server
	ln  net.Listener
	// shuttingDown makes /readyz fail once the proxy has begun to shut down.
	shuttingDown atomic.Bool
}

// newDiagnostics listens on --metrics-listen (nil if disabled: empty once completed): /metrics serves m (and /debug/pprof with
// --profiling); /healthz answers while
// the process serves; /readyz while the backend answers (server.BackendReady) and the proxy is not
// shutting down, and crds (when not nil) has synced. Both health endpoints take controller-runtime's healthz forms: /readyz/<check>, and
// ?verbose for a per-check report.
func newDiagnostics(o *options.Options, opts server.Options, m *metrics.Metrics, crds *crdcache.Cache) (*diagnostics, error) {
	if o.MetricsListen == "" {
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
	if crds != nil {
		ready.Checks["crds"] = crds.Ready
	}
	live := &healthz.Handler{Checks: map[string]healthz.Checker{"ping": healthz.Ping}}

	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	if o.Profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	for path, h := range map[string]http.Handler{"/healthz": live, "/readyz": ready} {
		mux.Handle(path, http.StripPrefix(path, h))
		mux.Handle(path+"/", http.StripPrefix(path, h))
	}
	d.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          klog.NewStandardLogger("WARNING"),
	}
	if d.ln, err = net.Listen("tcp", o.MetricsListen); err != nil {
		return nil, fmt.Errorf("listening on --metrics-listen %s: %w", o.MetricsListen, err)
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
