// Command proxy is the translating Kubernetes API proxy: it serves the upstream Cluster API groups
// (cluster.x-k8s.io, infrastructure.cluster.x-k8s.io, ...) from a kube-apiserver that stores them in
// HyperShift's private groups (cluster.hypershift.openshift.io, ...), so that unmodified CAPI controllers
// and providers can run against private CRDs. See package server for what it translates.
//
// The backend is given by --kubeconfig (its current context), or by --backend-url and --backend-ca-file.
// --auth-mode says whose credentials reach it (see package auth):
//
//   - pass-through (default): of a kubeconfig only the server address and TLS trust (certificate
//     authority, server name) are used, never its credentials; each client's Authorization header is
//     forwarded unchanged, so the proxy can never grant more than the apiserver grants the client;
//   - sidecar: every request carries the kubeconfig's credentials (without --kubeconfig, the pod's
//     service account), the client's are dropped, impersonation is refused, and --listen must be a
//     loopback address.
//
// With --follow-namespaces (the default) it follows each Namespace's serving-mode label, which the
// migration sets, with a metadata-only informer under its own identity (list and watch on namespaces):
// see package cutover. It acknowledges what it applied with a Lease in its namespace (package
// acknowledge; --acknowledge-lease-namespace and --acknowledge-lease-name, or the downward API's
// $POD_NAMESPACE, $POD_NAME and $POD_UID), for the migration to wait on.
//
// /metrics (Prometheus), /healthz and /readyz (ready while the backend answers) are served in plain HTTP
// on --metrics-listen, a listener of their own: on --listen those paths are the backend's.
//
// It also serves the private CRDs' conversion webhook at /convert (package webhook/conversion), which
// the apiserver calls over TLS when a client asks for another version than the stored one, and converts in process
// where the backend does not serve a version a client asks for (package adapt). Conversions resolve the
// apiVersion of referenced kinds (HyperShift's HostedControlPlane as much as a routed AWSMachine) from the
// contract labels of their CRDs, as CAPI's do, which the proxy watches (metadata only) with its own
// identity: the kubeconfig's credentials, also in pass-through mode, or the pod's service account. That
// identity needs get, list and watch on customresourcedefinitions; /readyz waits for the first list.
//
// With --admission-webhook=MANAGER=URL (repeatable) it serves the admission webhooks of the CAPI
// managers and providers on the private groups (apis/private/webhooks) at /admission/MANAGER/..., and
// forwards each AdmissionReview, in upstream terms, to the manager's webhook server (package
// webhook/admission); install-crds --admission-webhooks installs their configurations pointed at the
// proxy. The install-crds command installs the private CRDs with that webhook pointed at the proxy (see
// installcrds.go).
//
// --webhook-listen adds a TLS listener serving only /convert and the admission webhooks, with the same
// handlers as the API listener (with --webhook-tls-cert-file and --webhook-tls-private-key-file, or the
// API listener's certificate), for the apiserver to reach when --listen is loopback. Serving certificates and the backend's CA file are reloaded when their files
// change (controller-runtime's certwatcher, k8s.io/apiserver's DynamicFileCAContent): new connections use
// the new ones, open connections and their watches go on.
//
// It serves TLS with --tls-cert-file and --tls-private-key-file; --insecure-serve-http serves plain HTTP
// for local debugging only (a client's bearer token then crosses the wire in clear). On SIGTERM or SIGINT
// it stops accepting connections and waits up to --shutdown-timeout for requests in flight (watches are
// cut off when it expires).
//
// Example:
//
//	proxy --kubeconfig=/etc/kubernetes/admin.kubeconfig \
//	  --tls-cert-file=/etc/proxy/tls.crt --tls-private-key-file=/etc/proxy/tls.key --listen=:8443
//	proxy --auth-mode=sidecar --kubeconfig=/etc/capi/kubeconfig --listen=127.0.0.1:8443 \
//	  --tls-cert-file=/etc/proxy/tls.crt --tls-private-key-file=/etc/proxy/tls.key
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"

	"github.com/openshift/hypershift-capi-proxy/proxy/acknowledge"
	"github.com/openshift/hypershift-capi-proxy/proxy/auth"
	"github.com/openshift/hypershift-capi-proxy/proxy/convert"
	"github.com/openshift/hypershift-capi-proxy/proxy/crdcache"
	"github.com/openshift/hypershift-capi-proxy/proxy/cutover"
	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/proxy/options"
	"github.com/openshift/hypershift-capi-proxy/proxy/server"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook/admission"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook/conversion"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

