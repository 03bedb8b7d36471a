package server

// The response stage: what the proxy does to the backend's answer before the client gets it.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/net/http2"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/cutover"
	"github.com/openshift/hypershift-capi-proxy/proxy/discovery"
	"github.com/openshift/hypershift-capi-proxy/proxy/groupnames"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/gzip"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/inprocess"
	"github.com/openshift/hypershift-capi-proxy/proxy/loglevel"
	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/proxy/negotiate"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
	"github.com/openshift/hypershift-capi-proxy/proxy/stream"
	"github.com/openshift/hypershift-capi-proxy/translate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"
)

// streamBufferSize is how much of a list is translated before its response starts (listBody): a list
// that fails within it is answered with a Status.
const streamBufferSize = 32 << 10

// decompress passes a compressed answer that needs no translation through (gzip.PassThrough) where the
// proxy asked for one to that end (asksBackendGzip), and reports whether it did; otherwise, or if it could
// not, the body is decompressed in place (gzip.Decompress).
func decompress(ex *exchange, resp *http.Response) (passed bool, err error) {
	if asksBackendGzip(ex) {
		return gzip.PassThrough(resp)
	}
	return false, gzip.Decompress(resp)
}

// replaceBody reads the whole response body (in one allocation where it declares its length,
// body.ReadAll), translates it with fn and sets the result with its Content-Length. An empty body is left alone. A read failure is a 503, a translation failure a 500 whose
// message says what the backend sent that could not be translated.
func replaceBody(resp *http.Response, fn func([]byte) ([]byte, error)) error {
	data, err := body.ReadAll(resp.Body, resp.ContentLength)
	_ = resp.Body.Close()
	if err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("reading the backend's response: %v", err))
	}
	out := data
	if len(bytes.TrimSpace(data)) > 0 {
		if out, err = fn(data); err != nil {
			return apierrors.NewInternalError(fmt.Errorf("translating the backend's response: %w", err))
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(out))
	resp.ContentLength = int64(len(out))
	resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
	return nil
}

// listBody replaces the body of a list with its translation, read item by item as the reverse proxy
// copies it to the client (stream.ListReader): nothing is held but the item being translated and one
// copy buffer of output, and no goroutine or pipe stands between the backend and the client. The first
// streamBufferSize of output is translated before the response starts, so that a list that cannot be
// translated that far (a malformed one, one small enough to fit) is answered with a clean 500 Status; a
// failure after that can only break the connection off (ReverseProxy aborts the response). A failure
// is counted unless reading the backend failed.
func (s *server) listBody(ex *exchange, resp *http.Response, objects stream.Objects) error {
	src := resp.Body
	in := &sourceReader{r: src}
	body := &listReader{ListReader: stream.NewListReader(in, objects), failed: func(err error) {
		if in.err == nil || errors.Is(in.err, io.EOF) {
			s.translationFailed(ex, metrics.Response, apierrors.NewInternalError(err))
		}
	}}
	if err := body.Prime(streamBufferSize); err != nil {
		_ = src.Close()
		body.failed(err)
		return apierrors.NewInternalError(fmt.Errorf("translating the backend's response: %w", err))
	}
	resp.Body = &readCloser{Reader: body, close: src.Close}
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	return nil
}

// listReader is a stream.ListReader that reports its failure once.
type listReader struct {
	*stream.ListReader
	failed   func(error)
	reported bool
}

func (r *listReader) Read(p []byte) (int, error) {
	n, err := r.ListReader.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && !r.reported {
		r.reported = true
		r.failed(err)
	}
	return n, err
}

