package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// errHeaderTimeout cancels a request whose response headers did not arrive in time.
var errHeaderTimeout = errors.New("no response headers from the backend in time")

// headerTimeout bounds the wait for the backend's response headers of requests that are not long-running
// (classify.Request.LongRunning): a backend that accepts connections but does not answer must not hold a
// client, and the proxy's goroutines, forever. A watch is exempt (kube-apiserver sends its headers at
// once, but events may be minutes away), as are logs, exec, attach, port-forward and proxy requests. On
// expiry the request is cancelled and answered with 504 Timeout. The response body is not bounded.
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