func main() {
	if err := newCommand().Execute(); err != nil {
		klog.ErrorS(err, "Proxy failed")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

// newCommand is the proxy command with its flags (package options) and its subcommands.
func newCommand() *cobra.Command {
	return newCommandFor(options.NewOptions())
}

// newCommandFor is newCommand with its flags bound to o.
func newCommandFor(o *options.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "capi-proxy",
		Short: "Serve the upstream Cluster API groups from HyperShift's private groups",
		Long: `capi-proxy serves the upstream Cluster API groups (cluster.x-k8s.io, ...) from a kube-apiserver that
stores them in HyperShift's private groups (cluster.hypershift.openshift.io, ...), and the private CRDs'
conversion webhook (/convert). Serving certificates and the backend's CA file are reloaded when they change.

Commands:
  install-crds   Install the private CRDs with their conversion webhook pointed at this proxy, and the
                 admission webhook configurations (capi-proxy install-crds --help)
  migrate        Move hosted-control-plane namespaces between the upstream and the private groups
                 (capi-proxy migrate --help)`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := completeAndValidate(o); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			return run(ctx, o)
		},
	}
	// Flags in sections, as Kubernetes components print their --help (k8s.io/component-base/cli/flag).
	var fss cliflag.NamedFlagSets
	o.AddFlags(&fss)
	for _, name := range fss.Order {
		cmd.Flags().AddFlagSet(fss.FlagSets[name])
	}
	// The sections are the root command's; install-crds keeps cobra's own help.
	defaultHelp, defaultUsage := cmd.HelpFunc(), cmd.UsageFunc()
	cliflag.SetUsageAndHelpFunc(cmd, fss, 0)
	sectionedHelp, sectionedUsage := cmd.HelpFunc(), cmd.UsageFunc()
	cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		if c == cmd {
			sectionedHelp(c, args)
			return
		}
		defaultHelp(c, args)
	})
	cmd.SetUsageFunc(func(c *cobra.Command) error {
		if c == cmd {
			return sectionedUsage(c)
		}
		return defaultUsage(c)
	})
	cmd.CompletionOptions.DisableDefaultCmd = true
	cmd.AddCommand(newInstallCRDsCommand())
	cmd.AddCommand(newMigrateCommand())
	return cmd
}

// completeAndValidate completes o and returns every error of its flags at once (one error's own message
// when there is one).
func completeAndValidate(o *options.Options) error {
	if err := o.Complete(); err != nil {
		return err
	}
	return utilerrors.NewAggregate(o.Validate())
}

// run serves until ctx ends, then shuts down.
func run(ctx context.Context, o *options.Options) error {
	setMemoryLimit()
	p, err := newProxy(ctx, o)
	if err != nil {
		return err
	}
	return p.serve(ctx)
}

// proxy is a proxy set up to serve: its handler on the API listener, and the diagnostics and webhook
// listeners (nil when their flags are empty).
type proxy struct {
	o           *options.Options
	backend     *rest.Config
	api         *http.Server
	diagnostics *diagnostics
	webhooks    *webhookServer
	// synced report whether the caches have their first lists (releaseStartupMemory waits for them).
	synced []func() bool
	// acks publishes the Namespaces the proxy applied (nil: none); its Lease is deleted on shutdown.
	acks *acknowledge.Publisher
}