// watchBody replaces the body of a watch with its translation, read event by event as the reverse
// proxy copies it to the client (stream.WatchReader): an open watch holds no goroutine, pipe or output
// buffer of its own, only the event being read. With ex.sharedScope set, whole events' translations are
// shared with the other watches of the resource (stream.NewSharedWatchReader). A watch whose backend stream breaks off (the backend
// restarted, its connection dropped) ends cleanly, at the last whole event, as kube-apiserver ends a
// watch that times out: client-go's reflector then watches again from the last resourceVersion it saw,
// and lists again if the backend no longer has it, whereas an aborted response would surface as a
// decoding error. A translation failure ends it after an ERROR event, and is counted.
func (s *server) watchBody(ex *exchange, resp *http.Response, objects stream.Objects) {
	s.watchStream(ex, resp, func(in io.Reader) watchReader {
		if ex.sharedScope != "" {
			return stream.NewSharedWatchReader(in, objects, s.sharedWatch, "event "+ex.sharedScope)
		}
		return stream.NewWatchReader(in, objects)
	})
}

// watchReader is a translated watch read event by event (stream.WatchReader, stream.ProtobufWatchReader).
type watchReader interface {
	io.Reader
	// Err says why the stream ended: nil at its end, the source's error, or a translation failure.
	Err() error
	// Idle reports whether the reader holds nothing of the stream: its next Read reads its source.
	Idle() bool
}

// protobufWatchBody is watchBody for a protobuf watch (stream.ProtobufWatchReader): each event's object is
// translated with object.
func (s *server) protobufWatchBody(ex *exchange, resp *http.Response, object func([]byte) ([]byte, error)) {
	s.watchStream(ex, resp, func(in io.Reader) watchReader { return stream.NewProtobufWatchReader(in, object) })
}

// watchStream replaces the body of a watch with the translation newReader reads from it (see watchBody).
func (s *server) watchStream(ex *exchange, resp *http.Response, newReader func(io.Reader) watchReader) {
	src := resp.Body
	in := &sourceReader{r: src}
	r := newReader(in)
	s.watchMemory.Started()
	var once sync.Once
	end := func() {
		once.Do(func() {
			s.watchMemory.Ended()
			err := r.Err()
			switch {
			case err == nil:
			case in.err != nil && !errors.Is(in.err, io.EOF):
				if !errors.Is(in.err, context.Canceled) { // else the client went away
					klog.V(loglevel.Unusual).InfoS("The backend's watch stream broke off; ending the client's watch", "resource", ex.req.Resource, "err", in.err)
				}
			default:
				s.translationFailed(ex, metrics.Response, apierrors.NewInternalError(err))
			}
		})
	}
	resp.Body = &watchBody{r: r, end: end, close: func() error {
		end()
		return src.Close()
	}}
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
}

// watchBody is a translated watch's body: it calls end once its reader has ended.
type watchBody struct {
	r     watchReader
	end   func()
	close func() error
}

func (b *watchBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil {
		b.end()
	}
	return n, err
}

func (b *watchBody) Close() error { return b.close() }

// Idle reports whether the translation holds nothing (watchcopy.Copier.Copy): its next Read reads the backend.
func (b *watchBody) Idle() bool { return b.r.Idle() }

// readCloser is a Reader with its own Close.
type readCloser struct {
	io.Reader
	close func() error
}

func (r *readCloser) Close() error { return r.close() }

// translateResponse translates the backend's response to a Mapped or Other request, in place.
// The events of a watch are translated once for all the watches of the resource (stream.Shared):
// kube-apiserver sends each of them the same bytes. Over HTTP whole events are shared (watchBody), over
// a websocket the objects.
func (s *server) translateResponse(ex *exchange, resp *http.Response) error {
	gr := schema.GroupResource{Group: ex.req.Group, Resource: ex.req.Resource}
	if resp.StatusCode != http.StatusSwitchingProtocols && negotiate.IsProtobuf(resp.Header.Get("Content-Type")) {
		return s.translateProtobuf(ex, resp, gr)
	}
	upstream := s.bodies.UpstreamOfValid(gr)
	if ex.req.Watch {
		ex.sharedScope = gr.String()
		if ex.req.WebSocket {
			upstream = s.sharedWatch.Object("object "+gr.String(), upstream)
		}
		return s.translateObjects(ex, resp, upstream)
	}
	return s.translateObjectsAppending(ex, resp, upstream, &listItems{
		appendValid: s.bodies.AppendUpstreamOfValid(gr),
		appendItem:  s.bodies.AppendUpstreamOfItem(gr),
	})
}

