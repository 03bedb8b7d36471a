// Package conversion is the private CRDs' conversion webhook: an http.Handler that answers the apiserver's
// ConversionReviews (apiextensions.k8s.io/v1) by converting each object with package convert. The proxy
// binary serves it at Path, beside the translated API (the proxy's handler chain, server.New, routes it); the private CRDs name it in their
// spec.conversion (generated, with the service or URL and CA bundle set at install time).
//
// Only POSTs of a JSON ConversionReview v1 are served: any other method is answered 405, any other media
// type 415, a body that is no ConversionReview or has no request 400, a body over MaxBodyBytes 413, all as
// metav1.Status (the apiserver sends none of these). A ConversionReview whose objects cannot all be
// converted gets a response with result.status Failure and the message controller-runtime's conversion
// webhook answers for the same object (see Handler.Review and convert.Error.Message): the apiserver
// quotes it to its client, who so reads what a client of upstream's CRDs and webhook reads. The proxy's
// log names the object, versions and, where it can, the field. A conversion that panics (a bug) fails
// its review as controller-runtime's does, and never ends the process.
//
// A review is read object by object (each object copied out of the body as it arrives, no more of the
// body held than the object being read) and converted once read, on up to GOMAXPROCS goroutines, each
// object dropped once converted; the answer is written object by object, with its length, never built
// whole. The body must arrive within ReadTimeout and the answer be written within WriteTimeout; what
// the handler holds of the reviews it reads, that wait for their turn and that it converts is charged
// to a budget (Options.MaxHeldBytes) as it arrives, 429 (or 413 for a review larger than the whole
// budget) when exhausted; at most Options.MaxConcurrentReviews reviews are converted at once, a review
// taking its turn only once read and waiting for it until its request is cancelled (429). See package
// webhookio for these bounds; a proxy serves both its listeners with one Handler. Every review is recorded in the
// capi_proxy_conversion_webhook_* metrics and the capi_proxy_webhook_* gauges of the bounds (webhook
// "conversion"), all defined in package metrics; the proxy's handler chain (server.New) also counts a
// review on the API listener in requests_total like every request, with class Webhook and verb post.
//
// Memory: a review of N bytes grows the proxy's RSS by about 3 N at its peak: the objects as read (N),
// their conversions (1.5 N for v1beta2 Machines to v1beta1, which adds each one's conversion-data
// annotation) and what the collector has not freed yet. Measured with tests/bench/webhookmem (the proxy
// binary, Machines from v1beta2 to v1beta1): a 96 MiB review +302 MiB (3.1 N), a 200 MiB one +611 MiB
// (3.1 N), a 250 MiB one +731 MiB (2.9 N), four of 64 MiB at once +767 MiB (3.0 times their 256 MiB),
// where reading and decoding each review whole, converting it typed and encoding the answer whole took
// 11.4 N, 10.8 N and 9.3 times.
// Reviews held at once add up to at most Options.MaxHeldBytes of bodies, so the webhook's memory is
// bounded by about 3 MaxHeldBytes (1.5 GiB with DefaultMaxHeldBytes).
//
// Who may call it: the apiserver calls it over TLS and authenticates the proxy by its serving certificate
// (the CRD's caBundle); the proxy does not authenticate the caller, as no conversion webhook does. Anyone
// who can reach the proxy can therefore POST a ConversionReview. It converts only the objects the caller
// sends and writes nothing; what it reads of the backend are the contract labels of the CRDs its
// objects reference, from the proxy's cache of CRDs (convert.Converter.APIVersion), which CAPI's own
// conversion webhook reads as well (contract.GetAPIVersion over its manager's cache): a caller learns
// whether the CRD of a kind it names exists and its contract labels, as from CAPI's webhook, and
// nothing else. docs/operations.md says how to keep callers other than the apiserver out.
package conversion

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
	"github.com/openshift/hypershift-capi-proxy/proxy/convert"
	"github.com/openshift/hypershift-capi-proxy/proxy/loglevel"
	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook/internal/webhookio"
)

// Path is where the proxy serves the webhook. kube-apiserver serves nothing there, so it shadows no API
// path.
const Path = classify.WebhookPath

// MaxBodyBytes bounds a ConversionReview. kube-apiserver bounds neither: its webhook converter sends every
// object of a list that needs converting in one review (apiextensions-apiserver's
// webhookConverter.Convert), so one review holds a whole list page, or a whole list when the client does
// not paginate, and each object may be up to etcd's default request limit (1.5 MiB). 256 MiB takes an
// unpaginated list of some 25,000 10 KiB objects (CAPI's Machines are 2 to 10 KiB) while bounding what
// one review can make the proxy hold; a larger one is refused with 413 RequestEntityTooLarge, which the
// apiserver reports to its client as a conversion failure.
const MaxBodyBytes = 256 << 20

