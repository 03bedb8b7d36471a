// Package adapt serves versions of a mapped kind that the backend does not serve, by converting in
// process. It is an http.Handler in front of the translating proxy (package server) and works in upstream
// terms only: when a client asks for cluster.x-k8s.io/v1beta2 machinepools and the backend's private CRD
// serves only v1beta1 (an older generation of the private CRDs), the request goes on to the proxy as a
// v1beta1 request, and the answer comes back converted to v1beta2, with upstream's own hub and spoke
// conversions (package convert), so that the client sees what a backend serving v1beta2 would send.
//
// What the backend serves comes from the proxy's aggregated discovery, read with the credentials of the
// requests that need it (see served); a resource version it serves, and every request the backend's
// discovery cannot be read for, pass through untouched. Discovery documents list, beside the versions the
// backend serves, every routed version upstream serves of a resource the backend serves at another
// version, so that clients map their kinds as they would on an up-to-date backend. A version upstream's
// CRD does not serve (translate.Route.Unserved, CAPA's v1beta1) is never served in process: kube-apiserver
// serving upstream's CRDs answers it 404.
//
// In that mode, per verb:
//
//   - get, list, watch, delete, deletecollection: the answer's objects (items, watch events, the objects of
//     Table rows) are converted; BOOKMARK events and lists get the client's apiVersion;
//   - create, update (also of status): the body is converted to the backend's version first; fields the
//     client's Go type lacks are treated as kube-apiserver treats them (fieldValidation);
//   - patch (JSON patch, merge patch): the proxy reads the object, converts it, applies the patch to the
//     client's version, converts it back and writes it with an update bearing the read resourceVersion,
//     and starts over on a conflict (up to 5 times) unless the patch itself set the resourceVersion;
//   - server-side apply is refused with 415: field ownership (metadata.managedFields) is recorded by the
//     backend against its version's fields, and an apply in another version would corrupt it;
//   - the scale subresource (autoscaling/v1 Scale) needs no conversion.
//
// managedFields are what the backend records: entries name the backend's version (cluster.x-k8s.io/v1beta1)
// and list that version's fields, under the client's manager name; the proxy passes them through
// unchanged. They stay correct for the backend, and a client that sends them back unchanged (as update
// does) changes nothing; they are not translated into the client's version.
//
// The conversion-data annotation that upstream's conversions keep lossy fields in is stored with the
// object in the backend's version and names upstream groups (see package convert).
//
// The Adapter's own requests to the proxy (reads of discovery, of the object a patch or a status write
// needs, the writes in the backend's version) are served in process (package internal/inprocess). When
// the proxy breaks off an answer the Adapter needs whole, the Adapter's functions return the error and
// the client's response is broken off too (inprocess.Abort, which package server's outermost stage
// carries out), as the proxy would break off that answer itself.
package adapt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/klog/v2"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
	"github.com/openshift/hypershift-capi-proxy/proxy/convert"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/inprocess"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/jsonx"
	"github.com/openshift/hypershift-capi-proxy/proxy/loglevel"
	"github.com/openshift/hypershift-capi-proxy/proxy/negotiate"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
	"github.com/openshift/hypershift-capi-proxy/proxy/stream"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Options configures the Adapter.
type Options struct {
	// DiscoveryTTL is how long a view of what the backend serves is used before it is read again. Zero
	// means DefaultDiscoveryTTL.
	DiscoveryTTL time.Duration
	// MaxRequestBodyBytes bounds a request body the Adapter reads to convert it. Zero means 3 MiB,
	// kube-apiserver's own limit.
	MaxRequestBodyBytes int64
}

// DefaultDiscoveryTTL is Options.DiscoveryTTL's default.
const DefaultDiscoveryTTL = 30 * time.Second

// maxPatchAttempts bounds the read-patch-update rounds of an emulated patch, as kube-apiserver bounds its
// own retries of a patch on conflicts.
const maxPatchAttempts = 5

// Adapter is the http.Handler. It is safe for concurrent use.
type Adapter struct {
	next       http.Handler
	converter  *convert.Converter
	table      *translate.Table
	classifier *classify.Classifier
	served     *served
	maxBody    int64
}

