// Package cutover serves each namespace's requests of mapped kinds from the API groups its serving mode
// names, during the migration of hosted clusters' objects between the upstream and the private groups:
// package server's handler chain runs its Filter after its own filters (classification, authentication
// headers, body limit, upgrades) and before the in-process conversion of versions and the dispatch.
//
// The serving mode is the Namespace label serving.Label (package migration/serving holds the contract),
// followed by Namespaces (namespaces.go) while an admission policy guards it:
//
//	mode            reads of mapped kinds        writes of mapped kinds       built-in kinds
//	private (none)  private groups, translated   private, translated          translated both ways
//	upstream        upstream, untranslated       upstream, untranslated       request untranslated, response translated
//	upstream-held   upstream, untranslated       429 + Retry-After            as upstream
//	private-held    private, translated          429 + Retry-After            as private
//	(unknown value) private, translated          429 + Retry-After            as private
//
// The Filter answers the requests the modes do not let through (cutover.go): 503 before the modes are
// known, 429 for a write of a held namespace, 410 Expired for a read from before a change of the groups
// it is served from; it decides every other request's Target (target.go), which the proxy's later stages
// only read, ends a namespace's watches with a 410 Expired ERROR event when those groups change
// (EndWatch), merges cluster-wide lists from both groups while namespaces are mixed (merge.go), and
// serves cluster-wide watches through the merge always, moving a namespace between the groups inside the
// open watch (watch.go). What it needs of the proxy (where it records a request's target, how it forwards
// a request as it is) is the Proxy interface.
package cutover

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/openshift/hypershift-capi-proxy/migration/serving"
	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
	"github.com/openshift/hypershift-capi-proxy/proxy/loglevel"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
)

// Proxy is what the Filter needs of the proxy whose requests it serves (package server): the proxy's
// own state of a request, where its target is kept, and the forwarding of a request as it is.
type Proxy interface {
	// SetTarget records t as where r, a request of the proxy's chain, goes: the stages after the Filter
	// read it.
	SetTarget(r *http.Request, t *Target)
	// ServeUpstream forwards r, whose target (SetTarget) is from UpstreamGroups, to the backend as it is:
	// the target's BackendPath, r's query, headers and body, and the backend's answer back as it is (a
	// watch's ended by EndWatch).
	ServeUpstream(w http.ResponseWriter, r *http.Request)
	// NewRequest returns r, a request the Filter makes itself (a part of a merged list or watch, whose
	// context carries nothing of the proxy's), classified as the proxy's first filters classify a
	// request, so that SetTarget and ServeUpstream take it.
	NewRequest(r *http.Request) *http.Request
}

// Filter serves each resource request by its namespace's serving mode (see the package doc). Make it
// with New.
type Filter struct {
	namespaces *Namespaces
	// retryAfter is the Retry-After of a held write and of a request before the modes are known, in
	// whole seconds (at least 1).
	retryAfter int
	proxy      Proxy
}

// New returns the Filter of the namespaces' modes n, answering held writes (429) and requests before n
// has synced (503) with Retry-After: retryAfter seconds (at least 1), and using p's request state and
// forwarding.
func New(n *Namespaces, retryAfter int, p Proxy) *Filter {
	return &Filter{namespaces: n, retryAfter: max(1, retryAfter), proxy: p}
}

