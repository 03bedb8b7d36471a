// Package server is the translating reverse proxy: an http.Handler in front of kube-apiserver whose
// clients speak the upstream Cluster API groups (cluster.x-k8s.io, ...) while the backend stores the
// private twins (cluster.hypershift.openshift.io, ...).
//
// A request's way, top to bottom in this file:
//
//  1. classify (package classify, in withClass): mapped resource, discovery, private group, upgrade or
//     anything else, with the route of a mapped resource and the path to send;
//  2. translate the request: the path to the private group, the body (typed for whole objects, along the
//     route's paths for patches, metadata only for other resources), Accept narrowed to JSON;
//  3. forward it with httputil.ReverseProxy over client-go's transport, unbuffered (FlushInterval -1);
//  4. translate the response: Warning headers, Status bodies, single objects, and lists and watches
//     streamed object by object (package stream).
//
// customresourcedefinitions take their own way (crd.go, package crd): the private CRDs are served under
// their upstream names. So do the OpenAPI documents (openapi.go, package openapi), translated once per
// backend version and served in JSON or protobuf.
//
// Authentication is the backend's: in pass-through mode the proxy uses only the backend's address and TLS
// trust and forwards the client's Authorization header unchanged; in sidecar mode it uses the pod's own
// credentials. Either way a client can never do through the proxy what the apiserver would refuse it (or
// the pod); package auth holds the rules, including those for impersonation and front-proxy headers.
//
// Faults: an unreachable backend is answered with 503 at once (connection refused) or after
// Options.DialTimeout; a backend that sends no response headers within Options.ResponseHeaderTimeout
// with 504 (long-running requests exempt); a watch whose backend stream breaks off is ended cleanly at an
// event boundary, as kube-apiserver ends a watch that times out, so that client-go watches again (and
// re-lists if the backend lost the resourceVersion); a create, update, patch or delete whose declared
// Content-Length exceeds Options.MaxRequestBodyBytes is answered with 413 before it is read.
//
// Errors the proxy makes are JSON metav1.Status: 400 for a malformed request body or a request target
// that is not a path, 403 for impersonation in sidecar mode, 413 for a body over
// Options.MaxRequestBodyBytes, 415 for a body of a mapped resource it cannot translate, 404 for a resource
// of a mapped group that no route serves, 503 when the backend is unreachable, 504 when it sends no
// response headers in time, 500 when the backend's response cannot be translated. A list whose translation fails after its first 32 KiB were sent is cut
// off (the client sees a truncated body); a watch ends with an ERROR event.
//
// Protobuf and CBOR: Accept is narrowed to JSON for every resource request (client-go decodes the answer
// by its Content-Type); a protobuf or CBOR request body is transcoded to JSON when it must be translated
// (always for a mapped resource, else when it names a mapped group) and forwarded untouched otherwise.
// Table cells are printed text: private group names in them are replaced whole (body.Translator).
//
// gzip: the backend leg is gzip'ed by the transport and decompressed for translation; a translated answer
// larger than 128 KiB is gzip'ed again for a client that accepts it, as kube-apiserver does (watches are
// not); an answer the proxy passes through keeps the backend's encoding.
package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/openshift/hypershift-capi-proxy/proxy/auth"
	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
	"github.com/openshift/hypershift-capi-proxy/proxy/crd"
	"github.com/openshift/hypershift-capi-proxy/proxy/discovery"
	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/proxy/negotiate"
	"github.com/openshift/hypershift-capi-proxy/proxy/openapi"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
	"github.com/openshift/hypershift-capi-proxy/proxy/stream"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Options configures the proxy.
type Options struct {
	// Backend is the kube-apiserver to forward to. In pass-through mode only its address (Host, with an
	// optional path prefix) and TLS trust settings (CAFile, CAData, ServerName, Insecure) are used, its
	// credentials (bearer token, client certificate, exec plugin, impersonation, wrapping transports)
	// never are; in sidecar mode its credentials are used for every request.
	Backend *rest.Config
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
)

