// Package options holds the flags of the proxy command (capi-proxy, ./proxy), in the pattern of kcp's
// pkg/proxy/options and the Kubernetes components' options: NewOptions gives the defaults, AddFlags
// defines every flag (name, default, help) in the sections --help prints, Complete fills in what the
// flags leave implicit, and Validate returns every error of the combination given, not the first.
//
// The command binds these flags; docs/operations.md's flag table is generated from AddFlags
// (hack/docgen); package install renders the proxy's container arguments with the names of package
// flagname, which AddFlags uses.
package options

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/migration/serving"
	"github.com/openshift/hypershift-capi-proxy/proxy/auth"
	"github.com/openshift/hypershift-capi-proxy/proxy/options/flagname"
	"github.com/openshift/hypershift-capi-proxy/proxy/server"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook/admission"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook/conversion"
)

// DefaultListen is --listen's default: loopback, which both authentication modes accept.
const DefaultListen = "127.0.0.1:8443"

// DefaultMetricsListen is --metrics-listen's default: every interface, so that kubelet probes and
// Prometheus reach it on the pod's IP, on a port that the CAPI managers and providers the proxy runs
// beside in sidecar mode (same network namespace) do not use for their own metrics, probes or webhooks
// (8080, 8443, 9440, 9443).
const DefaultMetricsListen = ":9446"

// Options are the proxy command's flags, by the flagname constant of each.
type Options struct {
	// Listen is --listen: the API listener's address (host:port).
	Listen string
	// TLSCertFile and TLSKeyFile are --tls-cert-file and --tls-private-key-file: the API listener's PEM
	// serving certificate (chain) and key.
	TLSCertFile, TLSKeyFile string
	// WebhookListen is --webhook-listen: the address of a TLS listener serving only the webhooks; empty
	// for none.
	WebhookListen string
	// WebhookTLSCertFile and WebhookTLSKeyFile are --webhook-tls-cert-file and
	// --webhook-tls-private-key-file; empty for the API listener's (WebhookServingFiles).
	WebhookTLSCertFile, WebhookTLSKeyFile string
	// ConversionMaxHeldBytes is --conversion-webhook-max-held-bytes, conversion.Options.MaxHeldBytes; 0
	// until Complete means conversion.DefaultMaxHeldBytes.
	ConversionMaxHeldBytes int64
	// InsecureServeHTTP is --insecure-serve-http: plain HTTP instead of TLS on the API listener.
	InsecureServeHTTP bool
	// ShutdownTimeout is --shutdown-timeout: how long requests in flight get on SIGTERM.
	ShutdownTimeout time.Duration

	// Kubeconfig is --kubeconfig: the backend's kubeconfig file.
	Kubeconfig string
	// BackendURL and BackendCAFile are --backend-url and --backend-ca-file: the backend without
	// credentials, instead of a kubeconfig.
	BackendURL, BackendCAFile string
	// DialTimeout is --backend-dial-timeout, server.Options.DialTimeout.
	DialTimeout time.Duration
	// ResponseHeaderTimeout is --backend-response-header-timeout, server.Options.ResponseHeaderTimeout.
	ResponseHeaderTimeout time.Duration

	// AuthMode is --auth-mode, an auth.Mode once Validate passed.
	AuthMode string
	// IdentityHeaderPrefixes is --identity-header-prefixes, server.Options.IdentityHeaderPrefixes.
	IdentityHeaderPrefixes []string

	// FollowNamespaces is --follow-namespaces: follow the Namespaces' serving mode label
	// (cutover.Namespaces).
	FollowNamespaces bool
	// HoldRetryAfter is --hold-retry-after, server.Options.HoldRetryAfter.
	HoldRetryAfter time.Duration
	// AcknowledgeLeaseNamespace and AcknowledgeLeaseName are --acknowledge-lease-namespace and
	// --acknowledge-lease-name: the Lease by which the proxy acknowledges the Namespaces it applied
	// (package acknowledge); Complete fills them from $POD_NAMESPACE and $POD_NAME (the downward API).
	// Either empty: none.
	AcknowledgeLeaseNamespace, AcknowledgeLeaseName string
	// PodName and PodUID are $POD_NAME and $POD_UID (the downward API; no flags): the proxy's Pod, the
	// Lease's owner when both are set. Set by Complete.
	PodName, PodUID string

	// AdmissionWebhooks are the values of --admission-webhook, MANAGER=URL each (AdmissionServers).
	AdmissionWebhooks []string
	// AdmissionWebhookCAFile is --admission-webhook-ca-file.
	AdmissionWebhookCAFile string

	// MetricsListen is --metrics-listen: the address of /metrics, /healthz and /readyz; empty (after
	// Complete, which takes "0" for it) for none.
	MetricsListen string
	// Profiling is --profiling: /debug/pprof on MetricsListen.
	Profiling bool
	// PageOutExecutable is --page-out-executable, server.Options.PageOutExecutable.
	PageOutExecutable bool
	// GzipLoopback is --gzip-loopback, server.Options.GzipLoopback.
	GzipLoopback bool
}