// Handler serves each resource request by its namespace's serving mode (the package doc's table);
// next is the proxy's chain after the Filter, which serves the requests from the private groups, and
// the private parts of a merged list or watch (merge.go).
//
//   - Before the namespaces' modes are known (Namespaces.Synced), requests of mapped kinds, and writes
//     of namespaced built-in kinds (whose references to the upstream groups must stay untranslated in an
//     upstream namespace), are answered 503 with Retry-After: never served from the wrong groups.
//   - A write of a held namespace is answered 429 (hold), and so is a cluster-wide deletecollection of a
//     namespaced mapped kind while any namespace is labelled.
//   - A watch (but a watch list, sendInitialEvents), exact list or continued list from a resourceVersion
//     before the last change of the groups the namespace it covers is served from (across all
//     namespaces: the last move of any namespace between the private and the upstream groups) is
//     answered 410 Expired (expired), so that clients relist from the groups now served.
//   - Any other request's target is decided (TargetOf, with the namespaces' modes): a namespaced request
//     of a mapped kind goes to the private groups (next) or to the upstream groups as it is
//     (Proxy.ServeUpstream); a cluster-wide list of a namespaced mapped kind is next's while no
//     namespace is served from the upstream groups, and merged from both otherwise (merge.go); a
//     cluster-wide watch over HTTP is merged always (watch.go); any other watch is ended with a 410
//     Expired ERROR event when the mode of a namespace it covers changes (EndWatch).
func (f *Filter) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := classify.FromContext(r.Context())
		if !req.IsResource || req.Connect || (req.Class != classify.Mapped && req.Class != classify.Other) {
			next.ServeHTTP(w, r)
			return
		}
		if !f.namespaces.Synced() {
			if req.Class == classify.Mapped || req.Namespace != "" && req.Writes() && !(req.Group == "" && req.Resource == "namespaces") {
				f.NotSynced(w)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		view := f.namespaces.current()
		if f.guard(w, r, req, view) {
			return
		}
		t := TargetOf(r, req, Inputs{view: view, namespaces: f.namespaces})
		f.proxy.SetTarget(r, &t)
		switch {
		case t.From == MergedGroups && req.Watch:
			f.serveMergedWatch(w, r, req, next, view)
		case t.From == MergedGroups:
			f.serveMergedList(w, r, req, next, view)
		case t.From == UpstreamGroups && req.Class == classify.Mapped:
			f.proxy.ServeUpstream(w, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// guard answers (and reports true for) a request of a mapped kind that its namespaces' modes in view
// do not let through: a write of a held namespace, a cluster-wide deletecollection while any namespace
// is labelled (it would reach namespaces served from other groups, or held), and a read from before the
// last change of the groups the namespaces it covers are served from (expired).
func (f *Filter) guard(w http.ResponseWriter, r *http.Request, req *classify.Request, view *modes) bool {
	if req.Class != classify.Mapped || !req.Route.Namespaced {
		return false
	}
	if req.Namespace == "" {
		if req.Writes() {
			if view.labelled > 0 && req.Verb == "deletecollection" {
				f.hold(w, req, nsMode{mode: serving.PrivateHeld})
				return true
			}
			return false
		}
		return expired(w, r, req, view.moved)
	}
	m := view.mode(req.Namespace)
	if m.mode.Held() && req.Writes() {
		f.hold(w, req, m)
		return true
	}
	return expired(w, r, req, m.expired)
}

// hold answers a write of a held namespace as kube-apiserver answers a request it asks to be retried:
// 429 TooManyRequests with a Retry-After header and details.retryAfterSeconds
// (k8s.io/apiserver's responsewriters.ErrorNegotiated), which client-go honours by retrying.
func (f *Filter) hold(w http.ResponseWriter, req *classify.Request, m nsMode) {
	gr := schema.GroupResource{Group: req.Group, Resource: req.Resource}
	f.namespaces.countHeld(gr)
	what := gr.String()
	if req.Name != "" {
		what += fmt.Sprintf(" %q", req.Name)
	}
	where := "across all namespaces: namespaces are being moved between API groups"
	if req.Namespace != "" {
		label := string(m.mode)
		if m.unknown != "" {
			label = m.unknown + " (" + m.why() + ")"
		}
		where = fmt.Sprintf("in namespace %q: its objects are being moved between API groups (%s=%s)", req.Namespace, serving.Label, label)
	}
	klog.V(loglevel.Unusual).InfoS("Holding a write", "verb", req.Verb, "resource", gr, "namespace", req.Namespace, "name", req.Name)
	w.Header().Set("Retry-After", strconv.Itoa(f.retryAfter))
	status.Write(w, apierrors.NewTooManyRequests(fmt.Sprintf("writes to %s are held %s; retry after %ds", what, where, f.retryAfter), f.retryAfter))
}

// NotSynced answers a request that cannot be served before the namespaces' modes are known: 503 with
// Retry-After, which client-go retries.
func (f *Filter) NotSynced(w http.ResponseWriter) {
	f.unavailable(w, "the proxy does not know the namespaces' serving modes yet")
}

// unavailable answers 503 ServiceUnavailable with Retry-After.
func (f *Filter) unavailable(w http.ResponseWriter, message string) {
	err := apierrors.NewServiceUnavailable(message)
	err.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: int32(f.retryAfter)}
	w.Header().Set("Retry-After", strconv.Itoa(f.retryAfter))
	status.Write(w, err)
}

// expired answers (and reports true for) a request from before the last change of the groups the
// namespaces it covers are served from (since, a resourceVersion, 0 if none), as kube-apiserver answers
// a resourceVersion it no longer has: a watch with 200 and one ERROR event carrying a 410 Expired Status,
// a list with exact resourceVersion match, or a continued list whose token was issued before, with 410
// Expired. A list that
// asks for data not older than a resourceVersion (or any) is served: what is served now is newer. So is a
// watch that asks for the initial events (sendInitialEvents=true: its resourceVersion is a lower bound,
// resourceVersionMatch=NotOlderThan), as client-go's reflector relists with WatchList on; kube-apiserver
// serves it too, however old its resourceVersion.
func expired(w http.ResponseWriter, r *http.Request, req *classify.Request, since uint64) bool {
	if since == 0 {
		return false
	}
	q := r.URL.Query()
	var rv uint64
	switch {
	case req.Watch && q.Get("sendInitialEvents") == "true":
		return false
	case req.Watch:
		rv = parseRV(q.Get("resourceVersion"))
	case req.Verb != "list":
		return false
	case q.Get("continue") != "":
		rv = continueRV(q.Get("continue"))
	case q.Get("resourceVersionMatch") == string(metav1.ResourceVersionMatchExact):
		rv = parseRV(q.Get("resourceVersion"))
	}
	if rv == 0 || rv >= since {
		return false
	}
	err := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d): the namespace's serving mode changed", rv, since))
	if req.Watch {
		writeWatchError(w, err)
	} else {
		status.Write(w, err)
	}
	return true
}

// continueRV returns the resourceVersion of a list continue token as kube-apiserver's storage encodes it
// (k8s.io/apiserver/pkg/storage.EncodeContinue: base64url JSON with "rv"), 0 if it is not one.
func continueRV(token string) uint64 {
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return 0
	}
	var c struct {
		RV int64 `json:"rv"`
	}
	if json.Unmarshal(data, &c) != nil || c.RV <= 0 {
		return 0
	}
	return uint64(c.RV)
}

// expiredEvent is the watch ERROR event that ends a watch whose namespaces' serving mode changed.
func expiredEvent(err *apierrors.StatusError) []byte {
	s := err.ErrStatus
	s.Kind, s.APIVersion = "Status", "v1"
	b, _ := json.Marshal(struct {
		Type   string        `json:"type"`
		Object metav1.Status `json:"object"`
	}{Type: "ERROR", Object: s})
	return append(b, '\n')
}

// writeWatchError answers a watch with one ERROR event, as kube-apiserver answers a watch from a
// resourceVersion it no longer has.
func writeWatchError(w http.ResponseWriter, err *apierrors.StatusError) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(expiredEvent(err))
}

