package server

// The counting of translation errors, once per request (the timing of translations is package metrics's,
// Metrics.Timed; the chain's filter of metrics its WithRequests).

import (
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
)

// translationFailed counts err, the error a translation of ex's request failed with, unless one was
// counted for it already. A backend that could not be read (503) is not a translation error.
func (s *server) translationFailed(ex *exchange, direction string, err error) {
	if s.metrics == nil || apierrors.IsServiceUnavailable(err) || ex.failed.Swap(true) {
		return
	}
	s.metrics.TranslationFailed(ex.req, direction, string(status.ToStatus(err).Reason))
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