// NewOptions returns the options with every flag at its default.
func NewOptions() *Options {
	return &Options{
		Listen:                 DefaultListen,
		ConversionMaxHeldBytes: conversion.DefaultMaxHeldBytes,
		ShutdownTimeout:        30 * time.Second,
		DialTimeout:            server.DefaultDialTimeout,
		ResponseHeaderTimeout:  server.DefaultResponseHeaderTimeout,
		AuthMode:               string(auth.PassThrough),
		IdentityHeaderPrefixes: auth.DefaultIdentityHeaderPrefixes,
		FollowNamespaces:       true,
		HoldRetryAfter:         server.DefaultHoldRetryAfter,
		MetricsListen:          DefaultMetricsListen,
		PageOutExecutable:      true,
		GzipLoopback:           true,
	}
}

// AddFlags defines the flags in fss's sections (serving, backend, authentication, migration, admission,
// diagnostics, logging: the order --help prints them in), bound to o, with o's values as their
// defaults; the logging section holds klog's -v and --vmodule, as Kubernetes components offer them
// (k8s.io/component-base/logs removed klog's other flags; logs go to stderr).
func (o *Options) AddFlags(fss *cliflag.NamedFlagSets) {
	fs := fss.FlagSet("serving")
	fs.StringVar(&o.Listen, flagname.Listen, o.Listen, "Address to serve on (host:port).")
	fs.StringVar(&o.TLSCertFile, flagname.TLSCertFile, o.TLSCertFile, "PEM serving certificate (chain) of the proxy. Reloaded when the file changes: new connections get the new certificate, open ones keep theirs.")
	fs.StringVar(&o.TLSKeyFile, flagname.TLSPrivateKeyFile, o.TLSKeyFile, "PEM private key of --tls-cert-file.")
	fs.StringVar(&o.WebhookListen, flagname.WebhookListen, o.WebhookListen, "Address (host:port) of a TLS listener serving only the webhooks (conversion at /convert, admission with --admission-webhook), for the apiserver to reach when --listen is loopback (sidecar mode). Empty: none (they stay served on --listen).")
	fs.StringVar(&o.WebhookTLSCertFile, flagname.WebhookTLSCertFile, o.WebhookTLSCertFile, "PEM serving certificate (chain) of --webhook-listen, reloaded when it changes; empty: --tls-cert-file's.")
	fs.StringVar(&o.WebhookTLSKeyFile, flagname.WebhookTLSPrivateKeyFile, o.WebhookTLSKeyFile, "PEM private key of --webhook-tls-cert-file.")
	fs.Int64Var(&o.ConversionMaxHeldBytes, flagname.ConversionWebhookMaxHeldBytes, o.ConversionMaxHeldBytes, fmt.Sprintf("Bytes of ConversionReviews the conversion webhook holds at once, on both listeners, as they are read, wait for their turn and are converted; a review beyond it is answered 429. The proxy's memory grows by about 3 times this at most. Below %d (one review's bound), the largest reviews are refused (413); 0 means the default.", conversion.MaxBodyBytes))
	fs.BoolVar(&o.InsecureServeHTTP, flagname.InsecureServeHTTP, o.InsecureServeHTTP, "Serve plain HTTP instead of TLS. For local debugging only: bearer tokens cross the wire in clear.")
	fs.DurationVar(&o.ShutdownTimeout, flagname.ShutdownTimeout, o.ShutdownTimeout, "How long to wait for requests in flight on SIGTERM before closing their connections.")
	fs.BoolVar(&o.GzipLoopback, flagname.GzipLoopback, o.GzipLoopback, "Gzip large answers to clients on a loopback address (the manager beside a sidecar proxy) as to any other, as kube-apiserver does. Off, they are answered uncompressed whatever their Accept-Encoding says (HTTP allows it); measured over TLS on loopback, that costs both sides more CPU than level-1 gzip (docs/performance.md).")

	fs = fss.FlagSet("backend")
	fs.StringVar(&o.Kubeconfig, flagname.Kubeconfig, o.Kubeconfig, "Kubeconfig of the backend kube-apiserver. Its server address and TLS trust serve every request; its credentials serve the proxy's own reads (the Namespaces it follows, the CRDs whose contract labels it resolves) and, in sidecar mode, every request too; in pass-through mode clients' requests carry their own. In sidecar mode, without it and --backend-url: the pod's service account. Exclusive with --backend-url.")
	fs.StringVar(&o.BackendURL, flagname.BackendURL, o.BackendURL, "URL of the backend kube-apiserver, e.g. https://10.0.0.1:6443, without credentials: the proxy then reads nothing on its own (needs --follow-namespaces=false, and resolves referenced kinds from the route table only). Exclusive with --kubeconfig.")
	fs.StringVar(&o.BackendCAFile, flagname.BackendCAFile, o.BackendCAFile, "PEM bundle of the certificate authorities that sign the backend's serving certificate (with --backend-url; the system roots if empty). Reloaded when the file changes, as a kubeconfig's certificate-authority file is.")
	fs.DurationVar(&o.DialTimeout, flagname.BackendDialTimeout, o.DialTimeout, "Timeout to connect to the backend; an unreachable backend is answered with 503.")
	fs.DurationVar(&o.ResponseHeaderTimeout, flagname.BackendResponseHeaderTimeout, o.ResponseHeaderTimeout, "How long to wait for the backend's response headers of a request that is not long-running (watches, logs, exec, ... are exempt) before answering 504.")

	fs = fss.FlagSet("authentication")
	fs.StringVar(&o.AuthMode, flagname.AuthMode, o.AuthMode, "Whose credentials reach the backend: pass-through (each client's own) or sidecar (the kubeconfig's, or the pod's service account without --kubeconfig; needs a loopback --listen).")
	fs.StringSliceVar(&o.IdentityHeaderPrefixes, flagname.IdentityHeaderPrefixes, o.IdentityHeaderPrefixes, "Prefixes of front-proxy identity headers removed from every request; must cover the backend's --requestheader-username-headers, --requestheader-group-headers, --requestheader-uid-headers and --requestheader-extra-headers-prefix.")

	fs = fss.FlagSet("migration")
	fs.BoolVar(&o.FollowNamespaces, flagname.FollowNamespaces, o.FollowNamespaces, "Follow each Namespace's "+serving.Label+" label (the migration's per-namespace cut-over): serve its CAPI kinds from the upstream or private groups and hold their writes as it says. The identity of --kubeconfig (or the pod's service account) needs list and watch on namespaces; /readyz fails until the first list is in. Disable only where no namespace is ever migrated.")
	fs.DurationVar(&o.HoldRetryAfter, flagname.HoldRetryAfter, o.HoldRetryAfter, "Retry-After of a write held while its namespace is migrated (429), in whole seconds; client-go retries up to 10 times.")
	fs.StringVar(&o.AcknowledgeLeaseNamespace, flagname.AcknowledgeLeaseNamespace, o.AcknowledgeLeaseNamespace, "Namespace of the Lease by which the proxy acknowledges the serving labels it follows (with --follow-namespaces), for a migration to wait on instead of its whole grace period; empty: $"+flagname.EnvPodNamespace+". The identity of --kubeconfig (or the pod's service account) needs get, create, update and delete on leases there. Without a namespace and a name the proxy publishes no Lease, and a migration that waits for acknowledgements cannot see it: turn them off in migrations while such a proxy serves (docs/migration.md).")
	fs.StringVar(&o.AcknowledgeLeaseName, flagname.AcknowledgeLeaseName, o.AcknowledgeLeaseName, "Name of the Lease by which the proxy acknowledges the serving labels it follows (in --acknowledge-lease-namespace); empty: $"+flagname.EnvPodName+". With $"+flagname.EnvPodName+" and $"+flagname.EnvPodUID+" the Lease is owned by that pod (the garbage collector removes it with the pod).")

	fs = fss.FlagSet("admission")
	fs.StringArrayVar(&o.AdmissionWebhooks, flagname.AdmissionWebhook, o.AdmissionWebhooks, "MANAGER=URL: the webhook server of a CAPI manager or provider (cluster-api, kubeadm-bootstrap, kubeadm-control-plane, aws, azure, gcp, ibmcloud, kubevirt, openstack, vsphere, vsphere-supervisor: the names of apis/private/webhooks), e.g. cluster-api=https://127.0.0.1:9443. The proxy serves that manager's admission webhooks on the private groups at "+admission.PathPrefix+"MANAGER/... and forwards them there. Repeatable.")
	fs.StringVar(&o.AdmissionWebhookCAFile, flagname.AdmissionWebhookCAFile, o.AdmissionWebhookCAFile, "PEM bundle of the certificate authorities that sign the webhook servers' certificates (the system roots if empty).")

	fs = fss.FlagSet("diagnostics")
	fs.StringVar(&o.MetricsListen, flagname.MetricsListen, o.MetricsListen, `Address to serve /metrics, /healthz and /readyz on, in plain HTTP; "0" disables them.`)
	fs.BoolVar(&o.Profiling, flagname.Profiling, o.Profiling, "Serve Go's profiles (/debug/pprof) on --metrics-listen.")
	fs.BoolVar(&o.PageOutExecutable, flagname.PageOutExecutable, o.PageOutExecutable, "Return to the kernel the pages of the binary that starting touched, once the caches have their first lists, and those a burst of watches touched, after it (madvise MADV_PAGEOUT and MADV_DONTNEED, then posix_fadvise POSIX_FADV_DONTNEED; works as non-root from a read-only root filesystem): about 35 MiB of RSS an idle proxy does not use again. Pages used later are read back in on first use, one page at a time (MADV_RANDOM: no readahead).")

	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs = fss.FlagSet("logging")
	for _, name := range []string{"v", "vmodule"} {
		fs.AddGoFlag(klogFlags.Lookup(name))
	}
}

