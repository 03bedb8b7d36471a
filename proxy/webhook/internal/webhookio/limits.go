// Package webhookio holds what the proxy's webhooks (packages conversion and admission) share: the
// bounds of a webhook request (Limits: its timeouts, a budget of bytes, turns) and the reader of its
// body (Reader), which charges what it holds to the budget as it arrives.
package webhookio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
)

// The bounds of a webhook request, for the conversion webhook (package conversion) and the admission
// webhooks (package admission) alike, on whichever listener serves them. Anyone who reaches a listener can send a
// request, so none may hold the handler's memory or its turns for long:
//
//   - time: a request's body must have arrived ReadTimeout after its handler started (408 otherwise),
//     and its answer be written WriteTimeout after it; a request still being served then (a review
//     converting, an admission review waiting for the manager's server) stops, as when its caller goes
//     away (504 Timeout, which no one may read), giving its turn and bytes back. The handlers set these
//     deadlines on the request's connection (HTTP/1) or stream (HTTP/2) themselves
//     (http.ResponseController), so that they hold on a listener that serves watches too and has no
//     http.Server ReadTimeout (the proxy's API listener), and they lift the read deadline once the body
//     is read: Go's HTTP/1 server cancels a request's context when a read on its connection fails, which
//     a read deadline passing while the handler converts would do. The webhook listener
//     (--webhook-listen) serves nothing else and sets the same values as its http.Server's ReadTimeout
//     and WriteTimeout, for every path;
//   - memory: the bytes a handler holds of the requests it reads, waits with and serves are charged to
//     a budget of its own (conversion.Options.MaxHeldBytes, admission.Options.MaxHeldBytes) as they are allocated,
//     which is as they arrive: a buffer grows with what the client sent (to at most twice that, and
//     4 KiB at first), never to what its Content-Length declares, so that a client that declares much
//     and sends little holds little. A request that would take the budget past its bound is answered
//     429 TooManyRequests (Retry-After 1) when others hold it, 413 RequestEntityTooLarge when it alone
//     would (a body declared or found over the handler's per-request bound is 413 as well);
//   - turns: a request takes one of the handler's turns (conversion.Options.MaxConcurrentReviews,
//     admission.Options.MaxConcurrentReviews) only once its body is read, so that a client that is slow
//     to send holds none; a request waits for its turn until its own context ends (the apiserver's
//     timeout) or its write deadline passes, and is then answered 429.
//
// One conversion.Handler and one admission.Handler serve both listeners of a proxy (one set of turns and one budget
// each), and record every request in the metrics (capi_proxy_webhook_held_bytes and
// capi_proxy_webhook_active_requests, by webhook: conversion or admission).
const (
	// ReadTimeout bounds the arrival of a webhook request's body, from the start of its handler: the
	// apiserver gives every webhook call 30 s in all (k8s.io/apiserver/pkg/util/webhook
	// defaultRequestTimeout; an admission webhook's timeoutSeconds is at most 30), so a body that has
	// not arrived by then belongs to a call the apiserver gave up. kube-apiserver's own secure serving
	// (k8s.io/apiserver/pkg/server/secure_serving.go) sets no ReadTimeout or WriteTimeout on its
	// http.Server, since it serves watches, and bounds headers only (ReadHeaderTimeout 32 s, IdleTimeout
	// 90 s, MaxHeaderBytes 1 MiB); the proxy's API listener serves watches too, so the bound is set per
	// request on the webhook paths.
	ReadTimeout = 30 * time.Second
	// WriteTimeout bounds the whole of a webhook request, its answer written, from the start of its
	// handler: past the apiserver's 30 s, so that the apiserver's own timeout ends a call first, and this
	// one only frees what a caller that no longer reads holds.
	WriteTimeout = 40 * time.Second
)

// MinRead is what a handler reads at least at a time, and the size of its first buffer.
const MinRead = 4 << 10

// budget is a number of bytes the requests of one handler may hold at once. It is safe for concurrent
// use.
type budget struct {
	mu    sync.Mutex
	held  int64
	limit int64
	// peak is the most held so far (tests read it).
	peak  int64
	gauge prometheus.Gauge // capi_proxy_webhook_held_bytes of the handler; nil records nothing
}

// inUse returns what the budget's requests hold now, and the most they held at once.
func (b *budget) inUse() (held, peak int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held, b.peak
}

// Hold is what one request holds of a budget; Release gives it all back. A Hold is used by one
// goroutine at a time.
type Hold struct {
	b *budget
	n int64
}

// errBudget is take's error when the budget has no room: tooLarge when the request alone would hold
// more than the whole budget.
type errBudget struct {
	limit    int64
	tooLarge bool
}

func (e *errBudget) Error() string {
	if e.tooLarge {
		return fmt.Sprintf("the request would hold more than the webhook's whole budget of %d bytes", e.limit)
	}
	return fmt.Sprintf("the webhook holds its budget of %d bytes of requests", e.limit)
}

// take charges n more bytes to h, or fails with an *errBudget.
func (h *Hold) take(n int) error {
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case h.n+int64(n) > b.limit:
		return &errBudget{limit: b.limit, tooLarge: true}
	case b.held+int64(n) > b.limit:
		return &errBudget{limit: b.limit}
	}
	b.held += int64(n)
	h.n += int64(n)
	b.peak = max(b.peak, b.held)
	if b.gauge != nil {
		b.gauge.Set(float64(b.held))
	}
	return nil
}

// give gives n of the bytes h holds back.
func (h *Hold) give(n int) {
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held -= int64(n)
	h.n -= int64(n)
	if b.gauge != nil {
		b.gauge.Set(float64(b.held))
	}
}