// New returns an Adapter in front of next, the translating proxy.
func New(next http.Handler, c *convert.Converter, o Options) *Adapter {
	if o.DiscoveryTTL <= 0 {
		o.DiscoveryTTL = DefaultDiscoveryTTL
	}
	if o.MaxRequestBodyBytes <= 0 {
		o.MaxRequestBodyBytes = 3 << 20
	}
	return &Adapter{
		next:       next,
		converter:  c,
		table:      c.Table(),
		classifier: classify.New(c.Table()),
		served:     &served{next: next, ttl: o.DiscoveryTTL},
		maxBody:    o.MaxRequestBodyBytes,
	}
}

// ServeHTTP serves a request: discovery and requests for a version the backend does not serve are the
// Adapter's, everything else goes on to next as it is. A response the Adapter cannot complete once next
// broke off an answer it needs (inprocess.ErrBrokenOff) is broken off too: inprocess.Abort hands it to
// the stage that made the request abortable (package server's outermost handler).
func (a *Adapter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := a.serve(w, r); err != nil {
		inprocess.Abort(r, err)
	}
}

// serve is ServeHTTP; the error, inprocess.ErrBrokenOff, says the response must be broken off, and
// nothing more is written.
func (a *Adapter) serve(w http.ResponseWriter, r *http.Request) error {
	req, ok := classify.FromContext(r.Context())
	if !ok {
		// The Adapter on its own, not behind the proxy's classification (server.New puts it there).
		c := a.classifier.Classify(r)
		req = &c
	}
	switch req.Class {
	case classify.Discovery:
		return a.discovery(gzipping(w, r), r, req)
	case classify.Mapped:
		if backend := a.backendRoute(r, req.Route); backend != nil {
			klog.V(loglevel.Debug).InfoS("Converting in process", "path", r.URL.Path, "verb", req.Verb, "backendVersion", backend.Upstream.Version)
			return a.convertInProcess(gzipping(w, r), r, req, backend)
		}
		// Served, as far as discovery told: should the backend answer that it serves no such resource (its
		// CRD changed since), read discovery again.
		w = &notFoundSniffer{ResponseWriter: w, served: a.served}
	}
	a.next.ServeHTTP(w, r)
	return nil
}

// backendRoute returns the route of the version to ask the backend for instead of route's, or nil when
// the backend serves route's version (or what it serves is unknown, or it serves no version of the
// resource), or when upstream does not serve route's version (translate.Route.Unserved): kube-apiserver
// serving upstream's CRD answers that 404, so the request goes on for the backend to answer.
func (a *Adapter) backendRoute(r *http.Request, route *translate.Route) *translate.Route {
	if route.Unserved {
		return nil
	}
	versions, known := a.served.versions(r, route.Upstream.GroupResource())
	if !known || len(versions) == 0 {
		return nil
	}
	if _, ok := versions[route.Upstream.Version]; ok {
		return nil
	}
	return a.choose(route, versions)
}

// choose returns, of the routes of route's kind at the versions the backend serves, the hub, or else the
// newest; nil if there is none.
func (a *Adapter) choose(route *translate.Route, versions map[string]apidiscoveryv2.APIResourceDiscovery) *translate.Route {
	var candidates []*translate.Route
	for _, v := range a.table.Versions(route.UpstreamGVK().GroupKind()) {
		if _, ok := versions[v.Upstream.Version]; ok && v.Upstream.Resource == route.Upstream.Resource {
			if v.Conversion == translate.Hub {
				return v
			}
			candidates = append(candidates, v)
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	sort.Slice(candidates, func(i, j int) bool {
		return version.CompareKubeAwareVersionStrings(candidates[i].Upstream.Version, candidates[j].Upstream.Version) > 0
	})
	return candidates[0]
}

// convertInProcess serves a request for route's version from backend's. The error is
// inprocess.ErrBrokenOff: an answer of next it needs was broken off, and it wrote nothing more.
func (a *Adapter) convertInProcess(w http.ResponseWriter, r *http.Request, req *classify.Request, backend *translate.Route) error {
	client := req.Route
	out := r.Clone(r.Context())
	prefix := "/apis/" + client.Upstream.Group + "/" + client.Upstream.Version + "/"
	rest, ok := strings.CutPrefix(r.URL.Path, prefix)
	if !ok {
		a.next.ServeHTTP(w, r) // classify accepted it, so this cannot happen; let the proxy answer
		return nil
	}
	retarget(out, "/apis/"+backend.Upstream.Group+"/"+backend.Upstream.Version+"/"+rest, out.URL.RawQuery)
	x := &exchange{a: a, client: client, backend: backend, req: req, ctx: r.Context()}

	if req.Subresource == "scale" {
		// autoscaling/v1 Scale is the same in every version.
		a.next.ServeHTTP(w, out)
		return nil
	}
	switch req.Verb {
	case "create", "update":
		return x.createOrUpdate(w, out)
	case "patch":
		return x.patch(w, out)
	default:
		return x.respond(w, out)
	}
}

// exchange is one request served in process.
type exchange struct {
	a               *Adapter
	client, backend *translate.Route
	req             *classify.Request
	// ctx is the client request's context, which upstream's conversion functions get.
	ctx context.Context
}

// conversionError is the Status of a failed conversion of a client's object: 422 Invalid, naming the
// object, versions and field (convert.Error).
func (x *exchange) conversionError(err error) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
		Message: err.Error(),
		Details: &metav1.StatusDetails{Group: x.client.Upstream.Group, Kind: x.client.Kind, Name: x.req.Name},
	}}
}