// server holds what every request needs; it is the innermost handler.
type server struct {
	backend    *url.URL
	classifier *classify.Classifier
	bodies     *body.Translator
	discovery  *discovery.Rewriter
	crds       *crd.Names
	openapi    *openapi.Rewriter
	// openapiDocs holds the translated OpenAPI documents, by backend path.
	openapiDocs *openapi.Cache
	maxBody     int64
	metrics     *metrics.Metrics
	// proxy forwards every request but upgrades; upgrades forwards connection upgrades over HTTP/1.1.
	proxy, upgrades *httputil.ReverseProxy
}

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
	b, err := newBackend(o.Backend, o.AuthMode, o.DialTimeout)
	if err != nil {
		return nil, err
	}
	s := &server{
		backend:     b.url,
		classifier:  classify.New(o.Routes),
		bodies:      body.New(o.Routes),
		discovery:   discovery.New(o.Routes),
		crds:        crd.New(o.Routes),
		openapi:     openapi.New(o.Routes),
		openapiDocs: openapi.NewCache(),
		maxBody:     o.MaxRequestBodyBytes,
		metrics:     o.Metrics,
	}
	s.proxy = &httputil.ReverseProxy{
		Rewrite:        s.rewrite,
		Transport:      &headerTimeout{next: b.transport, timeout: o.ResponseHeaderTimeout},
		FlushInterval:  -1,
		ModifyResponse: modifyResponse,
		ErrorHandler:   proxyError,
		ErrorLog:       klog.NewStandardLogger("WARNING"),
	}
	s.upgrades = &httputil.ReverseProxy{
		Rewrite:       s.rewrite,
		Transport:     b.upgradeTransport,
		FlushInterval: -1,
		ErrorHandler:  proxyError,
		ErrorLog:      klog.NewStandardLogger("WARNING"),
	}
	return withClass(s.classifier,
		withMetrics(s.metrics,
			auth.WithHeaderPolicy(o.AuthMode, o.IdentityHeaderPrefixes,
				withUnrouted(
					withBodyLimit(s.maxBody,
						withUpgrades(s.upgrades, s)))))), nil
}

// ServeHTTP serves a classified request (the wrappers New lists ran before).
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ex := exchangeFrom(r.Context())
	req := ex.req
	if !req.IsResource && strings.HasPrefix(r.URL.Path, "/openapi/") && s.serveOpenAPI(w, r) {
		return
	}
	switch req.Class {
	case classify.Discovery:
		discovery.Request(r.Header)
		ex.gzip = acceptsGzip(r.Header)
		r.Header.Del("Accept-Encoding")
		ex.respond = s.recordFailure(ex, s.discoveryResponse)
		s.proxy.ServeHTTP(w, r)
		return
	}

	// Translate the request.
	if req.IsResource {
		// Protobuf, CBOR and YAML cannot be translated: ask for JSON, keeping the shape asked for (as=Table,
		// PartialObjectMetadata, ...); when the backend can serve no range, it answers its own 406
		// (negotiate.Accept).
		// This holds for every resource, since any object's ownerReferences may point at a mapped group (a
		// Secret owned by a Cluster); client-go decodes the JSON answer by its Content-Type.
		endpoint := negotiate.Resource
		if req.Class == classify.Mapped {
			endpoint = negotiate.CustomResource
		}
		negotiate.Narrow(r.Header, endpoint)
		// Let the transport negotiate gzip with the backend and decompress it before translation; the
		// translation is compressed for the client again if it is large (compress.go).
		ex.gzip = acceptsGzip(r.Header)
		r.Header.Del("Accept-Encoding")
		if req.Group == crd.Resource.Group && req.Resource == crd.Resource.Resource {
			s.serveCRD(w, r, ex)
			return
		}
	}
	if err := translateQuery(r, req); err != nil {
		status.Write(w, err)
		return
	}
	if err := s.translateRequest(r, req); err != nil {
		s.translationFailed(ex, metrics.Request, err)
		status.Write(w, err)
		return
	}

	// Forward, and translate the response (modifyResponse calls ex.respond).
	ex.respond = s.recordFailure(ex, func(resp *http.Response) error { return s.translateResponse(ex, resp) })
	s.proxy.ServeHTTP(w, r)
}

// translateRequest translates the body of a create, update or patch in place, along the group-carrying
// paths of what it holds (requestPaths), every other byte kept: see body.ObjectToPrivate and
// body.PatchToPrivate for the media types. A body that cannot be parsed is forwarded as it is, so that the
// client gets the apiserver's own error. The error is an API status.
func (s *server) translateRequest(r *http.Request, req classify.Request) error {
	if !req.IsResource || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	if req.Verb != "create" && req.Verb != "update" && req.Verb != "patch" || req.LongRunning {
		// delete and deletecollection carry DeleteOptions, which name no group; the bodies of the connect
		// subresources (a service's or pod's proxy, exec, attach) are the client's own bytes for whatever
		// they reach.
		return nil
	}
	data, err := body.ReadRequest(r, s.maxBody)
	if err != nil {
		return err
	}
	contentType := r.Header.Get("Content-Type")
	done := s.timeTranslation(req, metrics.Request)
	var (
		out     []byte
		outType string
	)
	if req.Verb == "patch" {
		out, outType, err = body.PatchToPrivate(contentType, data, s.requestPaths(req, "", ""))
	} else {
		out, outType, err = body.ObjectToPrivate(contentType, data, func(apiVersion, kind string) *translate.Node {
			return s.requestPaths(req, apiVersion, kind)
		})
	}
	done()
	if err != nil {
		return err
	}
	body.SetRequest(r, outType, out)
	return nil
}

// requestPaths returns the group-carrying paths of a request body: for an object or status of a mapped
// kind, those of the routed kind the object's own apiVersion and kind name (the backend answers a mismatch
// with the path as kube-apiserver would), else of the request's route; for anything else (a built-in
// resource, the scale subresource's autoscaling/v1 Scale) body.RequestPaths. apiVersion and kind are the
// body's, empty for a patch.
func (s *server) requestPaths(req classify.Request, apiVersion, kind string) *translate.Node {
	if req.Class != classify.Mapped || (req.Subresource != "" && req.Subresource != "status") {
		return body.RequestPaths(schema.GroupResource{Group: req.Group, Resource: req.Resource})
	}
	if route, ok := s.bodies.RouteOf(apiVersion, kind); ok {
		return route.Paths
	}
	return req.Route.Paths
}