// Release gives back everything h holds.
func (h *Hold) Release() { h.give(int(h.n)) }

// turns are a handler's turns: a token per request being served.
type turns struct {
	c     chan struct{}
	gauge prometheus.Gauge // capi_proxy_webhook_active_requests of the handler; nil records nothing
}

// wait takes a turn, waiting until ctx ends; it returns the function that gives the turn back, or false
// when ctx ended first.
func (t *turns) wait(ctx context.Context) (func(), bool) {
	select {
	case t.c <- struct{}{}:
	case <-ctx.Done():
		return nil, false
	}
	if t.gauge != nil {
		t.gauge.Inc()
	}
	return func() {
		if t.gauge != nil {
			t.gauge.Dec()
		}
		<-t.c
	}, true
}

// Limits are a handler's budget, turns and timeouts. One handler serves every listener of a proxy
// with one Limits, so that its bounds are the proxy's.
type Limits struct {
	budget *budget
	turns  *turns
	// ReadTimeout and WriteTimeout are the package's ReadTimeout and WriteTimeout; tests lower them.
	ReadTimeout, WriteTimeout time.Duration
}

// NewLimits returns the limits of a handler named name (the webhook label of the
// capi_proxy_webhook_* gauges: conversion or admission): maxHeld bytes held at once by its requests,
// maxConcurrent requests served at once; recorded in m (nil records nothing).
func NewLimits(name string, maxHeld int64, maxConcurrent int, m *metrics.Metrics) *Limits {
	l := &Limits{budget: &budget{limit: maxHeld}, turns: &turns{c: make(chan struct{}, maxConcurrent)},
		ReadTimeout: ReadTimeout, WriteTimeout: WriteTimeout}
	l.budget.gauge, l.turns.gauge = m.WebhookGauges(name)
	return l
}

// NewHold returns a request's hold on the budget, empty; Release gives back what it took.
func (l *Limits) NewHold() *Hold { return &Hold{b: l.budget} }

// Wait takes one of the turns, waiting until ctx ends; it returns the function that gives the turn
// back, or false when ctx ended first.
func (l *Limits) Wait(ctx context.Context) (func(), bool) { return l.turns.wait(ctx) }

// Held returns the bytes the requests hold of the budget now, and the most they held at once (for
// tests).
func (l *Limits) Held() (held, peak int64) { return l.budget.inUse() }

// MaxHeld returns the budget's bound, in bytes.
func (l *Limits) MaxHeld() int64 { return l.budget.limit }

// Recorded reports whether the budget and the turns are recorded in gauges (for tests).
func (l *Limits) Recorded() bool { return l.budget.gauge != nil && l.turns.gauge != nil }

// Deadlines are the read and write deadlines of a webhook request (Limits.SetDeadlines). BodyRead
// lifts the read deadline once the whole body is read, and Done flushes the answer and lifts the write
// deadline, which an HTTP/1 connection would otherwise keep into its next request (Go's server sets one
// per request only with a WriteTimeout). A body left unread keeps its read deadline, which then bounds
// what the server reads of it after the handler; the next request of the connection gets its own.
type Deadlines struct{ rc *http.ResponseController }

// SetDeadlines sets the read and write deadlines of a webhook request from start (Limits.ReadTimeout,
// Limits.WriteTimeout) on its connection or stream. A ResponseWriter that cannot take deadlines (a
// test's recorder) is served without.
func (l *Limits) SetDeadlines(w http.ResponseWriter, start time.Time) Deadlines {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(start.Add(l.ReadTimeout))
	_ = rc.SetWriteDeadline(start.Add(l.WriteTimeout))
	return Deadlines{rc: rc}
}

// BodyRead lifts the read deadline.
func (d Deadlines) BodyRead() { _ = d.rc.SetReadDeadline(time.Time{}) }

// Done flushes the answer and lifts the write deadline.
func (d Deadlines) Done() {
	_ = d.rc.Flush()
	_ = d.rc.SetWriteDeadline(time.Time{})
}

// BodyError is the API error for an error reading a request's body of what ("ConversionReview"),
// limited to limit bytes: 413 for a body over limit or over the whole budget, 429 (Retry-After 1) for
// a budget others hold, 408 for a body that did not arrive within ReadTimeout, 400 otherwise.
func (l *Limits) BodyError(err error, what string, limit int64) error {
	var tooLarge *http.MaxBytesError
	var budget *errBudget
	switch {
	case errors.As(err, &tooLarge):
		return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("a %s is limited to %d bytes", what, limit))
	case errors.As(err, &budget) && budget.tooLarge:
		return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("reading the %s: %v", what, err))
	case errors.As(err, &budget):
		return apierrors.NewTooManyRequests(fmt.Sprintf("reading the %s: %v; try again", what, err), 1)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusRequestTimeout,
			Reason: metav1.StatusReasonTimeout, Message: fmt.Sprintf("the %s did not arrive within %s", what, l.ReadTimeout)}}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return apierrors.NewBadRequest(fmt.Sprintf("reading the %s: the body ended early", what))
	}
	return apierrors.NewBadRequest(fmt.Sprintf("reading the %s: %v", what, err))
}

// WriteStatus writes err as status.Write does, with the Retry-After header its details ask for, as
// kube-apiserver writes an error (responsewriters.ErrorNegotiated).
func WriteStatus(w http.ResponseWriter, err error) {
	if s := status.ToStatus(err); s.Details != nil && s.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(s.Details.RetryAfterSeconds)))
	}
	status.Write(w, err)
}
