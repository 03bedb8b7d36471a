// Package health names the checks of the proxy command's /healthz and /readyz, which it serves on
// --metrics-listen with controller-runtime's healthz handlers (/readyz/<check> runs one check,
// ?verbose lists each), and says when each passes and when the proxy has it: the command registers its
// checks by these names, and docs/operations.md's table of checks is generated from Checks
// (hack/docgen).
package health

// Endpoints.
const (
	Healthz = "/healthz"
	Readyz  = "/readyz"
)

// The checks' names.
const (
	// Ping is /healthz's only check: the process serves HTTP.
	Ping = "ping"
	// Backend is the backend's own /readyz (server.BackendReady).
	Backend = "backend"
	// Shutdown fails once the proxy has begun to shut down.
	Shutdown = "shutdown"
	// Namespaces waits for the namespaces' serving modes (cutover.Namespaces.Ready).
	Namespaces = "namespaces"
	// CRDs waits for the CRD metadata cache's first list (crdcache.Cache.Ready).
	CRDs = "crds"
)

// Check is one check of an endpoint.
type Check struct {
	// Endpoint is Healthz or Readyz.
	Endpoint string
	// Name is the check's name.
	Name string
	// Passes says when the check passes.
	Passes string
	// When says when the proxy has the check.
	When string
}

// Checks are the checks of both endpoints, in the order docs list them.
var Checks = []Check{
	{Endpoint: Healthz, Name: Ping, Passes: "the process serves HTTP", When: "always"},
	{Endpoint: Readyz, Name: Backend, Passes: "the backend kube-apiserver answers its own /readyz within 5 s: 200, or 401 or 403 " +
		"(it answers but does not say; asked with the proxy's own transport, anonymously in pass-through mode, " +
		"which kube-apiserver's system:public-info-viewer allows)", When: "always"},
	{Endpoint: Readyz, Name: Shutdown, Passes: "the proxy has not begun to shut down (SIGTERM, SIGINT)", When: "always"},
	{Endpoint: Readyz, Name: Namespaces, Passes: "the serving-label guard's informers and the Namespace informer have their first lists: " +
		"every namespace's serving mode is known; and the proxy's acknowledging Lease is written, if it has one (--acknowledge-lease-name)", When: "--follow-namespaces (the default)"},
	{Endpoint: Readyz, Name: CRDs, Passes: "the CRD metadata cache that resolves referenced kinds for conversions has its first list " +
		"(or the backend refused the proxy's identity the list: 401, 403, which waiting would not change)", When: "without --backend-url"},
}
