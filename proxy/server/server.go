// Package server is the translating reverse proxy: an http.Handler in front of kube-apiserver whose
// clients speak the upstream Cluster API groups (cluster.x-k8s.io, ...) while the backend stores the
// private twins (cluster.hypershift.openshift.io, ...).
//
// One handler chain, built in New, serves every request; its code is filed by stage:
//
//  1. filters (filters.go; metrics.WithRequests): classification (package classify), once per request, carried
//     in the request's context as one read-only value (classify.NewContext; the server's own state of the
//     request, its exchange, refers to it): a mapped resource with its route and the path to send,
//     discovery, an OpenAPI document, CRDs, APIServices, the conversion webhook, the admission
//     webhooks, a private group, a genuine upgrade or anything else;
//     then metrics, the authentication mode's header rules, 404 for what no route serves and for the
//     private groups (which do not exist through the proxy), 413 for oversized bodies, genuine upgrades
//     passed raw; then, with Options.Namespaces, each namespace served from the groups its serving-mode
//     label names, writes of held namespaces answered 429, watches ended on moves between the groups
//     and cluster-wide lists and watches merged while namespaces are mixed (package cutover, which
//     withServing runs, cutover.go); where a request goes (its target, cutover.Target: the backend
//     path, the groups it is served from, when a watch ends) is decided once, there or in withTarget
//     (route.go), and only read after;
//  2. in-process conversion of versions the backend does not serve (package adapt), with a converter;
//     the requests the Adapter and the merged lists and watches make to the proxy itself are served in
//     process by package internal/inprocess, which returns a response broken off as an error;
//  3. dispatch on the class (ServeHTTP): the conversion and admission webhooks (Options.Webhooks, the
//     proxy's webhook.Mux; packages webhook/conversion, webhook/admission), OpenAPI (package openapi),
//     discovery, CRDs and APIServices, whose objects are named after the groups they register
//     (groupnamed.go, crd.go, apiservice.go; packages groupnamed, crd, apiservice), and resources;
//  4. the request stage (request.go): the path to the private group, the query's selectors and the body
//     rewritten at their group-carrying paths only, every other byte kept, in the encoding the apiserver
//     decodes (package body), Accept narrowed to what can be translated: JSON, and protobuf of built-in
//     kinds and metadata (package negotiate);
//  5. forward it with httputil.ReverseProxy over client-go's transport (package backend), unbuffered
//     (FlushInterval -1); a watch's body copied by the handler itself, which holds no copy buffer while
//     the watch waits (watch.go, package internal/watchcopy), and memory returned to the OS after a
//     burst of watches (package memrelease); a watch over a websocket frame by frame (watch.go, package
//     internal/watchcopy, frames of package wsframe);
//  6. the response stage (response.go): Warning headers, Status bodies, single objects, and lists and
//     watches streamed object by object (package stream), in JSON or protobuf.
//
// Authentication is the backend's: in pass-through mode the proxy uses only the backend's address and TLS
// trust and forwards the client's Authorization header unchanged; in sidecar mode it uses the pod's own
// credentials. Either way a client can never do through the proxy what the apiserver would refuse it (or
// the pod); package auth holds the rules, including those for impersonation and front-proxy headers.
//
// A response that cannot be completed once it started (an answer the Adapter converts was broken off,
// the backend reset the request's stream, a watch cannot be copied) is aborted (inprocess.Abort) and
// broken off by the outermost stage, withAbort, as net/http documents it (panic(http.ErrAbortHandler)):
// the client's HTTP/2 stream is reset, its HTTP/1.1 connection closed.
//
// Faults: an unreachable backend is answered with 503 at once (connection refused) or after
// Options.DialTimeout; a backend that sends no response headers within Options.ResponseHeaderTimeout
// with 504 (long-running requests exempt); a watch whose backend stream breaks off is ended cleanly at an
// event boundary, as kube-apiserver ends a watch that times out, so that client-go watches again (and
// re-lists if the backend lost the resourceVersion); a create, update, patch or delete whose declared
// Content-Length exceeds Options.MaxRequestBodyBytes is answered with 413 before it is read.
//
// A request body the proxy cannot parse is forwarded as it is, so that the client gets the apiserver's own
// error. Errors the proxy makes itself are JSON metav1.Status: 400 for a request target that is not a
// path, 403 for impersonation in sidecar mode, 413 for a body over Options.MaxRequestBodyBytes, 415 for a
// protobuf body naming a mapped group that cannot be decoded, 422 for a JSON patch that copies or moves a
// value between fields that name groups differently, 503 when the backend is unreachable, 504 when it
// sends no response headers in time, 500 when the backend's response cannot be translated; what no route
// serves in a mapped group, and the private groups, get kube-apiserver's own 404 for a path it does not
// serve. CRDs and APIServices (groupnamed.go) get 404 for the names that do not exist through the proxy and
// 403 for the writes their rules refuse, 400 or 415 for a create body that cannot be read, each once the
// backend authorized the client. A list whose translation fails after its first 32 KiB were sent is cut
// off (the client sees a truncated body); a watch ends with an ERROR event.
//
// Protobuf and CBOR: a client asking for protobuf of a built-in kind, or for PartialObjectMetadata of any
// resource, is answered in protobuf (negotiate.AcceptProtobuf), translated at the same group paths as
// JSON where a private group name occurs in it and passed through untouched otherwise
// (body.Translator.ProtobufUpstreamOf; watches frame by frame, stream.ProtobufWatchReader); other
// answers are negotiated in JSON (client-go decodes the answer by its Content-Type; custom resources have
// no protobuf). Request bodies are translated in their own encoding (CBOR stays CBOR), protobuf bodies
// of built-in kinds transcoded to JSON when they name a mapped group. A backend that resets a request's
// HTTP/2 stream has the client's reset too. Table cells are printed text:
// private group names in them are replaced whole (body.Translator).
//
// gzip: lists are asked of the backend gzip'ed and decompressed for translation, other resource requests
// uncompressed (discovery's is gzip'ed by the transport and decompressed); a translated answer larger than
// 128 KiB is gzip'ed for a client that accepts it, at kube-apiserver's level, as kube-apiserver does
// (watches are not); a compressed answer that names no private group, and an answer the proxy passes
// through, keep the backend's encoding (package internal/gzip). A client on a loopback address (the manager
// beside a sidecar proxy) is answered the same way, or uncompressed without Options.GzipLoopback.
package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/openshift/hypershift-capi-proxy/proxy/adapt"
	"github.com/openshift/hypershift-capi-proxy/proxy/apiservice"
	"github.com/openshift/hypershift-capi-proxy/proxy/auth"
	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
	"github.com/openshift/hypershift-capi-proxy/proxy/convert"
	"github.com/openshift/hypershift-capi-proxy/proxy/crd"
	"github.com/openshift/hypershift-capi-proxy/proxy/cutover"
	"github.com/openshift/hypershift-capi-proxy/proxy/discovery"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/backend"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/memrelease"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/pageout"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/watchcopy"
	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/proxy/openapi"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
	"github.com/openshift/hypershift-capi-proxy/proxy/stream"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook/conversion"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Options configures the proxy.