// listItems are the translations of a list's items into a buffer the list reuses, the same as
// upstream's (stream.Objects.AppendObject, stream.Objects.AppendItem).
type listItems struct {
	appendValid func(dst, data []byte) ([]byte, error)
	appendItem  func(dst, data []byte) ([]byte, int, error)
}

// statusOf returns what translates the backend's Status bodies for the request of ex: ex.statusUpstream,
// or s.bodies.Upstream.
func (s *server) statusOf(ex *exchange) func([]byte) ([]byte, error) {
	if ex.statusUpstream != nil {
		return ex.statusUpstream
	}
	return s.bodies.Upstream
}

// translateObjects translates the backend's response to a resource request, in place: the objects it
// holds (the object, a list's items, watch events' objects) with upstream, which is only given
// well-formed JSON (streams validate what they read, a single object is validated first), Status bodies
// and Warning headers by their own rules. Translations are timed and their errors counted (metrics.Timed, listBody, watchBody).
func (s *server) translateObjects(ex *exchange, resp *http.Response, upstream func([]byte) ([]byte, error)) error {
	return s.translateObjectsAppending(ex, resp, upstream, nil)
}

// translateObjectsAppending is translateObjects whose lists translate their items with items, and
// their Tables row by row (body.Translator.TableRow), when items is not nil; without items a Table is
// translated whole by upstream (the CRDs' hides the platform's own).
func (s *server) translateObjectsAppending(ex *exchange, resp *http.Response, upstream func([]byte) ([]byte, error), items *listItems) error {
	req := ex.req
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return s.translateWebSocket(ex, resp, upstream) // a watch over a websocket (watch.go)
	}
	upstreamWarnings(resp)
	if !req.IsResource || !negotiate.IsJSON(resp.Header.Get("Content-Type")) {
		return nil
	}
	if passed, err := decompress(ex, resp); passed || err != nil {
		return err
	}
	statusUpstream := s.metrics.Timed(req, s.statusOf(ex))
	objects := stream.Objects{
		APIVersion: translate.ToUpstream.APIVersion,
		Object:     s.metrics.Timed(req, upstream),
		Status:     statusUpstream,
	}
	if items != nil {
		objects.AppendObject = s.metrics.TimedAppend(req, items.appendValid)
		objects.AppendItem = s.metrics.TimedAppendItem(req, items.appendItem)
		objects.Row = s.metrics.TimedAppend(req, s.bodies.AppendTableRow)
	}
	single := s.metrics.Timed(req, func(data []byte) ([]byte, error) {
		if err := translate.Valid(data); err != nil {
			return nil, fmt.Errorf("decoding object: %w", err)
		}
		return upstream(data)
	})
	if err := s.translateJSON(ex, resp, objects, single, statusUpstream); err != nil || !ex.yaml {
		return err
	}
	// kube-apiserver writes YAML as the YAML form of its JSON: the whole translation, then YAML.
	resp.Header.Set("Content-Type", "application/yaml")
	return replaceBody(resp, yaml.JSONToYAML)
}