// newProxy builds the handler chain (server.New) and its parts: the backend, the Namespaces the proxy
// follows, the converter with its CRD cache, the conversion and admission webhooks; and the listeners'
// servers. It starts the caches and the certificate watchers, which stop with ctx.
func newProxy(ctx context.Context, o *options.Options) (*proxy, error) {
	backend, err := backendConfig(o)
	if err != nil {
		return nil, err
	}
	ca, err := backendCA(ctx, backend)
	if err != nil {
		return nil, err
	}
	p := &proxy{o: o, backend: backend}
	table := translate.NewTable(routes.Routes)
	m := metrics.New()
	opts := server.Options{
		Backend:                backend,
		BackendCA:              ca,
		PageOutExecutable:      o.PageOutExecutable,
		GzipLoopback:           o.GzipLoopback,
		AuthMode:               auth.Mode(o.AuthMode),
		IdentityHeaderPrefixes: o.IdentityHeaderPrefixes,
		Routes:                 table,
		DialTimeout:            o.DialTimeout,
		ResponseHeaderTimeout:  o.ResponseHeaderTimeout,
		Metrics:                m,
		HoldRetryAfter:         o.HoldRetryAfter,
	}
	if o.FollowNamespaces {
		// The proxy's own identity (the kubeconfig's credentials, in either authentication mode) watches
		// the Namespaces' metadata.
		opts.Namespaces = cutover.NewNamespaces(m)
		if p.acks, err = acknowledger(o, backend); err != nil {
			return nil, err
		}
		if p.acks != nil {
			opts.Namespaces.Acknowledge(p.acks)
			go p.acks.Run(ctx)
		}
		if err := cutover.WatchNamespaces(ctx, rest.CopyConfig(backend), opts.Namespaces); err != nil {
			return nil, err
		}
		p.synced = append(p.synced, opts.Namespaces.Synced)
	}
	converter, err := convert.New(table, routes.APIVersionGetterSetters)
	if err != nil {
		return nil, err
	}
	crdMeta, err := crdCache(ctx, o, backend)
	if err != nil {
		return nil, err
	}
	if crdMeta != nil {
		converter.ResolveWithCRDs(crdMeta)
		p.synced = append(p.synced, crdMeta.HasSynced)
	}
	opts.Converter = converter
	// One conversion webhook and one admission handler, on one mux, serve both listeners: one set of
	// turns and one memory budget each (package webhook).
	adm, err := admissionWebhooks(o, table, m)
	if err != nil {
		return nil, err
	}
	opts.Webhooks = webhook.Mux(conversion.New(converter, conversion.Options{Metrics: m, MaxHeldBytes: o.ConversionMaxHeldBytes}), adm)
	handler, err := server.New(opts)
	if err != nil {
		return nil, err
	}
	if p.diagnostics, err = newDiagnostics(o, opts, m, crdMeta); err != nil {
		return nil, err
	}
	if p.webhooks, err = newWebhookServer(ctx, o, opts.Webhooks); err != nil {
		return nil, err
	}
	p.api = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       90 * time.Second,
		// No ReadTimeout or WriteTimeout: watches and upgraded connections are long-running, and Go's
		// HTTP/1 server cancels a request's context when a read deadline passes. The webhooks served
		// here bound their own requests (webhook.ReadTimeout, webhook.WriteTimeout), as kube-apiserver's
		// secure serving sets neither and bounds its requests by their handlers.
		ErrorLog: klog.NewStandardLogger("WARNING"),
	}
	if !o.InsecureServeHTTP {
		if p.api.TLSConfig, err = servingTLS(ctx, "api", o.TLSCertFile, o.TLSKeyFile); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// serve listens on --listen and serves every listener until one fails or ctx ends; then it shuts down:
// /readyz fails at once, and requests in flight get --shutdown-timeout.
func (p *proxy) serve(ctx context.Context) error {
	o := p.o
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.Listen, err)
	}

	// Once the caches have their first lists, the memory that starting took goes back to the system.
	go releaseStartupMemory(ctx, o.PageOutExecutable, p.synced...)

	served, diagnosticsServed, webhooksServed := make(chan error, 1), make(chan error, 1), make(chan error, 1)
	if p.diagnostics != nil {
		go func() { diagnosticsServed <- p.diagnostics.serve() }()
	}
	if p.webhooks != nil {
		go func() { webhooksServed <- p.webhooks.serve() }()
	}
	go func() {
		if o.InsecureServeHTTP {
			klog.InfoS("Serving plain HTTP: for local debugging only", "address", ln.Addr().String(), "backend", p.backend.Host, "authMode", o.AuthMode)
			served <- p.api.Serve(ln)
		} else {
			klog.InfoS("Serving TLS", "address", ln.Addr().String(), "backend", p.backend.Host, "authMode", o.AuthMode)
			served <- p.api.ServeTLS(ln, "", "") // the certificate is TLSConfig's, reloaded as it changes
		}
	}()

	select {
	case err := <-served:
		return err
	case err := <-diagnosticsServed:
		return fmt.Errorf("serving diagnostics: %w", err)
	case err := <-webhooksServed:
		return fmt.Errorf("serving webhooks: %w", err)
	case <-ctx.Done():
	}
	klog.InfoS("Shutting down", "timeout", o.ShutdownTimeout)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), o.ShutdownTimeout)
	defer cancel()
	if p.diagnostics != nil {
		// Not ready from now on; metrics stay until the requests in flight are done.
		p.diagnostics.shuttingDown.Store(true)
		defer p.diagnostics.close()
	}
	if p.webhooks != nil {
		// The apiserver retries a conversion elsewhere or fails it; the requests in flight finish first.
		defer func() { _ = p.webhooks.srv.Shutdown(shutdownCtx) }()
	}
	if err := p.api.Shutdown(shutdownCtx); err != nil {
		klog.InfoS("Closing connections still open", "err", err)
		_ = p.api.Close()
	}
	if p.acks != nil {
		// After the requests in flight: until then the proxy serves what its Lease acknowledged.
		deleteCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := p.acks.Delete(deleteCtx); err != nil {
			klog.ErrorS(err, "Deleting the proxy's acknowledging Lease failed: migrations wait their whole grace period until it expires or its pod is gone")
		}
		cancel()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// acknowledger returns the Publisher of the proxy's acknowledging Lease (package acknowledge), written
// with the proxy's own identity, or nil, logged, without --acknowledge-lease-namespace and
// --acknowledge-lease-name (nor $POD_NAMESPACE and $POD_NAME).
func acknowledger(o *options.Options, backend *rest.Config) (*acknowledge.Publisher, error) {
	if o.AcknowledgeLeaseNamespace == "" || o.AcknowledgeLeaseName == "" {
		klog.InfoS("No acknowledging Lease (no --acknowledge-lease-namespace and --acknowledge-lease-name, nor $POD_NAMESPACE and $POD_NAME): a migration cannot see this proxy; while it serves, run migrations with --wait-for-acknowledgements=false, or one may go on before this proxy follows a label change",
			"namespace", o.AcknowledgeLeaseNamespace, "name", o.AcknowledgeLeaseName)
		return nil, nil
	}
	client, err := coordinationv1client.NewForConfig(rest.CopyConfig(backend))
	if err != nil {
		return nil, fmt.Errorf("acknowledging lease: %w", err)
	}
	return acknowledge.New(client, acknowledge.Options{Namespace: o.AcknowledgeLeaseNamespace, Name: o.AcknowledgeLeaseName,
		PodName: o.PodName, PodUID: types.UID(o.PodUID)})
}

// backendConfig returns the backend's rest.Config: --kubeconfig's, --backend-url with --backend-ca-file,
// or without either the pod's service account. In pass-through mode server.New uses only its address and
// TLS trust.
func backendConfig(o *options.Options) (*rest.Config, error) {
	if o.Kubeconfig == "" && o.BackendURL == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no --kubeconfig, and the pod's service account: %w", err)
		}
		return cfg, nil
	}
	if o.Kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading --kubeconfig %s: %w", o.Kubeconfig, err)
		}
		return cfg, nil
	}
	return &rest.Config{Host: o.BackendURL, TLSClientConfig: rest.TLSClientConfig{CAFile: o.BackendCAFile}}, nil
}