// DefaultMaxConcurrentReviews is Options.MaxConcurrentReviews's default. Each review already converts on
// GOMAXPROCS goroutines, so more reviews at once would not convert faster; four let small reviews (the
// objects of single reads and writes) pass beside a large one.
const DefaultMaxConcurrentReviews = 4

// DefaultMaxHeldBytes is Options.MaxHeldBytes's default: a review of MaxBodyBytes beside as much again
// of others. What the proxy's memory grows by while it converts is a multiple of this (see the package
// doc), not of MaxConcurrentReviews times MaxBodyBytes.
const DefaultMaxHeldBytes = 2 * MaxBodyBytes

// Options configures the Handler.
type Options struct {
	// MaxConcurrentReviews bounds the reviews converted at once (the handler's turns, taken once a review
	// is read); zero means DefaultMaxConcurrentReviews.
	MaxConcurrentReviews int
	// MaxHeldBytes bounds the bytes the handler holds of the reviews it reads, that wait for their turn
	// and that it converts: their objects as read, and the buffers reading them; zero means
	// DefaultMaxHeldBytes. It should be above MaxBodyBytes, or the largest reviews are refused.
	MaxHeldBytes int64
	// Metrics records every review; nil records nothing.
	Metrics *metrics.Metrics
}

// Handler serves ConversionReviews. It is safe for concurrent use; a proxy serves all its listeners with
// one, so that its bounds are the proxy's.
type Handler struct {
	converter *convert.Converter
	// convertObject is converter.Private; tests replace it.
	convertObject func(ctx context.Context, obj []byte, apiVersion string) ([]byte, error)
	metrics       *metrics.Metrics
	limits        *webhookio.Limits
	// maxBody is MaxBodyBytes; tests lower it.
	maxBody int64
}

// New returns the webhook handler for a Converter.
func New(c *convert.Converter, o Options) *Handler {
	if o.MaxConcurrentReviews <= 0 {
		o.MaxConcurrentReviews = DefaultMaxConcurrentReviews
	}
	if o.MaxHeldBytes <= 0 {
		o.MaxHeldBytes = DefaultMaxHeldBytes
	}
	return &Handler{converter: c, convertObject: c.Private, metrics: o.Metrics,
		limits: webhookio.NewLimits("conversion", o.MaxHeldBytes, o.MaxConcurrentReviews, o.Metrics), maxBody: MaxBodyBytes}
}

var reviewGVK = apiextensionsv1.SchemeGroupVersion.WithKind("ConversionReview")

// ServeHTTP answers one ConversionReview, and records it in the metrics.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	deadlines := h.limits.SetDeadlines(w, start)
	defer deadlines.Done()
	held := h.limits.NewHold()
	defer held.Release()
	rec := &statusRecorder{ResponseWriter: w}
	var kind, desired string // the metric labels, once the review is read
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler { //nolint:errorlint // the http.Server's own sentinel
				panic(p)
			}
			klog.ErrorS(nil, "Serving a ConversionReview panicked", "panic", p, "stack", string(debug.Stack()))
			if !rec.wrote {
				webhookio.WriteStatus(rec, apierrors.NewInternalError(fmt.Errorf("serving the ConversionReview panicked: %v", p)))
			}
		}
		code := rec.status()
		if rec.failed != 0 {
			code = rec.failed
		}
		h.metrics.ObserveConversionReview(kind, desired, code, time.Since(start))
	}()
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		webhookio.WriteStatus(rec, apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "conversionreviews"}, r.Method))
		return
	}
	if mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mediaType != "application/json" {
		webhookio.WriteStatus(rec, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "", schema.GroupResource{}, "",
			fmt.Sprintf("the conversion webhook takes a ConversionReview as application/json, not %q", r.Header.Get("Content-Type")), 0, false))
		return
	}
	if r.ContentLength > h.maxBody {
		webhookio.WriteStatus(rec, h.limits.BodyError(&http.MaxBytesError{Limit: h.maxBody}, "ConversionReview", h.maxBody))
		return
	}
	body := webhookio.NewReader(r.Body, r.ContentLength, h.maxBody, held)
	review, err := readConversionReview(body)
	body.Drop()
	if body.Ended() {
		deadlines.BodyRead()
	}
	if err != nil {
		var readErr *webhookio.ReadError
		if errors.As(err, &readErr) {
			webhookio.WriteStatus(rec, h.limits.BodyError(readErr, "ConversionReview", h.maxBody))
			return
		}
		webhookio.WriteStatus(rec, apierrors.NewBadRequest(fmt.Sprintf("decoding the ConversionReview: %v", err)))
		return
	}
	if schema.FromAPIVersionAndKind(review.apiVersion, review.kind) != reviewGVK || review.request == nil {
		webhookio.WriteStatus(rec, apierrors.NewBadRequest(fmt.Sprintf("want a %s with a request, got apiVersion %q kind %q",
			reviewGVK.Kind+" "+reviewGVK.GroupVersion().String(), review.apiVersion, review.kind)))
		return
	}
	req := review.request
	kind, desired = h.labels(req.desiredAPIVersion, req.objects)

	// Past the write deadline no answer reaches the caller: nothing is converted for it after.
	ctx, cancel := context.WithDeadline(r.Context(), start.Add(h.limits.WriteTimeout))
	defer cancel()
	done, ok := h.limits.Wait(ctx)
	if !ok {
		// The apiserver gave up (its webhook timeout) while the review waited for its turn.
		webhookio.WriteStatus(rec, apierrors.NewTooManyRequests("the conversion webhook is busy converting other reviews", 1))
		return
	}
	defer done()
	converted, result, failed, err := h.review(ctx, req.uid, req.desiredAPIVersion, req.objects)
	if err != nil {
		// The caller went away, or the write deadline passed: what is written likely reaches no one.
		webhookio.WriteStatus(rec, apierrors.NewTimeoutError(fmt.Sprintf("the review was not converted in time: %v", err), 0))
		return
	}
	rec.failed = failed
	req.objects = nil
	writeReview(rec, review, converted, result)
}

