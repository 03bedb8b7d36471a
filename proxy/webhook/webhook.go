// Package webhook is the private CRDs' conversion webhook: an http.Handler that answers the apiserver's
// ConversionReviews (apiextensions.k8s.io/v1) by converting each object with package convert. The proxy
// binary serves it at Path, beside the translated API (see WithWebhook); the private CRDs name it in their
// spec.conversion (generated, with the service or URL and CA bundle set at install time).
//
// Only POSTs of a JSON ConversionReview v1 are served: any other method is answered 405, any other media
// type 415, a body that is no ConversionReview or has no request 400, a body over MaxBodyBytes 413, all as
// metav1.Status. A ConversionReview whose objects cannot all be converted gets a response with
// result.status Failure and a message naming the object, versions and, where it can, the field (see
// convert.Error); the apiserver answers its client with that message.
//
// Who may call it: the apiserver calls it over TLS and authenticates the proxy by its serving certificate
// (the CRD's caBundle); the proxy does not authenticate the caller, as no conversion webhook does. Anyone
// who can reach the proxy can therefore POST a ConversionReview, but it only converts the objects the
// caller sends: it reads nothing from the backend and writes nothing, so a caller learns nothing and gains
// no privilege it did not have.
package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/openshift/hypershift-capi-proxy/proxy/convert"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
)

// Path is where the proxy serves the webhook. kube-apiserver serves nothing there, so it shadows no API
// path.
const Path = "/convert"

// MaxBodyBytes bounds a ConversionReview: the apiserver sends a whole list page (or a whole unpaginated
// list) in one, so the bound is far above the 3 MiB of one request body.
const MaxBodyBytes = 256 << 20

// Handler serves ConversionReviews.
type Handler struct {
	converter *convert.Converter
}

// New returns the webhook handler for a Converter.
func New(c *convert.Converter) *Handler { return &Handler{converter: c} }

// WithWebhook serves requests for Path with webhook and every other request with next.
func WithWebhook(next http.Handler, webhook http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == Path {
			webhook.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

var reviewGVK = apiextensionsv1.SchemeGroupVersion.WithKind("ConversionReview")

// ServeHTTP answers one ConversionReview.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		status.Write(w, apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "conversionreviews"}, r.Method))
		return
	}
	if mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mediaType != "application/json" {
		status.Write(w, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "", schema.GroupResource{}, "",
			fmt.Sprintf("the conversion webhook takes a ConversionReview as application/json, not %q", r.Header.Get("Content-Type")), 0, false))
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			status.Write(w, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d bytes", MaxBodyBytes)))
			return
		}
		status.Write(w, apierrors.NewBadRequest(fmt.Sprintf("reading the ConversionReview: %v", err)))
		return
	}
	review := &apiextensionsv1.ConversionReview{}
	if err := json.Unmarshal(data, review); err != nil {
		status.Write(w, apierrors.NewBadRequest(fmt.Sprintf("decoding the ConversionReview: %v", err)))
		return
	}
	if review.GroupVersionKind() != reviewGVK || review.Request == nil {
		status.Write(w, apierrors.NewBadRequest(fmt.Sprintf("want a %s with a request, got apiVersion %q kind %q",
			reviewGVK.Kind+" "+reviewGVK.GroupVersion().String(), review.APIVersion, review.Kind)))
		return
	}

	review.Response = h.Review(review.Request)
	review.Request = nil
	out, err := json.Marshal(review)
	if err != nil {
		status.Write(w, apierrors.NewInternalError(fmt.Errorf("encoding the ConversionReview: %w", err)))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// Review converts the objects of a ConversionRequest to its desiredAPIVersion. A large request (the
// apiserver sends a whole list in one) is converted on GOMAXPROCS goroutines. One object that cannot be
// converted fails the whole review (the apiserver cannot use a partial answer): the response then
// carries no objects and a Failure result whose message names the first such object.
func (h *Handler) Review(req *apiextensionsv1.ConversionRequest) *apiextensionsv1.ConversionResponse {
	resp := &apiextensionsv1.ConversionResponse{UID: req.UID}
	objects := make([]kruntime.RawExtension, len(req.Objects))
	errs := make([]error, len(req.Objects))
	convertFrom := func(next func() int) {
		for i := next(); i < len(req.Objects); i = next() {
			out, err := h.converter.Private(req.Objects[i].Raw, req.DesiredAPIVersion)
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
		if err != nil {
			klog.V(2).InfoS("Conversion failed", "uid", req.UID, "desiredAPIVersion", req.DesiredAPIVersion, "err", err)
			resp.Result = metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity,
				Reason: metav1.StatusReasonInvalid, Message: err.Error()}
			return resp
		}
	}
	resp.ConvertedObjects = objects
	resp.Result = metav1.Status{Status: metav1.StatusSuccess}
	return resp
}

// parallelAbove is how many objects each goroutine of a review gets at least.
const parallelAbove = 64