// Complete fills in what the flags leave implicit: --metrics-listen "0" becomes "" (none),
// --conversion-webhook-max-held-bytes 0 its default, and the acknowledging Lease's namespace and name
// come from $POD_NAMESPACE and $POD_NAME when their flags are empty, its owner from $POD_NAME and
// $POD_UID. It runs after the flags are parsed, before Validate.
func (o *Options) Complete() error {
	o.PodName, o.PodUID = os.Getenv(flagname.EnvPodName), os.Getenv(flagname.EnvPodUID)
	if o.AcknowledgeLeaseNamespace == "" {
		o.AcknowledgeLeaseNamespace = os.Getenv(flagname.EnvPodNamespace)
	}
	if o.AcknowledgeLeaseName == "" {
		o.AcknowledgeLeaseName = o.PodName
	}
	if o.MetricsListen == "0" {
		o.MetricsListen = ""
	}
	if o.ConversionMaxHeldBytes == 0 {
		o.ConversionMaxHeldBytes = conversion.DefaultMaxHeldBytes
	}
	return nil
}

// Validate returns every error of the flags given, each naming the flags it is about; none when the
// proxy can start with them.
func (o *Options) Validate() []error {
	var errs []error
	mode, err := auth.ParseMode(o.AuthMode)
	if err != nil {
		errs = append(errs, fmt.Errorf("--auth-mode: %w", err))
	}
	if mode == auth.Sidecar {
		if err := auth.RequireLoopback(o.Listen); err != nil {
			errs = append(errs, fmt.Errorf("--listen: %w", err))
		}
		if o.BackendURL != "" {
			errs = append(errs, errors.New("--backend-url carries no credentials, which the sidecar mode needs: use --kubeconfig, or neither for the pod's service account"))
		}
	}
	if o.FollowNamespaces && o.BackendURL != "" {
		errs = append(errs, errors.New("--follow-namespaces watches namespaces with the credentials of --kubeconfig (or the pod's service account), which --backend-url has none of: use --kubeconfig, or --follow-namespaces=false"))
	}
	switch {
	case o.Kubeconfig == "" && o.BackendURL == "" && mode != auth.Sidecar:
		errs = append(errs, errors.New("one of --kubeconfig and --backend-url is required"))
	case o.Kubeconfig != "" && o.BackendURL != "":
		errs = append(errs, errors.New("--kubeconfig and --backend-url are exclusive"))
	case o.Kubeconfig != "" && o.BackendCAFile != "":
		errs = append(errs, errors.New("--backend-ca-file goes with --backend-url; a kubeconfig carries its own certificate authority"))
	}
	errs = append(errs, o.validateWebhook()...)
	if o.InsecureServeHTTP {
		if o.TLSCertFile != "" || o.TLSKeyFile != "" {
			errs = append(errs, errors.New("--insecure-serve-http excludes --tls-cert-file and --tls-private-key-file"))
		}
	} else if o.TLSCertFile == "" || o.TLSKeyFile == "" {
		errs = append(errs, errors.New("--tls-cert-file and --tls-private-key-file are required (or --insecure-serve-http, for local debugging)"))
	}
	_, admissionErrs := o.admissionServers()
	return append(errs, admissionErrs...)
}