type Options struct {
	// Backend is the kube-apiserver to forward to. In pass-through mode only its address (Host, with an
	// optional path prefix) and TLS trust settings (CAFile, CAData, ServerName, Insecure) are used, its
	// credentials (bearer token, client certificate, exec plugin, impersonation, wrapping transports)
	// never are; in sidecar mode its credentials are used for every request.
	Backend *rest.Config
	// BackendCA, when set, replaces Backend's certificate authority: the backend's serving certificate
	// is verified against its bundle as it is at each new connection, so a CA file reloaded by its
	// controller (dynamiccertificates.NewDynamicCAContentFromFile, run by the caller) is trusted by new
	// connections while open ones, watches included, go on.
	BackendCA dynamiccertificates.CAContentProvider
	// AuthMode is how the proxy authenticates to the backend; empty means auth.PassThrough.
	AuthMode auth.Mode
	// IdentityHeaderPrefixes name the front-proxy identity headers removed from every request; nil means
	// auth.DefaultIdentityHeaderPrefixes.
	IdentityHeaderPrefixes []string
	// Routes is the route table, translate.NewTable(routes.Routes).
	Routes *translate.Table
	// DialTimeout bounds connecting to the backend (TCP; TLS has client-go's 10s handshake timeout). An
	// unreachable backend is answered with 503 ServiceUnavailable. Zero means DefaultDialTimeout.
	DialTimeout time.Duration
	// MaxRequestBodyBytes bounds a request body the proxy reads to translate it; a larger one is answered
	// with 413. Zero means DefaultMaxRequestBodyBytes.
	MaxRequestBodyBytes int64
	// ResponseHeaderTimeout bounds the wait for the backend's response headers of a request that is not
	// long-running; on expiry the client gets 504. Zero means DefaultResponseHeaderTimeout, a negative
	// value no bound.
	ResponseHeaderTimeout time.Duration
	// Metrics records requests, translations and open watches; nil records nothing.
	Metrics *metrics.Metrics
	// Converter, when set, converts between versions: the proxy serves the conversion webhook of the
	// private CRDs at classify.WebhookPath (package webhook/conversion; unless Webhooks is set), and
	// converts in process what the backend does not serve in the client's version (package adapt).
	Converter *convert.Converter
	// Webhooks, when set, serves the proxy's webhooks: the requests classified classify.Webhook (the
	// conversion webhook, classify.WebhookPath) and classify.Admission (the private groups' admission
	// webhooks, below classify.AdmissionPathPrefix), once the chain counted them. It is the proxy's one
	// webhook.Mux, which its webhook listener serves too, so that both listeners share each webhook's
	// turns and memory budget. Nil with Converter makes one serving a conversion webhook of Converter
	// (conversion.New) for this handler alone; nil without Converter answers both classes 404.
	Webhooks http.Handler
	// Namespaces, when set, gives each namespace's serving mode (the migration's Namespace label, see
	// package cutover): mapped kinds of a namespace labelled upstream are served from the upstream groups,
	// untranslated, and writes of a held namespace are answered 429. Nil serves every namespace from the
	// private groups.
	Namespaces *cutover.Namespaces
	// HoldRetryAfter is the Retry-After of a held write (429) and of a request of a mapped kind before
	// Namespaces has synced (503). Zero means DefaultHoldRetryAfter.
	HoldRetryAfter time.Duration
	// PageOutExecutable makes the proxy, after a burst of watches, also ask the kernel to reclaim the pages
	// of its executable that the burst touched (pageout.Executable; package memrelease).
	PageOutExecutable bool
	// GzipLoopback gzips answers to clients on a loopback address as to any other: as kube-apiserver, a
	// translated answer over 128 KiB for a client whose Accept-Encoding names gzip (--gzip-loopback, on by
	// default). Unset, such a client (the manager beside a sidecar proxy) is answered uncompressed
	// whatever its Accept-Encoding says, as HTTP allows (RFC 9110 section 12.5.3: identity is always
	// acceptable unless excluded; withLoopbackIdentity). Over TLS on loopback that costs the proxy and
	// the client more CPU than kube-apiserver's level-1 gzip (docs/performance.md, "Per
	// topology").
	GzipLoopback bool
}

