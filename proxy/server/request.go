package server

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httputil"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openshift/hypershift-capi-proxy/proxy/accessreview"
	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/body/jsonpatch"
	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
	"github.com/openshift/hypershift-capi-proxy/proxy/discovery"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/gzip"
	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/proxy/negotiate"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// The request stage: what the proxy does to a request before it forwards it.

// serveResource serves a Mapped or Other request: its query and body translated to the private groups, it
// is forwarded, and its answer translated back (translateResponse, called by modifyResponse). A connect
// subresource is forwarded as it is.
func (s *server) serveResource(w http.ResponseWriter, r *http.Request, ex *exchange) {
	req := ex.req
	if req.Connect {
		// A pod's, service's or node's proxy, exec or attach without an upgrade: the bytes of whatever it
		// reaches, both ways.
		s.proxy.ServeHTTP(w, r)
		return
	}
	if !req.IsResource && r.URL.Path == apiserverMetricsPath && r.Method == http.MethodGet {
		s.serveAPIServerMetrics(w, r, ex)
		return
	}
	if req.IsResource {
		s.prepareResource(r, ex)
	}
	untranslated := ex.target.UntranslatedRequest()
	if req.Verb == "create" && accessreview.IsAccessReview(schema.GroupResource{Group: req.Group, Resource: req.Resource}) {
		upstream, ok := s.prepareAccessReview(w, r, ex)
		if !ok {
			return
		}
		untranslated = untranslated || upstream
	}
	if untranslated {
		// A namespace served from the upstream groups (package cutover): its references to them stay so.
		if err := s.bufferBody(r); err != nil {
			status.Write(w, err)
			return
		}
	} else {
		if err := translateQuery(r, req); err != nil {
			status.Write(w, err)
			return
		}
		if err := s.translateRequest(r, ex); err != nil {
			s.translationFailed(ex, metrics.Request, err)
			status.Write(w, err)
			return
		}
	}
	ex.respond = s.recordFailure(ex, func(resp *http.Response) error { return s.translateResponse(ex, resp) })
	if ex.rulesReview != nil {
		ex.respond = s.recordFailure(ex, func(resp *http.Response) error {
			if err := rulesReviewServed(resp, *ex.rulesReview); err != nil {
				return err
			}
			return s.translateResponse(ex, resp)
		})
	}
	if req.Watch {
		s.serveWatch(w, r, ex)
		return
	}
	s.proxy.ServeHTTP(w, r)
}

// serveUnrouted serves what no route serves in a mapped group at the same path in the private group, where
// nothing serves it either, so that the client gets the backend's own answer: its 404 (or its 403 for a
// client that may not ask), with every header kube-apiserver sets. Nothing can change there: a write is
// sent as a dry run, and should the backend answer with anything but an error (a private CRD that serves
// what upstream does not), the client gets kube-apiserver's 404 instead.
func (s *server) serveUnrouted(w http.ResponseWriter, r *http.Request, ex *exchange) {
	if err := s.bufferBody(r); err != nil {
		status.Write(w, err)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		q := r.URL.Query()
		q.Set("dryRun", metav1.DryRunAll)
		r.URL.RawQuery = q.Encode()
	}
	ex.respond = s.recordFailure(ex, func(resp *http.Response) error {
		if resp.StatusCode < http.StatusBadRequest {
			_ = resp.Body.Close()
			notFound(resp)
			return nil
		}
		upstreamWarnings(resp)
		translateStatus := s.bodies.Upstream
		switch contentType := resp.Header.Get("Content-Type"); {
		case negotiate.IsProtobuf(contentType):
			// The client's Accept is forwarded as it is: the Status may be protobuf.
			translateStatus = s.bodies.ProtobufUpstreamOf(schema.GroupResource{})
		case !negotiate.IsJSON(contentType):
			return nil
		}
		if err := gzip.Decompress(resp); err != nil {
			return err
		}
		return replaceBody(resp, translateStatus)
	})
	s.proxy.ServeHTTP(w, r)
}

