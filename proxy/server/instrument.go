package server

// The timing and counting of translations (the chain's filter of metrics is package metrics's
// WithRequests).

import (
	"io"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
)

// translationLabels are the group and kind labels of translation metrics: the route's for a mapped
// resource, empty otherwise.
func translationLabels(req *classify.Request) (group, kind string) {
	if req.Class == classify.Mapped {
		return req.Route.Upstream.Group, req.Route.Kind
	}
	return "", ""
}

// timeTranslation starts timing one translation of req's; call the returned func when it is done.
func (s *server) timeTranslation(req *classify.Request, direction string) (done func()) {
	if s.metrics == nil {
		return func() {}
	}
	start := time.Now()
	group, kind := translationLabels(req)
	return func() { s.metrics.ObserveTranslation(group, kind, direction, time.Since(start)) }
}

// timed wraps a translation of response bodies (or stream items) of req's so that each call is timed.
func (s *server) timed(req *classify.Request, translate func([]byte) ([]byte, error)) func([]byte) ([]byte, error) {
	if s.metrics == nil {
		return translate
	}
	return func(data []byte) ([]byte, error) {
		defer s.timeTranslation(req, metrics.Response)()
		return translate(data)
	}
}

// timedAppend is timed for a translation that appends to a buffer (stream.Objects.AppendObject).
func (s *server) timedAppend(req *classify.Request, translate func(dst, data []byte) ([]byte, error)) func(dst, data []byte) ([]byte, error) {
	if s.metrics == nil {
		return translate
	}
	return func(dst, data []byte) ([]byte, error) {
		defer s.timeTranslation(req, metrics.Response)()
		return translate(dst, data)
	}
}

// timedAppendItem is timedAppend for a translation that also delimits what it translates
// (stream.Objects.AppendItem). Only a call that translated is observed: after any other the item is
// translated again, and observed then, or its translation is not complete yet.
func (s *server) timedAppendItem(req *classify.Request, translate func(dst, data []byte) ([]byte, int, error)) func(dst, data []byte) ([]byte, int, error) {
	if s.metrics == nil {
		return translate
	}
	group, kind := translationLabels(req)
	return func(dst, data []byte) ([]byte, int, error) {
		start := time.Now()
		out, n, err := translate(dst, data)
		if err == nil {
			s.metrics.ObserveTranslation(group, kind, metrics.Response, time.Since(start))
		}
		return out, n, err
	}
}

// translationFailed counts err, the error a translation of ex's request failed with, unless one was
// counted for it already. A backend that could not be read (503) is not a translation error.
func (s *server) translationFailed(ex *exchange, direction string, err error) {
	if s.metrics == nil || apierrors.IsServiceUnavailable(err) || ex.failed.Swap(true) {
		return
	}
	group, kind := translationLabels(ex.req)
	s.metrics.TranslationError(group, kind, direction, string(status.ToStatus(err).Reason))
}

// recordFailure wraps a response step so that its error is counted.
func (s *server) recordFailure(ex *exchange, respond func(*http.Response) error) func(*http.Response) error {
	return func(resp *http.Response) error {
		err := respond(resp)
		if err != nil {
			s.translationFailed(ex, metrics.Response, err)
		}
		return err
	}
}

// sourceReader remembers the first error of the reader it wraps.
type sourceReader struct {
	r   io.Reader
	err error
}

func (r *sourceReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && r.err == nil {
		r.err = err
	}
	return n, err
}