// validateWebhook checks the --webhook-* and --conversion-webhook-* flags.
func (o *Options) validateWebhook() []error {
	var errs []error
	if o.ConversionMaxHeldBytes < 0 {
		errs = append(errs, errors.New("--conversion-webhook-max-held-bytes must not be negative"))
	}
	if (o.WebhookTLSCertFile == "") != (o.WebhookTLSKeyFile == "") {
		errs = append(errs, errors.New("--webhook-tls-cert-file and --webhook-tls-private-key-file go together"))
	}
	if o.WebhookListen == "" {
		if o.WebhookTLSCertFile != "" {
			errs = append(errs, errors.New("--webhook-tls-cert-file needs --webhook-listen"))
		}
		return errs
	}
	if o.WebhookTLSCertFile == "" && (o.TLSCertFile == "" || o.InsecureServeHTTP) {
		errs = append(errs, errors.New("--webhook-listen serves TLS only: give --webhook-tls-cert-file and --webhook-tls-private-key-file (or --tls-cert-file and --tls-private-key-file to share)"))
	}
	return errs
}

// WebhookServingFiles are the PEM certificate and key files of the webhook listener: its own, or the API
// listener's when --webhook-tls-cert-file is empty.
func (o *Options) WebhookServingFiles() (certFile, keyFile string) {
	if o.WebhookTLSCertFile == "" {
		return o.TLSCertFile, o.TLSKeyFile
	}
	return o.WebhookTLSCertFile, o.WebhookTLSKeyFile
}

