package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
)

// errHeaderTimeout cancels a request whose response headers did not arrive in time.
var errHeaderTimeout = errors.New("no response headers from the backend in time")

// WithHeaderTimeout returns next with the wait for the backend's response headers bounded by timeout
// (headerTimeout); a timeout of zero or less leaves next unbounded.
func WithHeaderTimeout(next http.RoundTripper, timeout time.Duration) http.RoundTripper {
	return &headerTimeout{next: next, timeout: timeout}
}

// headerTimeout bounds the wait for the backend's response headers of requests that are not long-running
// (classify.Request.LongRunning, classify.FromContext): a backend that accepts connections but does not answer must not hold a
// client, and the proxy's goroutines, forever. A watch is exempt (kube-apiserver sends its headers at
// once, but events may be minutes away), as are logs, exec, attach, port-forward and proxy requests. On
// expiry the request is cancelled and RoundTrip returns a 504 Timeout API status. The response body is not bounded.
type headerTimeout struct {
	next    http.RoundTripper
	timeout time.Duration
}

func (t *headerTimeout) RoundTrip(req *http.Request) (*http.Response, error) {
	info, ok := classify.FromContext(req.Context())
	if t.timeout <= 0 || !ok || info.LongRunning {
		return t.next.RoundTrip(req)
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	timer := time.AfterFunc(t.timeout, func() { cancel(errHeaderTimeout) })
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if !timer.Stop() {
		// The timer fired: whatever RoundTrip returned is the cancellation.
		if err == nil {
			_ = resp.Body.Close()
		}
		cancel(nil)
		return nil, apierrors.NewTimeoutError(fmt.Sprintf("the backend kube-apiserver sent no response headers within %s", t.timeout), 0)
	}
	if err != nil {
		cancel(nil)
		return nil, err
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// The body is the upgraded connection (an io.ReadWriteCloser): leave it as it is; the context
		// ends with the request's.
		return resp, nil
	}
	// The body is read after RoundTrip returns: keep the context alive until it is closed.
	body := resp.Body
	resp.Body = &readCloser{Reader: body, close: func() error {
		defer cancel(nil)
		return body.Close()
	}}
	return resp, nil
}

// readCloser is a Reader with its own Close.
type readCloser struct {
	io.Reader
	close func() error
}

func (r *readCloser) Close() error { return r.close() }