// crdCache starts the metadata cache of the backend's CRDs that resolves the apiVersion of referenced
// kinds for conversions (convert.Converter.APIVersion), with the proxy's own identity: the kubeconfig's
// credentials, or the pod's service account without --kubeconfig. With --backend-url the proxy has no
// identity, and it returns nil: routed kinds are then resolved from the route table, and converting an
// object that references another kind to v1beta1 fails.
func crdCache(ctx context.Context, o *options.Options, backend *rest.Config) (*crdcache.Cache, error) {
	if o.BackendURL != "" {
		klog.InfoS("No identity of the proxy's own (--backend-url): conversions resolve referenced kinds from the route table only")
		return nil, nil
	}
	c, err := crdcache.New(backend)
	if err != nil {
		return nil, err
	}
	c.Start(ctx)
	return c, nil
}

// admissionWebhooks returns the handler of the private groups' admission webhooks, or nil without
// --admission-webhook: it forwards to the servers of o.AdmissionServers, trusting
// --admission-webhook-ca-file (or the system roots).
func admissionWebhooks(o *options.Options, table *translate.Table, m *metrics.Metrics) (http.Handler, error) {
	servers := o.AdmissionServers()
	if len(servers) == 0 {
		return nil, nil
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.AdmissionWebhookCAFile != "" {
		data, err := os.ReadFile(o.AdmissionWebhookCAFile)
		if err != nil {
			return nil, fmt.Errorf("--admission-webhook-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("--admission-webhook-ca-file %s: no PEM certificate", o.AdmissionWebhookCAFile)
		}
		tlsConfig.RootCAs = pool
	}
	transport := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}
	return admission.New(table, admission.Options{Servers: servers, Transport: transport, Metrics: m}), nil
}
