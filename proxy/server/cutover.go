package server

// The per-namespace cut-over (package cutover): Options.Namespaces's cutover.Filter runs in the chain as
// withServing; what it needs of the server (cutover.Proxy) is cutoverProxy.

import (
	"net/http"
	"time"

	"github.com/openshift/hypershift-capi-proxy/proxy/cutover"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
)

// withServing serves each resource request by its namespace's serving mode (cutover.Filter.Handler);
// next, the chain after it, is the proxy's core, which serves the private groups and the private parts
// of a merged list or watch. Without Options.Namespaces it leaves every request to next.
func (s *server) withServing(next http.Handler) http.Handler {
	if s.cutover == nil {
		return next
	}
	return s.cutover.Handler(next)
}

// retryAfterSeconds rounds d up to whole seconds, at least 1 (Retry-After counts seconds).
func retryAfterSeconds(d time.Duration) int {
	if d <= 0 {
		d = DefaultHoldRetryAfter
	}
	return max(1, int((d+time.Second-1)/time.Second))
}

// cutoverProxy is the server as the cut-over sees it (cutover.Proxy): a request's target is kept in its
// exchange, and a request served from the upstream groups is forwarded by the server's ReverseProxy.
type cutoverProxy struct{ s *server }

// SetTarget records t in r's exchange.
func (p cutoverProxy) SetTarget(r *http.Request, t *cutover.Target) {
	exchangeFrom(r.Context()).target = t
}

// ServeUpstream forwards a request of a mapped kind in a namespace served from the upstream groups (or
// an upstream part of a merged list or watch) to the backend as it is: the upstream group's path (its
// target's), query, headers and body, and the backend's answer back as it is. The platform's CRDs of the
// upstream groups serve it, in the versions they serve (the proxy's in-process conversion of versions is
// for the private groups only).
func (p cutoverProxy) ServeUpstream(w http.ResponseWriter, r *http.Request) {
	if err := p.s.bufferBody(r); err != nil {
		status.Write(w, err)
		return
	}
	exchangeFrom(r.Context()).respond = func(*http.Response) error { return nil } // cutover.EndWatch still applies (modifyResponse)
	p.s.proxy.ServeHTTP(w, r)
}

// NewRequest classifies r (withClass's classification) and gives it an exchange of its own.
func (p cutoverProxy) NewRequest(r *http.Request) *http.Request {
	req := p.s.classifier.Classify(r)
	return r.WithContext(newExchange(r.Context(), &req, r.URL))
}
