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
// see package server's cutover.go.
//
// /metrics (Prometheus), /healthz and /readyz (ready while the backend answers) are served in plain HTTP
// on --metrics-listen, a listener of their own: on --listen those paths are the backend's.
//
// It also serves the private CRDs' conversion webhook at /convert (package webhook), which the apiserver
// calls over TLS when a client asks for another version than the stored one, and converts in process
// where the backend does not serve a version a client asks for (package adapt). Conversions resolve the
// apiVersion of referenced kinds (HyperShift's HostedControlPlane as much as a routed AWSMachine) from the
// contract labels of their CRDs, as CAPI's do, which the proxy watches (metadata only) with its own
// identity: the kubeconfig's credentials, also in pass-through mode, or the pod's service account. That
// identity needs get, list and watch on customresourcedefinitions; /readyz waits for the first list.
//
// With --admission-webhook=MANAGER=URL (repeatable) it serves the admission webhooks of the CAPI
// managers and providers on the private groups (apis/private/webhooks) at /admission/MANAGER/..., and
// forwards each AdmissionReview, in upstream terms, to the manager's webhook server (package webhook's
// Admission); install-crds --admission-webhooks installs their configurations pointed at the proxy. The install-crds command
// installs the private CRDs with that webhook pointed at the proxy (see installcrds.go).
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
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/migration/serving"
	"github.com/openshift/hypershift-capi-proxy/proxy/auth"
	"github.com/openshift/hypershift-capi-proxy/proxy/convert"
	"github.com/openshift/hypershift-capi-proxy/proxy/crdcache"
	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/proxy/server"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

// options are the command line flags.
type options struct {
	listen            string
	kubeconfig        string
	backendURL        string
	backendCAFile     string
	tlsCertFile       string
	tlsKeyFile        string
	insecureServeHTTP bool
	dialTimeout       time.Duration
	shutdownTimeout   time.Duration

	authMode               string
	identityHeaderPrefixes []string
	metricsListen          string
	responseHeaderTimeout  time.Duration

	// followNamespaces makes the proxy follow the Namespaces' serving mode label (server.Namespaces).
	followNamespaces bool
	holdRetryAfter   time.Duration

	webhookListen      string
	webhookTLSCertFile string
	webhookTLSKeyFile  string
	// conversionMaxHeldBytes is webhook.Options.MaxHeldBytes.
	conversionMaxHeldBytes int64

	admissionWebhooks      []string
	admissionWebhookCAFile string
	profiling              bool
	pageOutExecutable      bool
	gzipLoopback           bool
}