// translateProtobuf translates a protobuf response to a request of the resource gr in place
// (body.Translator.ProtobufUpstreamOf): a watch frame by frame, its objects' translations shared by the
// watches of the resource as in JSON; a list item by item (protobufBody), written once all of it was
// read: a protobuf message states its length before its content; anything else (an object, an error's
// Status) whole. A response that names no private group is passed on as it is, compressed as the
// backend compressed it if the client accepts that (gzip.PassThrough).
func (s *server) translateProtobuf(ex *exchange, resp *http.Response, gr schema.GroupResource) error {
	req := ex.req
	upstreamWarnings(resp)
	if !req.IsResource {
		return nil
	}
	if passed, err := decompress(ex, resp); passed || err != nil {
		return err
	}
	object := s.bodies.ProtobufUpstreamOf(gr)
	if req.Watch && resp.StatusCode < http.StatusMultipleChoices {
		shared := s.metrics.Timed(req, s.sharedWatch.Object("protobuf "+gr.String(), object))
		s.protobufWatchBody(ex, resp, func(obj []byte) ([]byte, error) {
			if !groupnames.Mentions(translate.ToUpstream, obj) {
				return obj, nil // the frame is passed on as it is, and nothing is held for it
			}
			return shared(obj)
		})
		return nil
	}
	if resp.StatusCode >= http.StatusMultipleChoices {
		return replaceBody(resp, s.metrics.Timed(req, object))
	}
	return s.protobufBody(ex, resp, gr)
}

// protobufBody replaces the body of a successful protobuf answer with its translation
// (body.Translator.ProtobufUpstreamFrom): a list read item by item, holding only its translation,
// compressed, until its last item; anything else read whole. For a client that accepts gzip, a large
// list is compressed into its gzip'ed answer item by item as it is read
// (body.Translator.ProtobufUpstreamGzipFrom), so that once its last item has been read only the sending
// is left; the answer's headers are then those of kube-apiserver's gzip writer, as gzip.Compress sets
// them.
func (s *server) protobufBody(ex *exchange, resp *http.Response, gr schema.GroupResource) error {
	src := resp.Body
	in := &sourceReader{r: src}
	timed := func(translate func([]byte) ([]byte, error)) func([]byte) ([]byte, error) {
		return s.metrics.Timed(ex.req, translate)
	}
	var (
		out     io.Reader
		size    int64
		gzipped bool
		err     error
	)
	if ex.gzip && !ex.req.LongRunning { // as modifyResponse compresses
		out, size, gzipped, err = s.bodies.ProtobufUpstreamGzipFrom(gr, in, timed)
	} else {
		out, size, err = s.bodies.ProtobufUpstreamFrom(gr, in, timed)
	}
	_ = src.Close()
	if err != nil {
		if in.err != nil && !errors.Is(in.err, io.EOF) {
			return apierrors.NewServiceUnavailable(fmt.Sprintf("reading the backend's response: %v", in.err))
		}
		return apierrors.NewInternalError(fmt.Errorf("translating the backend's response: %w", err))
	}
	if gzipped {
		gzip.SetCompressed(resp, io.NopCloser(out))
		return nil
	}
	resp.Body = io.NopCloser(out)
	resp.ContentLength = size
	resp.Header.Set("Content-Length", strconv.FormatInt(size, 10))
	return nil
}

// translateJSON translates a JSON response in place: an error's Status, a watch event by event, a list
// item by item or its Table row by row (all streamed), or a single object (a Status or a Table too).
func (s *server) translateJSON(ex *exchange, resp *http.Response, objects stream.Objects, upstream, statusUpstream func([]byte) ([]byte, error)) error {
	req := ex.req
	switch {
	case resp.StatusCode >= http.StatusMultipleChoices:
		// An error: a Status, which may quote the request's body (errorStatus).
		return replaceBody(resp, s.metrics.Timed(req, errorStatus(ex, s.statusOf(ex))))
	case req.Watch:
		s.watchBody(ex, resp, objects)
		return nil
	case req.AnswersList() && (objects.Row != nil || !negotiate.AsksTable(resp.Request.Header.Get("Accept"))):
		// A list, or its Table (kubectl get) where objects translate its rows.
		return s.listBody(ex, resp, objects)
	default:
		// A single object, a Status, or a Table translated whole (upstream's own, as the CRDs' is).
		return replaceBody(resp, upstream)
	}
}