// labels returns the kind and desired apiVersion metric labels of a review, in upstream terms as the
// route table names them, or "" for what the route table does not know (so that a caller cannot grow
// the series). All objects of a review are of one kind (one CRD's); the first names it.
func (h *Handler) labels(desiredAPIVersion string, objects [][]byte) (kind, desired string) {
	if h.metrics == nil || len(objects) == 0 {
		return "", ""
	}
	var tm metav1.TypeMeta
	gv, err := schema.ParseGroupVersion(desiredAPIVersion)
	if err != nil || json.Unmarshal(objects[0], &tm) != nil {
		return "", ""
	}
	route, ok := h.converter.Table().ByPrivateKind(gv.WithKind(tm.Kind))
	if !ok {
		return "", ""
	}
	return route.Kind, route.Upstream.GroupVersion().String()
}

// Review converts the objects of a ConversionRequest to its desiredAPIVersion. A large request (the
// apiserver sends a whole list in one) is converted on GOMAXPROCS goroutines. One object that cannot be
// converted fails the whole review (the apiserver cannot use a partial answer): the response then
// carries no objects and a Failure result whose message is that of the first such object, as
// controller-runtime's conversion webhook answers (sigs.k8s.io/controller-runtime/pkg/webhook/conversion:
// result.status Failure and the message, no code or reason; for a failure of upstream's conversion the
// message is upstream's error alone, see convert.Error.Message). A conversion that panics fails with
// controller-runtime's "internal error occurred during conversion", and the panic is logged with its
// stack.
func (h *Handler) Review(req *apiextensionsv1.ConversionRequest) *apiextensionsv1.ConversionResponse {
	objects := make([][]byte, len(req.Objects))
	for i, o := range req.Objects {
		objects[i] = o.Raw
	}
	converted, result, _, _ := h.review(context.Background(), req.UID, req.DesiredAPIVersion, objects)
	resp := &apiextensionsv1.ConversionResponse{UID: req.UID, Result: result}
	if converted != nil {
		resp.ConvertedObjects = make([]kruntime.RawExtension, len(converted))
		for i, o := range converted {
			resp.ConvertedObjects[i].Raw = o
		}
	}
	return resp
}

// review is Review over the objects' JSON. It drops each of objects (sets it nil) once converted, so
// that the collector may free what the review read while it converts the rest, and returns the
// converted objects (nil for a failure), the result, and the code the review is counted with in the
// metrics: 422 for an object that does not convert, 500 for a conversion that panicked, 0 for a
// success. It stops converting when ctx ends, and returns ctx's error then.
func (h *Handler) review(ctx context.Context, uid types.UID, desiredAPIVersion string, objects [][]byte) ([][]byte, metav1.Status, int, error) {
	converted := make([][]byte, len(objects))
	errs := make([]error, len(objects))
	convertFrom := func(next func() int) {
		for i := next(); i < len(objects) && ctx.Err() == nil; i = next() {
			obj := objects[i]
			objects[i] = nil
			converted[i], errs[i] = h.convert(ctx, obj, desiredAPIVersion)
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(objects)/parallelAbove+1)
	var n atomic.Int64
	next := func() int { return int(n.Add(1) - 1) }
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(func() { convertFrom(next) })
	}
	convertFrom(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, metav1.Status{}, 0, err
	}
	for _, err := range errs {
		if err == nil {
			continue
		}
		klog.V(loglevel.Unusual).InfoS("Conversion failed", "uid", uid, "desiredAPIVersion", desiredAPIVersion, "err", err)
		result := metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
		code := http.StatusUnprocessableEntity
		var ce *convert.Error
		var p *panicError
		switch {
		case errors.As(err, &p):
			result.Message, code = errInternal, http.StatusInternalServerError
		case errors.As(err, &ce):
			result.Message = ce.Message()
			if ce.Panic != nil {
				code = http.StatusInternalServerError
			}
		}
		return nil, result, code, nil
	}
	return converted, metav1.Status{Status: metav1.StatusSuccess}, 0, nil
}