// writeError writes err, an API status, and returns nil; an error of a broken-off answer
// (inprocess.ErrBrokenOff) it returns, writing nothing.
func writeError(w http.ResponseWriter, err error) error {
	if errors.Is(err, inprocess.ErrBrokenOff) {
		return err
	}
	status.Write(w, err)
	return nil
}

// respond forwards r (already in the backend's version) and writes the answer in the client's version.
// The error is inprocess.ErrBrokenOff, for a single object's answer broken off.
func (x *exchange) respond(w http.ResponseWriter, r *http.Request) error {
	resp := serveStreamed(x.a.next, r)
	defer resp.Body.Close()
	if resp.Code == http.StatusNotFound && isResourceNotFound(resp) {
		// The backend stopped serving the version discovery said it served: read discovery again.
		x.a.served.invalidate()
	}
	if resp.Code >= http.StatusMultipleChoices || !negotiate.IsJSON(resp.Header.Get("Content-Type")) {
		copyHeader(w, resp.Header)
		if cl := resp.Header.Get("Content-Length"); cl != "" {
			w.Header().Set("Content-Length", cl)
		}
		w.WriteHeader(resp.Code)
		_, _ = io.Copy(w, resp.Body)
		return nil
	}
	objects := x.objects()
	switch {
	case x.req.Watch:
		copyHeader(w, resp.Header)
		w.WriteHeader(resp.Code)
		rc := http.NewResponseController(w)
		flush := func() error { return rc.Flush() }
		if err := stream.Watch(w, flush, resp.Body, objects); err != nil {
			klog.V(loglevel.Unusual).InfoS("Converting a watch in process ended it", "path", r.URL.Path, "err", err)
		}
	case x.req.AnswersList() && !asksTable(r):
		var buf bytes.Buffer
		if err := stream.List(&buf, resp.Body, objects); err != nil {
			status.Write(w, apierrors.NewInternalError(fmt.Errorf("converting the backend's list to %s: %w", x.client.Upstream.GroupVersion(), err)))
			return nil
		}
		writeBody(w, resp.Header, resp.Code, buf.Bytes())
	default:
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return fmt.Errorf("%w: reading the backend's answer: %w", inprocess.ErrBrokenOff, err)
		}
		if len(bytes.TrimSpace(data)) > 0 {
			if data, err = objects.Object(data); err != nil {
				status.Write(w, apierrors.NewInternalError(fmt.Errorf("converting the backend's answer to %s: %w", x.client.Upstream.GroupVersion(), err)))
				return nil
			}
		}
		writeBody(w, resp.Header, resp.Code, data)
	}
	return nil
}

// asksTable reports whether the backend answers r with a Table: kube-apiserver's answer says so only
// in its body (its Content-Type is plain application/json), so this asks what it negotiates for r's
// Accept header, narrowed as the proxy narrows it.
func asksTable(r *http.Request) bool {
	return negotiate.AsksTable(negotiate.Accept(r.Header.Values("Accept"), negotiate.CustomResource))
}