// AdmissionServers returns the webhook servers of --admission-webhook by manager name (an
// apis/upstream.WebhookSource.Name), each an https URL; nil without the flag. It is valid once Validate
// passed.
func (o *Options) AdmissionServers() map[string]*url.URL {
	servers, _ := o.admissionServers()
	return servers
}

// admissionServers parses --admission-webhook: MANAGER=URL, a manager that has webhooks
// (apis/private/webhooks), an https URL, each manager once.
func (o *Options) admissionServers() (map[string]*url.URL, []error) {
	if len(o.AdmissionWebhooks) == 0 {
		return nil, nil
	}
	known := map[string]bool{}
	for _, src := range upstream.Webhooks {
		known[src.Name] = true
	}
	var errs []error
	servers := map[string]*url.URL{}
	for _, a := range o.AdmissionWebhooks {
		name, raw, ok := strings.Cut(a, "=")
		u, err := url.Parse(raw)
		switch {
		case !ok || name == "":
			errs = append(errs, fmt.Errorf("--admission-webhook %q: want MANAGER=URL", a))
		case !known[name]:
			errs = append(errs, fmt.Errorf("--admission-webhook %q: no manager %q has webhooks (apis/private/webhooks)", a, name))
		case err != nil || u.Scheme != "https" || u.Host == "":
			errs = append(errs, fmt.Errorf("--admission-webhook %q: want an https URL", a))
		case servers[name] != nil:
			errs = append(errs, fmt.Errorf("--admission-webhook %q: %s given twice", a, name))
		default:
			servers[name] = u
		}
	}
	return servers, errs
}