// writeReview writes the ConversionReview that answers review: its apiVersion and kind, and a response
// with the request's uid, the converted objects (null for none, as a failure has) and the result, in the
// encoding json.Marshal gives apiextensionsv1.ConversionReview, with each object's bytes as converted.
// It writes object by object, with the whole length in Content-Length, and drops each (sets it nil)
// once written: the answer is never built whole.
func writeReview(w http.ResponseWriter, review *conversionReview, objects [][]byte, result metav1.Status) {
	quote := func(s string) []byte { b, _ := json.Marshal(s); return b } // a string always encodes
	head := slices.Concat([]byte(`{"kind":`), quote(review.kind), []byte(`,"apiVersion":`), quote(review.apiVersion),
		[]byte(`,"response":{"uid":`), quote(string(review.request.uid)), []byte(`,"convertedObjects":`))
	res, _ := json.Marshal(result) // a metav1.Status always encodes
	tail := slices.Concat([]byte(`,"result":`), res, []byte(`}}`))
	size := len(head) + len(tail) + len("null")
	if objects != nil {
		size = len(head) + len(tail) + len("[]") + max(len(objects)-1, 0)
		for _, o := range objects {
			size += len(o)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(size))
	out := bufio.NewWriterSize(w, 32<<10)
	_, _ = out.Write(head)
	if objects == nil {
		_, _ = out.WriteString("null")
	} else {
		_ = out.WriteByte('[')
		for i, o := range objects {
			if i > 0 {
				_ = out.WriteByte(',')
			}
			if _, err := out.Write(o); err != nil {
				return // the caller is gone, or its write deadline passed
			}
			objects[i] = nil
		}
		_ = out.WriteByte(']')
	}
	_, _ = out.Write(tail)
	_ = out.Flush()
}

// errInternal is controller-runtime's message for a conversion that panicked
// (webhook.handleConvertRequest).
const errInternal = "internal error occurred during conversion"

// convert converts one object, and turns a panic of the conversion into a *panicError: conversions run on
// goroutines of their own, where a panic would end the process.
func (h *Handler) convert(ctx context.Context, obj []byte, desiredAPIVersion string) (out []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			var tm metav1.TypeMeta
			var meta struct {
				Metadata struct{ Namespace, Name string } `json:"metadata"`
			}
			_ = json.Unmarshal(obj, &tm)
			_ = json.Unmarshal(obj, &meta)
			klog.ErrorS(nil, "Converting an object panicked", "kind", tm.Kind, "apiVersion", tm.APIVersion,
				"namespace", meta.Metadata.Namespace, "name", meta.Metadata.Name, "desiredAPIVersion", desiredAPIVersion,
				"panic", p, "stack", string(debug.Stack()))
			out, err = nil, &panicError{msg: fmt.Sprintf("converting %s %q (%s) to %s: the conversion panicked: %v",
				tm.Kind, meta.Metadata.Namespace+"/"+meta.Metadata.Name, tm.APIVersion, desiredAPIVersion, p)}
		}
	}()
	return h.convertObject(ctx, obj, desiredAPIVersion)
}

// panicError is a conversion that panicked.
type panicError struct{ msg string }

func (e *panicError) Error() string { return e.msg }

// parallelAbove is how many objects each goroutine of a review gets at least.
const parallelAbove = 64

// statusRecorder remembers the status code written through it.
type statusRecorder struct {
	http.ResponseWriter
	code  int
	wrote bool
	// failed is the code a review answered with a Failure result is counted with (0 otherwise; see
	// Handler.review).
	failed int
}

func (r *statusRecorder) WriteHeader(code int) {
	if !r.wrote {
		r.code, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(p []byte) (int, error) {
	if !r.wrote {
		r.code, r.wrote = http.StatusOK, true
	}
	return r.ResponseWriter.Write(p)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *statusRecorder) status() int {
	if !r.wrote {
		return http.StatusOK
	}
	return r.code
}