// modeChanged is the error a watch ends with when the groups its namespaces are served from change.
var modeChanged = apierrors.NewResourceExpired("the namespace's serving mode changed: list again")

// EndWatch makes the answer resp to a request classified as req, whose target is t (nil: none yet),
// end at an event boundary with a 410 Expired ERROR event once t's Ends is cancelled by a mode change,
// if it is a watch's (200): client-go's reflectors then list again, from the groups now served. Watches
// over a websocket are not ended.
func EndWatch(t *Target, req *classify.Request, resp *http.Response) {
	if t == nil || t.Ends == nil || resp.StatusCode != http.StatusOK || !req.Watch {
		return
	}
	resp.Body = newWatchEnder(resp.Body, t.Ends, expiredEvent(modeChanged))
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
}

// watchEnder passes a newline-delimited watch stream through until end is cancelled with the cause
// errModeChanged, then ends it after the event in flight with tail.
//
// No goroutine waits for end, so that an open watch holds none for it: Read looks at end before and
// after each read of src, and when end comes while the stream is between events (Read waits for the
// backend, or is about to), its callback (context.AfterFunc) closes src to wake Read, which then drops
// whatever it read (it began after the last event passed on) and ends the stream.
type watchEnder struct {
	src  io.ReadCloser
	end  context.Context
	stop func() bool

	// tail, then err, are what Read returns once err is set (only Read's goroutine touches them).
	tail []byte
	err  error

	mu sync.Mutex
	// boundary is true when everything passed on so far ends with a whole event.
	boundary bool
	// ending is set once end came: the stream ends at the next event boundary.
	ending bool
	// closed is set when the callback closed src at a boundary.
	closed bool
}