// prepareResource negotiates what the backend answers a resource request in. CBOR and YAML cannot be
// translated, nor protobuf of kinds the proxy does not know: Accept is narrowed to JSON, keeping the shape
// asked for (as=Table, PartialObjectMetadata, ...), and protobuf is kept where the proxy translates it
// (negotiate.AcceptProtobuf): the built-in kinds it knows (body.DecodesProtobuf), and PartialObjectMetadata of any
// resource; when the backend can serve no range, it answers its own 406. This holds for every resource,
// since any object's ownerReferences may point at a mapped group (a Secret owned by a Cluster); client-go
// decodes the answer by its Content-Type. CRDs and APIServices (whose answers package groupnamed rewrites
// in JSON) and watches over a websocket (whose frames translateWebSocket translates in JSON) are narrowed to
// JSON. An answer
// kube-apiserver would write in YAML is translated in JSON and written in YAML (exchange.yaml). The
// backend is asked for a gzip'ed list (listsGzip) and an uncompressed single object; the translation is
// compressed for a client that accepts gzip if it is large (gzip.Compress), as kube-apiserver compresses
// it. A client that accepts gzip asking for a resource of no mapped group makes the proxy ask for gzip,
// to pass the answer through as it is when it names no private group (gzip.PassThrough).
func (s *server) prepareResource(r *http.Request, ex *exchange) {
	endpoint := negotiate.Resource
	if ex.req.Class == classify.Mapped {
		endpoint = negotiate.CustomResource
	}
	ex.yaml = !ex.req.Watch && negotiate.AnswersYAML(r.Header.Values("Accept"), endpoint)
	if ex.req.Class == classify.CRD || ex.req.Class == classify.APIService || ex.req.WebSocket {
		negotiate.Narrow(r.Header, endpoint)
	} else {
		negotiate.NarrowProtobuf(r.Header, endpoint, ex.req.Class != classify.Mapped &&
			body.DecodesProtobuf(schema.GroupVersionResource{Group: ex.req.Group, Version: ex.req.Version, Resource: ex.req.Resource}))
	}
	ex.gzip = gzip.Accepts(r.Header)
	// Named, so that the transport neither asks for gzip itself nor decompresses. A compressed answer
	// that needs no translation is passed through (gzip.PassThrough).
	if asksBackendGzip(ex) || listsGzip(ex) {
		r.Header.Set("Accept-Encoding", "gzip")
	} else {
		r.Header.Set("Accept-Encoding", "identity")
	}
}

// asksBackendGzip reports whether the proxy asks the backend for a gzip'ed answer to a resource
// request, to pass it through (gzip.PassThrough): for a client that accepts gzip, a resource of no
// mapped group, answered in JSON (not a YAML answer written from JSON), not a long-running request.
func asksBackendGzip(ex *exchange) bool {
	return ex.gzip && !ex.yaml && ex.req.Class == classify.Other && !ex.req.LongRunning && !ex.target.UntranslatedRequest()
}

// listsGzip reports whether the proxy asks the backend for a gzip'ed list (kube-apiserver compresses
// one larger than 128 KiB), which it decompresses to translate, as the standard library's transport
// does for a bare reverse proxy: a 10k Machine list is 2.4 MB instead of 60 MB on the link, a
// twenty-fifth of the TLS records, HTTP/2 frames and wake-ups of the transport's reader, and of the
// data the transport buffers for a stream (peak RSS), for a decompression of about the same CPU.
func listsGzip(ex *exchange) bool {
	return ex.req.Verb == "list" && !ex.req.LongRunning
}

// serveDiscovery serves /apis, /apis/<mapped group> and /apis/<mapped group>/<version>: the backend's
// document of the private groups, asked for in JSON, rewritten and written in the media type
// kube-apiserver would answer the client in (discoveryResponse).
func (s *server) serveDiscovery(w http.ResponseWriter, r *http.Request, ex *exchange) {
	ex.answer = negotiate.Answer(r.Header.Values("Accept"), negotiate.Discovery)
	discovery.Request(r.Header)
	ex.gzip = gzip.Accepts(r.Header)
	r.Header.Del("Accept-Encoding")
	ex.respond = s.recordFailure(ex, s.discoveryResponse)
	s.proxy.ServeHTTP(w, r)
}

// translateRequest translates the body of a create, update or patch in place, along the group-carrying
// paths of what it holds (requestPaths), every other byte kept: see body.ObjectToPrivate and
// body.PatchToPrivate for the media types. A body that cannot be parsed is forwarded as it is, so that the
// client gets the apiserver's own error. A body the proxy changed is kept in ex (sentBody), so that the
// backend's errors quoting it quote the client's. The error is an API status.
func (s *server) translateRequest(r *http.Request, ex *exchange) error {
	req := ex.req
	if !req.IsResource || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	if req.LongRunning {
		// The bodies of the connect subresources (a service's or pod's proxy, exec, attach) are the
		// client's own bytes for whatever they reach.
		return nil
	}
	if !req.SendsObject() {
		// delete and deletecollection carry DeleteOptions, which name no group.
		return s.bufferBody(r)
	}
	data, err := body.ReadRequest(r, s.maxBody)
	if err != nil {
		return err
	}
	contentType := r.Header.Get("Content-Type")
	done := s.metrics.TimeTranslation(req, metrics.Request)
	var (
		out     []byte
		outType string
	)
	if req.Verb == "patch" {
		paths := s.requestPaths(req, "", "")
		out, outType, err = body.PatchToPrivate(contentType, data, paths)
		if errors.Is(err, jsonpatch.ErrObjectNeeded) {
			outType = contentType
			if out, err = jsonpatch.Resolve(data, paths, s.patchedObject(r, ex.target.BackendPath)); err != nil {
				// Unreachable: PatchToPrivate parsed the patch.
				err = apierrors.NewBadRequest(err.Error())
			}
		}
	} else {
		out, outType, err = body.ObjectToPrivate(contentType, data, func(apiVersion, kind string) (*translate.Node, error) {
			return s.requestPaths(req, apiVersion, kind), nil
		})
	}
	done()
	if err != nil {
		return err
	}
	if !bytes.Equal(out, data) {
		ex.sent = &sentBody{clientType: contentType, client: data, sentType: outType, sent: out}
	}
	body.SetRequest(r, outType, out)
	return nil
}