const (
	// DefaultDialTimeout is Options.DialTimeout's default.
	DefaultDialTimeout = 5 * time.Second
	// DefaultMaxRequestBodyBytes is Options.MaxRequestBodyBytes's default: kube-apiserver's own limit
	// (3 MiB), so that the proxy refuses nothing the backend would take.
	DefaultMaxRequestBodyBytes = 3 << 20
	// DefaultResponseHeaderTimeout is Options.ResponseHeaderTimeout's default: longer than kube-apiserver's
	// own request timeout (60s), so that the backend's 504 reaches the client first.
	DefaultResponseHeaderTimeout = 70 * time.Second
	// DefaultHoldRetryAfter is Options.HoldRetryAfter's default: client-go retries a 429 with Retry-After
	// up to 10 times, so that a write held for up to ~10s succeeds without the caller seeing an error.
	DefaultHoldRetryAfter = time.Second
)

// server holds what every request needs; it is the innermost handler.
type server struct {
	backend    *url.URL
	classifier *classify.Classifier
	bodies     *body.Translator
	discovery  *discovery.Rewriter
	crds       *crd.Names
	// openapi serves the OpenAPI documents (classify.OpenAPI).
	openapi *openapi.Handler
	maxBody int64
	metrics *metrics.Metrics
	// proxy forwards every request but upgrades and watches of resources; watches forwards those, whose
	// answers the handler copies itself (serveWatch, watch.go); upgrades forwards connection upgrades over
	// HTTP/1.1.
	proxy, watches, upgrades *httputil.ReverseProxy
	// watchCopier copies the watches' answers, taking a copy buffer only while an event is copied.
	watchCopier *watchcopy.Copier
	// webhooks serves the webhooks (classify.Webhook, classify.Admission): Options.Webhooks; nil
	// without it and without Options.Converter.
	webhooks http.Handler
	// namespaces gives the namespaces' serving modes; nil serves every namespace from the private groups.
	namespaces *cutover.Namespaces
	// cutover serves each namespace by its serving mode (withServing); nil without namespaces.
	cutover *cutover.Filter
	// sharedWatch holds the translations of the objects watches saw last, for the other watches of
	// the same resource.
	sharedWatch *stream.Shared
	// watchMemory returns memory to the OS after a burst of watches (package memrelease).
	watchMemory *memrelease.Watches
	// crdNamed and apiServices serve the CustomResourceDefinitions and the APIServices (groupnamed.go).
	crdNamed, apiServices *groupNamed
}