func main() {
	if err := newCommand().Execute(); err != nil {
		klog.ErrorS(err, "Proxy failed")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}

func newCommand() *cobra.Command {
	o := &options{}
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
			if err := o.validate(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			return o.run(ctx)
		},
	}
	// Flags in sections, as Kubernetes components print their --help (k8s.io/component-base/cli/flag).
	var fss cliflag.NamedFlagSets
	fs := fss.FlagSet("serving")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8443", "Address to serve on (host:port).")
	fs.StringVar(&o.tlsCertFile, "tls-cert-file", "", "PEM serving certificate (chain) of the proxy. Reloaded when the file changes: new connections get the new certificate, open ones keep theirs.")
	fs.StringVar(&o.tlsKeyFile, "tls-private-key-file", "", "PEM private key of --tls-cert-file.")
	fs.StringVar(&o.webhookListen, "webhook-listen", "", "Address (host:port) of a TLS listener serving only the webhooks (conversion at /convert, admission with --admission-webhook), for the apiserver to reach when --listen is loopback (sidecar mode). Empty: none (they stay served on --listen).")
	fs.StringVar(&o.webhookTLSCertFile, "webhook-tls-cert-file", "", "PEM serving certificate (chain) of --webhook-listen, reloaded when it changes; empty: --tls-cert-file's.")
	fs.StringVar(&o.webhookTLSKeyFile, "webhook-tls-private-key-file", "", "PEM private key of --webhook-tls-cert-file.")
	fs.Int64Var(&o.conversionMaxHeldBytes, "conversion-webhook-max-held-bytes", webhook.DefaultMaxHeldBytes, fmt.Sprintf("Bytes of ConversionReviews the conversion webhook holds at once, on both listeners, as they are read, wait for their turn and are converted; a review beyond it is answered 429. The proxy's memory grows by about 3 times this at most. Below %d (one review's bound), the largest reviews are refused (413); 0 means the default.", webhook.MaxBodyBytes))
	fs.BoolVar(&o.insecureServeHTTP, "insecure-serve-http", false, "Serve plain HTTP instead of TLS. For local debugging only: bearer tokens cross the wire in clear.")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 30*time.Second, "How long to wait for requests in flight on SIGTERM before closing their connections.")

	fs = fss.FlagSet("backend")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Kubeconfig of the backend kube-apiserver. Its server address and TLS trust serve every request; its credentials serve the proxy's own reads (the Namespaces it follows, the CRDs whose contract labels it resolves) and, in sidecar mode, every request too; in pass-through mode clients' requests carry their own. In sidecar mode, without it and --backend-url: the pod's service account. Exclusive with --backend-url.")
	fs.StringVar(&o.backendURL, "backend-url", "", "URL of the backend kube-apiserver, e.g. https://10.0.0.1:6443, without credentials: the proxy then reads nothing on its own (needs --follow-namespaces=false, and resolves referenced kinds from the route table only). Exclusive with --kubeconfig.")
	fs.StringVar(&o.backendCAFile, "backend-ca-file", "", "PEM bundle of the certificate authorities that sign the backend's serving certificate (with --backend-url; the system roots if empty). Reloaded when the file changes, as a kubeconfig's certificate-authority file is.")
	fs.DurationVar(&o.dialTimeout, "backend-dial-timeout", server.DefaultDialTimeout, "Timeout to connect to the backend; an unreachable backend is answered with 503.")
	fs.DurationVar(&o.responseHeaderTimeout, "backend-response-header-timeout", server.DefaultResponseHeaderTimeout, "How long to wait for the backend's response headers of a request that is not long-running (watches, logs, exec, ... are exempt) before answering 504.")

	fs = fss.FlagSet("authentication")
	fs.StringVar(&o.authMode, "auth-mode", string(auth.PassThrough), "Whose credentials reach the backend: pass-through (each client's own) or sidecar (the kubeconfig's, or the pod's service account without --kubeconfig; needs a loopback --listen).")
	fs.StringSliceVar(&o.identityHeaderPrefixes, "identity-header-prefixes", auth.DefaultIdentityHeaderPrefixes, "Prefixes of front-proxy identity headers removed from every request; must cover the backend's --requestheader-username-headers, --requestheader-group-headers, --requestheader-uid-headers and --requestheader-extra-headers-prefix.")

	fs = fss.FlagSet("migration")
	fs.BoolVar(&o.followNamespaces, "follow-namespaces", true, "Follow each Namespace's "+serving.Label+" label (the migration's per-namespace cut-over): serve its CAPI kinds from the upstream or private groups and hold their writes as it says. The identity of --kubeconfig (or the pod's service account) needs list and watch on namespaces; /readyz fails until the first list is in. Disable only where no namespace is ever migrated.")
	fs.DurationVar(&o.holdRetryAfter, "hold-retry-after", server.DefaultHoldRetryAfter, "Retry-After of a write held while its namespace is migrated (429), in whole seconds; client-go retries up to 10 times.")

	fs = fss.FlagSet("admission")
	fs.StringArrayVar(&o.admissionWebhooks, "admission-webhook", nil, "MANAGER=URL: the webhook server of a CAPI manager or provider (cluster-api, kubeadm-bootstrap, kubeadm-control-plane, aws, azure, gcp, ibmcloud, kubevirt, openstack, vsphere, vsphere-supervisor: the names of apis/private/webhooks), e.g. cluster-api=https://127.0.0.1:9443. The proxy serves that manager's admission webhooks on the private groups at "+webhook.AdmissionPathPrefix+"MANAGER/... and forwards them there. Repeatable.")
	fs.StringVar(&o.admissionWebhookCAFile, "admission-webhook-ca-file", "", "PEM bundle of the certificate authorities that sign the webhook servers' certificates (the system roots if empty).")

	fs = fss.FlagSet("diagnostics")
	fs.StringVar(&o.metricsListen, "metrics-listen", defaultMetricsListen, `Address to serve /metrics, /healthz and /readyz on, in plain HTTP; "0" disables them.`)
	fs.BoolVar(&o.profiling, "profiling", false, "Serve Go's profiles (/debug/pprof) on --metrics-listen.")
	fs.BoolVar(&o.gzipLoopback, "gzip-loopback", false, "Gzip large answers to clients on a loopback address (the manager beside a sidecar proxy) as to any other, as kube-apiserver does. Off, they are answered uncompressed whatever their Accept-Encoding says (HTTP allows it): over loopback compression saves no time and costs CPU on both sides.")
	fs.BoolVar(&o.pageOutExecutable, "page-out-executable", true, "Return to the kernel the pages of the binary that starting touched, once the caches have their first lists, and those a burst of watches touched, after it (madvise MADV_PAGEOUT and MADV_DONTNEED, then posix_fadvise POSIX_FADV_DONTNEED; works as non-root from a read-only root filesystem): about 35 MiB of RSS an idle proxy does not use again. Pages used later are read back in on first use, one page at a time (MADV_RANDOM: no readahead).")

	// Of klog's flags only -v and --vmodule, as Kubernetes components offer them (k8s.io/component-base/logs
	// removed the others); logs go to stderr.
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs = fss.FlagSet("logging")
	for _, name := range []string{"v", "vmodule"} {
		fs.AddGoFlag(klogFlags.Lookup(name))
	}
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