// patchedObject reads, on behalf of the client, the object a patch applies to as the backend holds it (in
// JSON, at the request's path in the private group), for jsonpatch.Resolve; nil where the backend
// does not answer it (the object is missing, the client may not read it).
func (s *server) patchedObject(r *http.Request, backendPath string) []byte {
	resp, data, err := s.backendGet(r, backendPath, body.JSON, "")
	if err != nil || resp.StatusCode != http.StatusOK || !negotiate.IsJSON(resp.Header.Get("Content-Type")) {
		return nil
	}
	return data
}

// sentBody is a request body the proxy changed before forwarding it: as the client sent it and as the
// backend got it, each with its Content-Type.
type sentBody struct {
	clientType, sentType string
	client, sent         []byte
}

// errorStatus returns the translation of the backend's error Status for the request of ex: where the
// request's body was changed (ex.sent), a message quoting the body as the backend got it quotes the
// client's instead (body.Quotes, status.TranslateQuoting); else, or for a body that is no Status, upstream.
func errorStatus(ex *exchange, upstream func([]byte) ([]byte, error)) func([]byte) ([]byte, error) {
	sent := ex.sent
	if sent == nil {
		return upstream
	}
	return func(data []byte) ([]byte, error) {
		if translate.Valid(data) != nil {
			return upstream(data)
		}
		tm := translate.TopLevelStrings(data, "apiVersion", "kind")
		if tm[0] != "v1" || tm[1] != "Status" {
			return upstream(data)
		}
		return status.TranslateQuoting(translate.ToUpstream, data, body.Quotes(sent.clientType, sent.client, sent.sentType, sent.sent))
	}
}

// bufferBody reads a request body (of at most the proxy's limit) before the request is forwarded. Over
// HTTP/2 a backend may answer before it reads the body (a 404, a 403); forwarding a body still streaming
// from the client then leaves the proxy's transport waiting for the rest of it while the client waits for
// the answer. The error is an API status (413, 400).
func (s *server) bufferBody(r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	data, err := body.ReadRequest(r, s.maxBody)
	if err != nil {
		return err
	}
	body.SetRequest(r, r.Header.Get("Content-Type"), data)
	return nil
}

// requestPaths returns the group-carrying paths of a request body: for an object or status of a mapped
// kind, those of the routed kind the object's own apiVersion and kind name (the backend answers a mismatch
// with the path as kube-apiserver would), else of the request's route; for anything else (a built-in
// resource, the scale subresource's autoscaling/v1 Scale) body.RequestPaths. apiVersion and kind are the
// body's, empty for a patch.
func (s *server) requestPaths(req *classify.Request, apiVersion, kind string) *translate.Node {
	if req.Class != classify.Mapped || (req.Subresource != "" && req.Subresource != "status") {
		return body.RequestPaths(schema.GroupResource{Group: req.Group, Resource: req.Resource})
	}
	if route, ok := s.bodies.RouteOf(apiVersion, kind); ok {
		return route.Paths
	}
	return req.Route.Paths
}

// rewrite points the outbound request at the backend, at its target's backendPath (the private group
// for a mapped resource). The query is kept as it is; the Host header becomes the backend's;
// client-provided X-Forwarded-* and Forwarded headers were removed by ReverseProxy.
func (s *server) rewrite(pr *httputil.ProxyRequest) {
	ex := exchangeFrom(pr.In.Context())
	out := pr.Out
	out.URL.Scheme, out.URL.Host = s.backend.Scheme, s.backend.Host
	if path := ex.target.BackendPath; s.backend.Path != "" || path != pr.In.URL.Path {
		out.URL.Path = joinPath(s.backend.Path, path)
		out.URL.RawPath = ""
	}
	out.Host = ""
}

// translateQuery translates the query parameters of a resource request that can name a group: the
// fieldSelector of a list, watch or deletecollection of a resource that selects on a group-carrying
// field (Events by involvedObject.apiVersion). The error is an API status.
func translateQuery(r *http.Request, req *classify.Request) error {
	if !req.Selects() {
		return nil
	}
	q := r.URL.Query()
	selector := q.Get("fieldSelector")
	if selector == "" {
		return nil
	}
	out, err := body.FieldSelector(translate.ToPrivate, schema.GroupResource{Group: req.Group, Resource: req.Resource}, selector)
	if err != nil || out == selector {
		return err
	}
	q.Set("fieldSelector", out)
	r.URL.RawQuery = q.Encode()
	return nil
}