// copyBuffers is a httputil.BufferPool of buffers of one size: ReverseProxy copies every response
// body through one, and otherwise allocates 32 KiB per response.
type copyBuffers struct{ pool sync.Pool }

func newCopyBuffers(size int) *copyBuffers {
	return &copyBuffers{pool: sync.Pool{New: func() any { b := make([]byte, size); return &b }}}
}

func (c *copyBuffers) Get() []byte  { return *c.pool.Get().(*[]byte) }
func (c *copyBuffers) Put(b []byte) { c.pool.Put(&b) }

// sharedWatchBytes bounds server.sharedWatch: a few hundred events of a few KB, more than the
// watchers of one resource see at the same time.
const sharedWatchBytes = 2 << 20

// New returns the proxy's handler.
func New(o Options) (http.Handler, error) {
	if o.Backend == nil {
		return nil, errors.New("server: Options.Backend is required")
	}
	if o.Routes == nil {
		return nil, errors.New("server: Options.Routes is required")
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.MaxRequestBodyBytes <= 0 {
		o.MaxRequestBodyBytes = DefaultMaxRequestBodyBytes
	}
	if o.ResponseHeaderTimeout == 0 {
		o.ResponseHeaderTimeout = DefaultResponseHeaderTimeout
	}
	if o.AuthMode == "" {
		o.AuthMode = auth.PassThrough
	}
	if _, err := auth.ParseMode(string(o.AuthMode)); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if o.IdentityHeaderPrefixes == nil {
		o.IdentityHeaderPrefixes = auth.DefaultIdentityHeaderPrefixes
	}
	b, err := backend.New(o.Backend, o.AuthMode, o.DialTimeout, o.BackendCA)
	if err != nil {
		return nil, err
	}
	s := &server{
		backend:     b.URL,
		classifier:  classify.New(o.Routes),
		bodies:      body.New(o.Routes),
		discovery:   discovery.New(o.Routes),
		crds:        crd.New(o.Routes),
		maxBody:     o.MaxRequestBodyBytes,
		metrics:     o.Metrics,
		namespaces:  o.Namespaces,
		sharedWatch: stream.NewShared(sharedWatchBytes),
	}
	if o.Namespaces != nil {
		s.cutover = cutover.New(o.Namespaces, retryAfterSeconds(o.HoldRetryAfter), cutoverProxy{s})
	}
	s.openapi = openapi.NewHandler(openapi.New(o.Routes), s.backendGet)
	s.crdNamed = &groupNamed{names: s.crds.Names, mapped: s.crdRequest}
	s.apiServices = &groupNamed{names: apiservice.New(o.Routes), mapped: s.apiServiceRequest}
	s.watchMemory = memrelease.New(func() {
		s.sharedWatch.Reset()
		memrelease.Release()
		if o.PageOutExecutable {
			_, _ = pageout.Executable()
		}
	})
	s.proxy = &httputil.ReverseProxy{
		Rewrite:        s.rewrite,
		Transport:      backend.WithHeaderTimeout(b.Transport, o.ResponseHeaderTimeout),
		FlushInterval:  -1,
		ModifyResponse: modifyResponse,
		ErrorHandler:   proxyError,
		ErrorLog:       klog.NewStandardLogger("WARNING"),
	}
	s.proxy.BufferPool = newCopyBuffers(32 << 10)
	s.watchCopier = watchcopy.NewCopier(watchCopyBuffer)
	watches := *s.proxy
	watches.ModifyResponse = modifyWatchResponse
	watches.BufferPool = s.watchCopier.BufferPool()
	s.watches = &watches
	s.upgrades = &httputil.ReverseProxy{
		Rewrite:       s.rewrite,
		Transport:     b.UpgradeTransport,
		FlushInterval: -1,
		ErrorHandler:  proxyError,
		ErrorLog:      klog.NewStandardLogger("WARNING"),
	}
	s.webhooks = o.Webhooks
	if s.webhooks == nil && o.Converter != nil {
		s.webhooks = webhook.Mux(conversion.New(o.Converter, conversion.Options{Metrics: o.Metrics}), nil)
	}

	// The handler chain, built as k8s.io/apiserver's DefaultBuildHandlerChain builds its own: the server's
	// dispatch innermost, then each filter wrapped around the chain so far, one line each, so that a
	// request meets them from the last line up. A filter whose option is off returns the chain as it is.
	// In the order a request meets them (docs/architecture.md draws the same):
	//
	//	withAbort              a response a stage aborted (inprocess.Abort) broken off, once the chain
	//	                       returned
	//	withLoopbackIdentity   a loopback client answered uncompressed (unless Options.GzipLoopback)
	//	withClass              classified once (package classify): the classification and its exchange
	//	                       put into its context
	//	metrics.WithRequests   counted, timed and logged
	//	auth.WithHeaderPolicy  the authentication mode's header rules
	//	withUnrouted           404 for the private groups and what no route serves; 400 for a target
	//	                       that is not a path
	//	withBodyLimit          413 for a body over Options.MaxRequestBodyBytes
	//	withUpgrades           genuine upgrades passed raw; other requests' upgrade headers removed
	//	withServing            each namespace served by its serving mode (Options.Namespaces; package
	//	                       cutover): where the request goes decided by it (cutover.Target)
	//	withAdapter            versions the backend does not serve converted in process (Options.Converter)
	//	withClass              the requests the Adapter makes itself, which are new requests, classified
	//	                       (a request classified already goes through)
	//	withTarget             where a request goes, for one withServing did not decide it for: from
	//	                       the private groups (route.go)
	//	s                      the dispatch on the class (ServeHTTP)
	//
	// The chain below withServing is the proxy's core: the merged cluster-wide lists and watches send
	// their private parts to it (package cutover).
	var handler http.Handler = s
	handler = s.withTarget(handler)
	handler = withClass(s.classifier, handler)
	handler = withAdapter(o.Converter, o.MaxRequestBodyBytes, handler)
	handler = s.withServing(handler)
	handler = withUpgrades(s.withTarget(s.upgrades), handler)
	handler = withBodyLimit(s.maxBody, handler)
	handler = withUnrouted(handler)
	handler = auth.WithHeaderPolicy(o.AuthMode, o.IdentityHeaderPrefixes, handler)
	handler = metrics.WithRequests(s.metrics, handler)
	handler = withClass(s.classifier, handler)
	handler = withLoopbackIdentity(!o.GzipLoopback, handler)
	handler = withAbort(handler)
	return handler, nil
}

// withAdapter puts package adapt's Adapter in front of next, which converts in process the versions of
// mapped kinds the backend does not serve; a nil converter leaves next as it is.
func withAdapter(c *convert.Converter, maxBody int64, next http.Handler) http.Handler {
	if c == nil {
		return next
	}
	return adapt.New(next, c, adapt.Options{MaxRequestBodyBytes: maxBody})
}

// ServeHTTP dispatches a classified request (the filters New lists ran before) by its class.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ex := exchangeFrom(r.Context())
	switch ex.req.Class {
	case classify.Webhook, classify.Admission:
		s.serveWebhooks(w, r)
	case classify.OpenAPI:
		s.openapi.ServeHTTP(w, r)
	case classify.Discovery:
		s.serveDiscovery(w, r, ex)
	case classify.CRD:
		s.prepareResource(r, ex)
		s.serveGroupNamed(w, r, ex, s.crdNamed)
	case classify.APIService:
		s.prepareResource(r, ex)
		s.serveGroupNamed(w, r, ex, s.apiServices)
	case classify.Unrouted:
		s.serveUnrouted(w, r, ex)
	default: // Mapped and Other; Private and Upgrade were answered by the filters.
		s.serveResource(w, r, ex)
	}
}

// serveWebhooks serves the proxy's webhooks (Options.Webhooks: the conversion webhook of the private
// CRDs, the admission webhooks of the private groups), or answers 404 when the proxy has none, as
// kube-apiserver answers a path it does not serve.
func (s *server) serveWebhooks(w http.ResponseWriter, r *http.Request) {
	if s.webhooks == nil {
		status.NotFound(w, r)
		return
	}
	s.webhooks.ServeHTTP(w, r)
}