func (o *options) validate() error {
	mode, err := auth.ParseMode(o.authMode)
	if err != nil {
		return fmt.Errorf("--auth-mode: %w", err)
	}
	if mode == auth.Sidecar {
		if err := auth.RequireLoopback(o.listen); err != nil {
			return fmt.Errorf("--listen: %w", err)
		}
		if o.backendURL != "" {
			return errors.New("--backend-url carries no credentials, which the sidecar mode needs: use --kubeconfig, or neither for the pod's service account")
		}
	}
	if o.followNamespaces && o.backendURL != "" {
		return errors.New("--follow-namespaces watches namespaces with the credentials of --kubeconfig (or the pod's service account), which --backend-url has none of: use --kubeconfig, or --follow-namespaces=false")
	}
	switch {
	case o.kubeconfig == "" && o.backendURL == "" && mode != auth.Sidecar:
		return errors.New("one of --kubeconfig and --backend-url is required")
	case o.kubeconfig != "" && o.backendURL != "":
		return errors.New("--kubeconfig and --backend-url are exclusive")
	case o.kubeconfig != "" && o.backendCAFile != "":
		return errors.New("--backend-ca-file goes with --backend-url; a kubeconfig carries its own certificate authority")
	}
	if err := o.validateWebhook(); err != nil {
		return err
	}
	if o.insecureServeHTTP {
		if o.tlsCertFile != "" || o.tlsKeyFile != "" {
			return errors.New("--insecure-serve-http excludes --tls-cert-file and --tls-private-key-file")
		}
		return nil
	}
	if o.tlsCertFile == "" || o.tlsKeyFile == "" {
		return errors.New("--tls-cert-file and --tls-private-key-file are required (or --insecure-serve-http, for local debugging)")
	}
	return nil
}

// backend returns the backend's rest.Config. In pass-through mode server.New uses only its address and
// TLS trust.
func (o *options) backend() (*rest.Config, error) {
	if o.kubeconfig == "" && o.backendURL == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no --kubeconfig, and the pod's service account: %w", err)
		}
		return cfg, nil
	}
	if o.kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading --kubeconfig %s: %w", o.kubeconfig, err)
		}
		return cfg, nil
	}
	return &rest.Config{Host: o.backendURL, TLSClientConfig: rest.TLSClientConfig{CAFile: o.backendCAFile}}, nil
}