// rewrite points the outbound request at the backend, at the path classification chose (the private
// group for a mapped resource). The query is kept as it is; the Host header becomes the backend's;
// client-provided X-Forwarded-* and Forwarded headers were removed by ReverseProxy.
func (s *server) rewrite(pr *httputil.ProxyRequest) {
	ex := exchangeFrom(pr.In.Context())
	out := pr.Out
	out.URL.Scheme, out.URL.Host = s.backend.Scheme, s.backend.Host
	if s.backend.Path != "" || ex.req.BackendPath != pr.In.URL.Path {
		out.URL.Path = joinPath(s.backend.Path, ex.req.BackendPath)
		out.URL.RawPath = ""
	}
	out.Host = ""
}

// translateResponse translates the backend's response to a Mapped or Other request, in place.
func (s *server) translateResponse(ex *exchange, resp *http.Response) error {
	return s.translateObjects(ex, resp, s.bodies.UpstreamOf(schema.GroupResource{Group: ex.req.Group, Resource: ex.req.Resource}))
}

// translateObjects translates the backend's response to a resource request, in place: the objects it
// holds (the object, a list's items, watch events' objects) with upstream, Status bodies and Warning
// headers by their own rules. Translations are timed and their errors counted (s.timed, s.streamed).
func (s *server) translateObjects(ex *exchange, resp *http.Response, upstream func([]byte) ([]byte, error)) error {
	req := ex.req
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return s.translateWebSocket(ex, resp, upstream) // a watch over a websocket (websocket.go)
	}
	status.Warnings(translate.ToUpstream, resp.Header["Warning"])
	if !req.IsResource || !negotiate.IsJSON(resp.Header.Get("Content-Type")) {
		return nil
	}
	if err := gunzip(resp); err != nil {
		return err
	}
	upstream = s.timed(req, upstream)
	statusUpstream := s.timed(req, s.bodies.Upstream)
	objects := stream.Objects{
		APIVersion: translate.ToUpstream.APIVersion,
		Object:     upstream,
		Status:     statusUpstream,
	}
	switch {
	case resp.StatusCode >= http.StatusMultipleChoices:
		// An error: a Status.
		return replaceBody(resp, statusUpstream)
	case req.Watch:
		return streamBody(resp, false, s.streamed(ex, func(dst io.Writer, flush func() error, src io.Reader) error {
			return stream.Watch(dst, flush, src, objects)
		}))
	case (req.Verb == "list" || req.Verb == "deletecollection") && !negotiate.AsksTable(resp.Request.Header.Get("Accept")):
		return streamBody(resp, true, s.streamed(ex, func(dst io.Writer, _ func() error, src io.Reader) error {
			return stream.List(dst, src, objects)
		}))
	default:
		// A single object, a Status, or a Table.
		return replaceBody(resp, upstream)
	}
}

// discoveryResponse rewrites a discovery document (or translates the Status of a failed request).
func (s *server) discoveryResponse(resp *http.Response) error {
	status.Warnings(translate.ToUpstream, resp.Header["Warning"])
	discovery.Response(resp.Header)
	if !negotiate.IsJSON(resp.Header.Get("Content-Type")) {
		return nil
	}
	if err := gunzip(resp); err != nil {
		return err
	}
	if resp.StatusCode >= http.StatusMultipleChoices {
		return replaceBody(resp, s.bodies.Upstream)
	}
	return replaceBody(resp, s.discovery.Rewrite)
}

// proxyError answers a request the proxy could not complete: the Status a response translation failed
// with, 504 Timeout when the backend sent no response headers in time (headerTimeout), or 503
// ServiceUnavailable when the backend could not be reached or broke off.
func proxyError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		klog.V(4).InfoS("Client went away", "path", r.URL.Path, "err", err)
		return
	}
	var apiErr *apierrors.StatusError
	if errors.As(err, &apiErr) {
		klog.V(2).InfoS("Answering with the proxy's own error", "path", r.URL.Path, "err", err)
		status.Write(w, apiErr)
		return
	}
	klog.V(2).InfoS("Backend unavailable", "path", r.URL.Path, "err", err)
	status.Write(w, apierrors.NewServiceUnavailable(fmt.Sprintf("the backend kube-apiserver is unavailable: %v", err)))
}

// modifyResponse runs the response step the request's exchange chose, if any.
func modifyResponse(resp *http.Response) error {
	ex := exchangeFrom(resp.Request.Context())
	if ex == nil || ex.respond == nil {
		return nil
	}
	if err := ex.respond(resp); err != nil {
		return err
	}
	if ex.gzip && !ex.req.Watch {
		return compress(resp)
	}
	return nil
}