// isResourceNotFound reports whether a 404 is kube-apiserver's for an unknown resource (no details
// naming an object), rather than for a missing object. It peeks at the body without consuming it.
func isResourceNotFound(resp *inprocess.Streamed) bool {
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	resp.Body = readCloser{Reader: io.MultiReader(bytes.NewReader(data), resp.Body), closer: resp.Body}
	if err != nil {
		return false
	}
	var s metav1.Status
	return json.Unmarshal(data, &s) == nil && (s.Details == nil || s.Details.Name == "")
}

type readCloser struct {
	io.Reader
	closer io.Closer
}

func (r readCloser) Close() error { return r.closer.Close() }

// objects converts what an answer carries from the backend's version to the client's: objects of the kind
// (converted), Tables (the objects of their rows), anything else (Status, PartialObjectMetadata) as it
// is.
func (x *exchange) objects() stream.Objects {
	from, to := x.backend.Upstream.GroupVersion().String(), x.client.Upstream.GroupVersion().String()
	var object func([]byte) ([]byte, error)
	object = func(obj []byte) ([]byte, error) {
		var tm metav1.TypeMeta
		if err := json.Unmarshal(obj, &tm); err != nil {
			return nil, fmt.Errorf("decoding object: %w", err)
		}
		switch {
		case tm.APIVersion == from && tm.Kind == x.client.Kind:
			out, unknown, err := x.a.converter.Upstream(x.ctx, obj, to)
			if err == nil && len(unknown) > 0 {
				err = fmt.Errorf("the backend's object has fields the proxy's Go types lack, converting would drop them: %v", unknown)
			}
			return out, err
		case tm.Kind == "Table" && strings.HasPrefix(tm.APIVersion, "meta.k8s.io/"):
			return tableRows(obj, object)
		}
		return obj, nil
	}
	return stream.Objects{
		APIVersion: func(v string) string {
			if v == from {
				return to
			}
			return v
		},
		Object: object,
		Status: func(s []byte) ([]byte, error) { return s, nil },
	}
}

// tableRows converts the objects of a Table's rows with fn.
func tableRows(table []byte, fn func([]byte) ([]byte, error)) ([]byte, error) {
	v, err := jsonx.Decode(table)
	if err != nil {
		return nil, err
	}
	rows, _ := v.(map[string]any)["rows"].([]any)
	for _, row := range rows {
		r, ok := row.(map[string]any)
		if !ok || r["object"] == nil {
			continue
		}
		obj, err := jsonx.Encode(r["object"])
		if err != nil {
			return nil, err
		}
		if obj, err = fn(obj); err != nil {
			return nil, err
		}
		if r["object"], err = jsonx.Decode(obj); err != nil {
			return nil, err
		}
	}
	return jsonx.Encode(v)
}

// setBody replaces a request's body with (unencoded) JSON data.
func setBody(r *http.Request, data []byte) {
	body.SetRequest(r, body.JSON, data)
	r.Header.Del("Content-Encoding")
}

// notFoundSniffer passes a response through, and invalidates the view of what the backend serves when
// the response is kube-apiserver's 404 for an unknown resource.
type notFoundSniffer struct {
	http.ResponseWriter
	served   *served
	notFound bool
	checked  bool
}

func (s *notFoundSniffer) WriteHeader(code int) {
	s.notFound = code == http.StatusNotFound
	s.ResponseWriter.WriteHeader(code)
}

func (s *notFoundSniffer) Write(p []byte) (int, error) {
	if s.notFound && !s.checked {
		s.checked = true
		var st metav1.Status
		if json.Unmarshal(bytes.TrimSpace(p), &st) == nil && st.Kind == "Status" && (st.Details == nil || st.Details.Name == "") {
			s.served.invalidate()
		}
	}
	return s.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the underlying writer's Flush.
func (s *notFoundSniffer) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// retarget points a clone of a served request at another path and query, keeping RequestURI (which
// handlers behind the Adapter may log) in step with URL.
func retarget(r *http.Request, path, rawQuery string) {
	r.URL.Path, r.URL.RawPath, r.URL.RawQuery = path, "", rawQuery
	r.RequestURI = r.URL.RequestURI()
}