func newWatchEnder(src io.ReadCloser, end context.Context, tail []byte) *watchEnder {
	e := &watchEnder{src: src, end: end, tail: tail, boundary: true}
	e.stop = context.AfterFunc(end, e.ended)
	return e
}

// ended runs when end is done: at a boundary, it closes src to end the stream.
func (e *watchEnder) ended() {
	e.mu.Lock()
	e.noticeEnd()
	wake := e.ending && e.boundary && !e.closed
	e.closed = e.closed || wake
	e.mu.Unlock()
	if wake {
		_ = e.src.Close()
	}
}

// noticeEnd sets ending once end was cancelled by a mode change (not by the request's end). e.mu is held.
func (e *watchEnder) noticeEnd() {
	if !e.ending && e.end.Err() != nil && errors.Is(context.Cause(e.end), errModeChanged) {
		e.ending = true
	}
}

func (e *watchEnder) Read(p []byte) (int, error) {
	if e.err != nil {
		return e.readTail(p)
	}
	e.mu.Lock()
	e.noticeEnd()
	done := e.ending && e.boundary
	e.mu.Unlock()
	if done {
		e.err = io.EOF
		return e.readTail(p)
	}

	n, err := e.src.Read(p)

	e.mu.Lock()
	defer e.mu.Unlock()
	e.noticeEnd()
	if e.closed {
		e.err = io.EOF
		return e.readTail(p)
	}
	if e.ending && n > 0 {
		if i := bytes.IndexByte(p[:n], '\n'); i >= 0 {
			// The event in flight is complete: the tail follows it, and nothing else.
			n, err, e.err = i+1, nil, io.EOF
		}
	}
	if n > 0 {
		e.boundary = p[n-1] == '\n'
	}
	return n, err
}

// readTail returns the rest of the tail, then e.err.
func (e *watchEnder) readTail(p []byte) (int, error) {
	if len(e.tail) == 0 {
		return 0, e.err
	}
	n := copy(p, e.tail)
	e.tail = e.tail[n:]
	return n, nil
}

// Idle reports whether the stream holds nothing and its next Read reads src, which holds nothing
// either (the idler interface of package internal/watchcopy): not once it is ending at a boundary,
// where Read ends the stream at once.
func (e *watchEnder) Idle() bool {
	if e.err != nil {
		return false
	}
	e.mu.Lock()
	ending := e.ending && e.boundary
	e.mu.Unlock()
	i, ok := e.src.(interface{ Idle() bool })
	return !ending && ok && i.Idle()
}

func (e *watchEnder) Close() error {
	e.stop()
	return e.src.Close()
}
