// Package webhook is the private CRDs' conversion webhook: an http.Handler that answers the apiserver's
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
// At most Options.MaxConcurrentReviews reviews are read and converted at once, each on up to GOMAXPROCS
// goroutines; others wait for their turn (their bodies unread) until their request is cancelled. Every
// review is recorded in the conversion_webhook_* metrics (see package metrics); the proxy's handler chain
// (server.New) counts it in requests_total like every request, with class Webhook and verb post.
//
// Who may call it: the apiserver calls it over TLS and authenticates the proxy by its serving certificate
// (the CRD's caBundle); the proxy does not authenticate the caller, as no conversion webhook does. Anyone
// who can reach the proxy can therefore POST a ConversionReview, but it only converts the objects the
// caller sends: it reads nothing from the backend and writes nothing, so a caller learns nothing and gains
// no privilege it did not have.
//
// The package also serves the admission webhooks of the private groups (Admission, at
// AdmissionPathPrefix): it forwards the apiserver's AdmissionReviews of private objects, in upstream
// terms, to the webhook server of the CAPI manager or provider that owns the kind, and translates the
// answers back.
package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
	"github.com/openshift/hypershift-capi-proxy/proxy/convert"
	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
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
// objects of single reads and writes) pass beside a large one, and bound the bodies held at once to four
// times MaxBodyBytes.
const DefaultMaxConcurrentReviews = 4

// Options configures the Handler.
type Options struct {
	// MaxConcurrentReviews bounds the reviews read and converted at once; zero means
	// DefaultMaxConcurrentReviews.
	MaxConcurrentReviews int
	// Metrics records every review; nil records nothing.
	Metrics *metrics.Metrics
}

// Handler serves ConversionReviews. It is safe for concurrent use.
type Handler struct {
	converter *convert.Converter
	// convertObject is converter.Private; tests replace it.
	convertObject func(obj []byte, apiVersion string) ([]byte, error)
	metrics       *metrics.Metrics
	// slots holds a token per review being read or converted.
	slots chan struct{}
	// maxBody is MaxBodyBytes; tests lower it.
	maxBody int64
}

// New returns the webhook handler for a Converter.
func New(c *convert.Converter, o Options) *Handler {
	if o.MaxConcurrentReviews <= 0 {
		o.MaxConcurrentReviews = DefaultMaxConcurrentReviews
	}
	return &Handler{converter: c, convertObject: c.Private, metrics: o.Metrics,
		slots: make(chan struct{}, o.MaxConcurrentReviews), maxBody: MaxBodyBytes}
}

var reviewGVK = apiextensionsv1.SchemeGroupVersion.WithKind("ConversionReview")

// ServeHTTP answers one ConversionReview, and records it in the metrics.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w}
	var kind, desired string // the metric labels, once the review is read
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler { //nolint:errorlint // the http.Server's own sentinel
				panic(p)
			}
			klog.ErrorS(nil, "Serving a ConversionReview panicked", "panic", p, "stack", string(debug.Stack()))
			if !rec.wrote {
				status.Write(rec, apierrors.NewInternalError(fmt.Errorf("serving the ConversionReview panicked: %v", p)))
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
		status.Write(rec, apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "conversionreviews"}, r.Method))
		return
	}
	if mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mediaType != "application/json" {
		status.Write(rec, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "", schema.GroupResource{}, "",
			fmt.Sprintf("the conversion webhook takes a ConversionReview as application/json, not %q", r.Header.Get("Content-Type")), 0, false))
		return
	}
	if r.ContentLength > h.maxBody {
		status.Write(rec, h.tooLarge())
		return
	}
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	case <-r.Context().Done():
		// The apiserver gave up (its webhook timeout) while the review waited for its turn.
		status.Write(rec, apierrors.NewTooManyRequests("the conversion webhook is busy converting other reviews", 1))
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(rec, r.Body, h.maxBody))
	if err != nil {
		var maxBytes *http.MaxBytesError
		if errors.As(err, &maxBytes) {
			status.Write(rec, h.tooLarge())
			return
		}
		status.Write(rec, apierrors.NewBadRequest(fmt.Sprintf("reading the ConversionReview: %v", err)))
		return
	}
	review := &apiextensionsv1.ConversionReview{}
	if err := json.Unmarshal(data, review); err != nil {
		status.Write(rec, apierrors.NewBadRequest(fmt.Sprintf("decoding the ConversionReview: %v", err)))
		return
	}
	if review.GroupVersionKind() != reviewGVK || review.Request == nil {
		status.Write(rec, apierrors.NewBadRequest(fmt.Sprintf("want a %s with a request, got apiVersion %q kind %q",
			reviewGVK.Kind+" "+reviewGVK.GroupVersion().String(), review.APIVersion, review.Kind)))
		return
	}
	kind, desired = h.labels(review.Request)

	review.Response, rec.failed = h.review(review.Request)
	review.Request = nil
	out, err := json.Marshal(review)
	if err != nil {
		status.Write(rec, apierrors.NewInternalError(fmt.Errorf("encoding the ConversionReview: %w", err)))
		return
	}
	rec.Header().Set("Content-Type", "application/json")
	_, _ = rec.Write(out)
}