// discoveryResponse rewrites a discovery document (or translates the Status of a failed request).
func (s *server) discoveryResponse(resp *http.Response) error {
	upstreamWarnings(resp)
	discovery.Response(resp.Header)
	if !negotiate.IsJSON(resp.Header.Get("Content-Type")) {
		return nil
	}
	if err := gzip.Decompress(resp); err != nil {
		return err
	}
	if resp.StatusCode >= http.StatusMultipleChoices {
		return replaceBody(resp, s.bodies.Upstream)
	}
	ex := exchangeFrom(resp.Request.Context())
	contentType := resp.Header.Get("Content-Type")
	return replaceBody(resp, func(data []byte) ([]byte, error) {
		out, err := s.discovery.Rewrite(data)
		if err != nil || ex.answer == "" {
			return out, err
		}
		out, answerType, err := discovery.Encode(out, contentType, ex.answer)
		resp.Header.Set("Content-Type", answerType)
		return out, err
	})
}

// proxyError answers a request the proxy could not complete: the Status a response translation failed
// with, 504 Timeout when the backend sent no response headers in time (backend.WithHeaderTimeout), or 503
// ServiceUnavailable when the backend could not be reached or broke off. A backend that reset the
// request's HTTP/2 stream after it was sent (kube-apiserver does when a handler panics: v1.34 on a
// protobuf body for a custom resource) has the client's stream reset too, as kube-apiserver would have
// reset it: the response is aborted (inprocess.Abort; withAbort breaks it off, and net/http resets the
// stream, or closes an HTTP/1.1 connection).
func proxyError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		klog.V(loglevel.Debug).InfoS("Client went away", "path", r.URL.Path, "err", err)
		return
	}
	var reset http2.StreamError
	if errors.As(err, &reset) {
		klog.V(loglevel.Unusual).InfoS("The backend reset the request's stream; resetting the client's", "path", r.URL.Path, "err", err)
		inprocess.Abort(r, err)
		return
	}
	var apiErr *apierrors.StatusError
	if errors.As(err, &apiErr) {
		klog.V(loglevel.Unusual).InfoS("Answering with the proxy's own error", "path", r.URL.Path, "err", err)
		status.Write(w, apiErr)
		return
	}
	klog.V(loglevel.Unusual).InfoS("Backend unavailable", "path", r.URL.Path, "err", err)
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
	cutover.EndWatch(ex.target, ex.req, resp) // a watch ends when its namespace moves between the groups
	// kube-apiserver gzips the objects it serializes, never a long-running stream (a watch, a followed
	// log), which the proxy must not hold back either.
	if ex.gzip && !ex.req.LongRunning {
		return gzip.Compress(resp)
	}
	return nil
}

// upstreamWarnings translates the Warning headers of resp, a backend's answer the proxy translates, to
// the upstream groups (status.Warnings): kube-apiserver's warnings name the kinds and fields they are
// about (deprecated versions, unknown or duplicate fields). It is the one place a Warning header is
// translated; an answer passed on untranslated (a namespace served from the upstream groups, a switch
// of protocols) keeps its headers as they are.
func upstreamWarnings(resp *http.Response) {
	status.Warnings(translate.ToUpstream, resp.Header["Warning"])
}

// notFound turns resp into kube-apiserver's answer for a path it does not serve (status.NotFound).
func notFound(resp *http.Response) {
	const text = "404 page not found\n"
	resp.StatusCode, resp.Status = http.StatusNotFound, "404 Not Found"
	h := http.Header{}
	for _, name := range []string{"Audit-Id", "Cache-Control", "X-Kubernetes-Pf-Flowschema-Uid", "X-Kubernetes-Pf-Prioritylevel-Uid", "Date"} {
		if v := resp.Header.Values(name); v != nil {
			h[name] = v
		}
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(text)))
	resp.Header = h
	resp.Body = io.NopCloser(strings.NewReader(text))
	resp.ContentLength = int64(len(text))
}
