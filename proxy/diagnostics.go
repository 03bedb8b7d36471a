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
	"github.com/openshift/hypershift-capi-proxy/proxy/cutover"
	"github.com/openshift/hypershift-capi-proxy/proxy/health"
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

// newDiagnostics listens on --metrics-listen (nil if disabled: empty once completed): /metrics serves m
// (and /debug/pprof with --profiling); /healthz and /readyz run the checks package health names (ping;
// backend, shutdown, and namespaces with opts.Namespaces and crds when not nil), with
// controller-runtime's healthz handlers: /readyz/<check> runs one, ?verbose reports each.
func newDiagnostics(o *options.Options, opts server.Options, m *metrics.Metrics, crds *crdcache.Cache) (*diagnostics, error) {
	if o.MetricsListen == "" {
		return nil, nil
	}
	backendReady, err := server.BackendReady(opts)
	if err != nil {
		return nil, err
	}
	d := &diagnostics{}
	ready := &healthz.Handler{Checks: readyChecks(backendReady, d.shuttingDown.Load, opts.Namespaces, crds)}
	live := &healthz.Handler{Checks: map[string]healthz.Checker{health.Ping: healthz.Ping}}

	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	if o.Profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	for path, h := range map[string]http.Handler{health.Healthz: live, health.Readyz: ready} {
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

// readyChecks are /readyz's checks: the backend answers (backendReady), the proxy is not shutting down,
// and the caches have their first lists: namespaces and crds, when not nil.
func readyChecks(backendReady healthz.Checker, shuttingDown func() bool, namespaces *cutover.Namespaces, crds *crdcache.Cache) map[string]healthz.Checker {
	checks := map[string]healthz.Checker{
		health.Backend: backendReady,
		health.Shutdown: func(*http.Request) error {
			if shuttingDown() {
				return errors.New("shutting down")
			}
			return nil
		},
	}
	if namespaces != nil {
		checks[health.Namespaces] = namespaces.Ready
	}
	if crds != nil {
		checks[health.CRDs] = crds.Ready
	}
	return checks
}

func (d *diagnostics) serve() error {
	klog.InfoS("Serving /metrics, /healthz and /readyz", "address", d.ln.Addr().String())
	if err := d.srv.Serve(d.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (d *diagnostics) close() { _ = d.srv.Close() }