func (h *Handler) tooLarge() error {
	return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("a ConversionReview is limited to %d bytes", h.maxBody))
}

// labels returns the kind and desired apiVersion metric labels of a review, in upstream terms as the
// route table names them, or "" for what the route table does not know (so that a caller cannot grow
// the series). All objects of a review are of one kind (one CRD's); the first names it.
func (h *Handler) labels(req *apiextensionsv1.ConversionRequest) (kind, desiredAPIVersion string) {
	if h.metrics == nil || len(req.Objects) == 0 {
		return "", ""
	}
	var tm metav1.TypeMeta
	gv, err := schema.ParseGroupVersion(req.DesiredAPIVersion)
	if err != nil || json.Unmarshal(req.Objects[0].Raw, &tm) != nil {
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
	resp, _ := h.review(req)
	return resp
}

// review is Review, and returns as well the code the review's failure is counted with in the metrics:
// 422 for an object that does not convert, 500 for a conversion that panicked, 0 for a success.
func (h *Handler) review(req *apiextensionsv1.ConversionRequest) (*apiextensionsv1.ConversionResponse, int) {
	resp := &apiextensionsv1.ConversionResponse{UID: req.UID}
	objects := make([]kruntime.RawExtension, len(req.Objects))
	errs := make([]error, len(req.Objects))
	convertFrom := func(next func() int) {
		for i := next(); i < len(req.Objects); i = next() {
			out, err := h.convert(req.Objects[i].Raw, req.DesiredAPIVersion)
			objects[i], errs[i] = kruntime.RawExtension{Raw: out}, err
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(req.Objects)/parallelAbove+1)
	var n atomic.Int64
	next := func() int { return int(n.Add(1) - 1) }
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(func() { convertFrom(next) })
	}
	convertFrom(next)
	wg.Wait()
	for _, err := range errs {
		if err == nil {
			continue
		}
		klog.V(2).InfoS("Conversion failed", "uid", req.UID, "desiredAPIVersion", req.DesiredAPIVersion, "err", err)
		resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
		code := http.StatusUnprocessableEntity
		var ce *convert.Error
		var p *panicError
		switch {
		case errors.As(err, &p):
			resp.Result.Message, code = errInternal, http.StatusInternalServerError
		case errors.As(err, &ce):
			resp.Result.Message = ce.Message()
			if ce.Panic != nil {
				code = http.StatusInternalServerError
			}
		}
		return resp, code
	}
	resp.ConvertedObjects = objects
	resp.Result = metav1.Status{Status: metav1.StatusSuccess}
	return resp, 0
}

// errInternal is controller-runtime's message for a conversion that panicked
// (webhook.handleConvertRequest).
const errInternal = "internal error occurred during conversion"

// convert converts one object, and turns a panic of the conversion into a *panicError: conversions run on
// goroutines of their own, where a panic would end the process.
func (h *Handler) convert(obj []byte, desiredAPIVersion string) (out []byte, err error) {
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
	return h.convertObject(obj, desiredAPIVersion)
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

func (r *statusRecorder) status() int {
	if !r.wrote {
		return http.StatusOK
	}
	return r.code
}
