// Package flagname names the flags of the proxy command (capi-proxy, ./proxy), without the leading "--":
// package options defines them with these names, and package install renders the proxy's container
// arguments with them, so that a flag is named once. It imports nothing, so that HyperShift's operators,
// which import package install, do not link the proxy.
package flagname

// Serving: the API listener and the webhook listener.
const (
	Listen                        = "listen"
	TLSCertFile                   = "tls-cert-file"
	TLSPrivateKeyFile             = "tls-private-key-file"
	WebhookListen                 = "webhook-listen"
	WebhookTLSCertFile            = "webhook-tls-cert-file"
	WebhookTLSPrivateKeyFile      = "webhook-tls-private-key-file"
	ConversionWebhookMaxHeldBytes = "conversion-webhook-max-held-bytes"
	InsecureServeHTTP             = "insecure-serve-http"
	ShutdownTimeout               = "shutdown-timeout"
)

// Backend: the kube-apiserver the proxy forwards to.
const (
	Kubeconfig                   = "kubeconfig"
	BackendURL                   = "backend-url"
	BackendCAFile                = "backend-ca-file"
	BackendDialTimeout           = "backend-dial-timeout"
	BackendResponseHeaderTimeout = "backend-response-header-timeout"
)

// Authentication.
const (
	AuthMode               = "auth-mode"
	IdentityHeaderPrefixes = "identity-header-prefixes"
)

// Migration: the per-namespace cut-over.
const (
	FollowNamespaces          = "follow-namespaces"
	HoldRetryAfter            = "hold-retry-after"
	AcknowledgeLeaseNamespace = "acknowledge-lease-namespace"
	AcknowledgeLeaseName      = "acknowledge-lease-name"
)

// Admission webhooks.
const (
	AdmissionWebhook       = "admission-webhook"
	AdmissionWebhookCAFile = "admission-webhook-ca-file"
)

// Diagnostics.
const (
	MetricsListen     = "metrics-listen"
	Profiling         = "profiling"
	PageOutExecutable = "page-out-executable"
	GzipLoopback      = "gzip-loopback"
)

// Environment variables the proxy reads, which package install sets from the downward API: the pod's
// name, namespace and UID (the acknowledging Lease's defaults and owner).
const (
	EnvPodName      = "POD_NAME"
	EnvPodNamespace = "POD_NAMESPACE"
	EnvPodUID       = "POD_UID"
)

// Arg is the command line argument "--name=value".
func Arg(name, value string) string { return "--" + name + "=" + value }