// crdCache starts the metadata cache of the backend's CRDs that resolves the apiVersion of referenced
// kinds for conversions (convert.Converter.APIVersion), with the proxy's own identity: the kubeconfig's
// credentials, or the pod's service account without --kubeconfig. With --backend-url the proxy has no
// identity, and it returns nil: routed kinds are then resolved from the route table, and converting an
// object that references another kind to v1beta1 fails.
func (o *options) crdCache(ctx context.Context, backend *rest.Config) (*crdcache.Cache, error) {
	if o.backendURL != "" {
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

// admission returns the handler of the private groups' admission webhooks, or nil without
// --admission-webhook.
func (o *options) admission(table *translate.Table, m *metrics.Metrics) (http.Handler, error) {
	if len(o.admissionWebhooks) == 0 {
		return nil, nil
	}
	known := map[string]bool{}
	for _, src := range upstream.Webhooks {
		known[src.Name] = true
	}
	servers := map[string]*url.URL{}
	for _, a := range o.admissionWebhooks {
		name, raw, ok := strings.Cut(a, "=")
		u, err := url.Parse(raw)
		switch {
		case !ok || name == "":
			return nil, fmt.Errorf("--admission-webhook %q: want MANAGER=URL", a)
		case !known[name]:
			return nil, fmt.Errorf("--admission-webhook %q: no manager %q has webhooks (apis/private/webhooks)", a, name)
		case err != nil || u.Scheme != "https" || u.Host == "":
			return nil, fmt.Errorf("--admission-webhook %q: want an https URL", a)
		case servers[name] != nil:
			return nil, fmt.Errorf("--admission-webhook %q: %s given twice", a, name)
		}
		servers[name] = u
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.admissionWebhookCAFile != "" {
		data, err := os.ReadFile(o.admissionWebhookCAFile)
		if err != nil {
			return nil, fmt.Errorf("--admission-webhook-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("--admission-webhook-ca-file %s: no PEM certificate", o.admissionWebhookCAFile)
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
	return webhook.NewAdmission(table, webhook.AdmissionOptions{Servers: servers, Transport: transport, Metrics: m}), nil
}

func (o *options) run(ctx context.Context) error {
	setMemoryLimit()
	backend, err := o.backend()
	if err != nil {
		return err
	}
	ca, err := backendCA(ctx, backend)
	if err != nil {
		return err
	}
	table := translate.NewTable(routes.Routes)
	m := metrics.New()
	opts := server.Options{
		Backend:                backend,
		BackendCA:              ca,
		PageOutExecutable:      o.pageOutExecutable,
		GzipLoopback:           o.gzipLoopback,
		AuthMode:               auth.Mode(o.authMode),
		IdentityHeaderPrefixes: o.identityHeaderPrefixes,
		Routes:                 table,
		DialTimeout:            o.dialTimeout,
		ResponseHeaderTimeout:  o.responseHeaderTimeout,
		Metrics:                m,
		HoldRetryAfter:         o.holdRetryAfter,
	}
	if o.followNamespaces {
		// The proxy's own identity (the kubeconfig's credentials, in either authentication mode) watches
		// the Namespaces' metadata.
		opts.Namespaces = server.NewNamespaces(m)
		if err := server.WatchNamespaces(ctx, rest.CopyConfig(backend), opts.Namespaces); err != nil {
			return err
		}
	}
	converter, err := convert.New(table, routes.APIVersionGetterSetters)
	if err != nil {
		return err
	}
	crdMeta, err := o.crdCache(ctx, backend)
	if err != nil {
		return err
	}
	if crdMeta != nil {
		converter.ResolveWithCRDs(crdMeta)
	}
	opts.Converter = converter
	// One conversion webhook and one admission handler serve both listeners: one set of turns and one
	// memory budget each (package webhook).
	opts.Webhook = webhook.New(converter, webhook.Options{Metrics: m, MaxHeldBytes: o.conversionMaxHeldBytes})
	if opts.Admission, err = o.admission(table, m); err != nil {
		return err
	}
	handler, err := server.New(opts)
	if err != nil {
		return err
	}
	diagnostics, err := o.diagnostics(opts, m, crdMeta)
	if err != nil {
		return err
	}
	webhooks, err := o.webhookServer(ctx, opts.Webhook, opts.Admission)
	if err != nil {
		return err
	}

	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       90 * time.Second,
		// No ReadTimeout or WriteTimeout: watches and upgraded connections are long-running, and Go's
		// HTTP/1 server cancels a request's context when a read deadline passes. The webhooks served
		// here bound their own requests (webhook.ReadTimeout, webhook.WriteTimeout), as kube-apiserver's
		// secure serving sets neither and bounds its requests by their handlers.
		ErrorLog: klog.NewStandardLogger("WARNING"),
	}
	if !o.insecureServeHTTP {
		if srv.TLSConfig, err = servingTLS(ctx, "api", o.tlsCertFile, o.tlsKeyFile); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.listen, err)
	}

	// Once the caches have their first lists, the memory that starting took goes back to the system.
	var synced []func() bool
	if opts.Namespaces != nil {
		synced = append(synced, opts.Namespaces.Synced)
	}
	if crdMeta != nil {
		synced = append(synced, crdMeta.HasSynced)
	}
	go releaseStartupMemory(ctx, o.pageOutExecutable, synced...)

	served, diagnosticsServed, webhooksServed := make(chan error, 1), make(chan error, 1), make(chan error, 1)
	if diagnostics != nil {
		go func() { diagnosticsServed <- diagnostics.serve() }()
	}
	if webhooks != nil {
		go func() { webhooksServed <- webhooks.serve() }()
	}
	go func() {
		if o.insecureServeHTTP {
			klog.InfoS("Serving plain HTTP: for local debugging only", "address", ln.Addr().String(), "backend", backend.Host, "authMode", o.authMode)
			served <- srv.Serve(ln)
		} else {
			klog.InfoS("Serving TLS", "address", ln.Addr().String(), "backend", backend.Host, "authMode", o.authMode)
			served <- srv.ServeTLS(ln, "", "") // the certificate is srv.TLSConfig's, reloaded as it changes
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
	klog.InfoS("Shutting down", "timeout", o.shutdownTimeout)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer cancel()
	if diagnostics != nil {
		// Not ready from now on; metrics stay until the requests in flight are done.
		diagnostics.shuttingDown.Store(true)
		defer diagnostics.close()
	}
	if webhooks != nil {
		// The apiserver retries a conversion elsewhere or fails it; the requests in flight finish first.
		defer func() { _ = webhooks.srv.Shutdown(shutdownCtx) }()
	}
	if err := srv.Shutdown(shutdownCtx); err != nil {
		klog.InfoS("Closing connections still open", "err", err)
		_ = srv.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
