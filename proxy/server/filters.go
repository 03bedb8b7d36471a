package server

// The filters: what every request goes through before the server dispatches it (New builds the chain).

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"net/textproto"
	"net/url"
	"strings"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/httpstream" //nolint:staticcheck // k8s.io/streaming, its new home, has no release before Kubernetes 0.36, and the tree must build at CAPI v1.13's pins too

	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
	"github.com/openshift/hypershift-capi-proxy/proxy/cutover"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/inprocess"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
)

// exchange is the proxy's own state of one request, shared by its steps through its context: the
// classification it refers to, where the request goes (its target), and the response step chosen for it
// (nil: the response is forwarded as it is).
type exchange struct {
	// req is the classification withClass put into the request's context: the value classify.FromContext
	// returns, read only, not a copy of it.
	req *classify.Request
	// target is where the request goes, decided once before the dispatch (by the cut-over, package
	// cutover, or withTarget, route.go) and read only after it; nil before.
	target *cutover.Target
	// url is the URL of the request classified, which tells it from the requests a handler makes itself.
	url     *url.URL
	respond func(*http.Response) error
	// failed is set once a translation error of this request has been counted, so that an error seen
	// by two steps (a stream that fails before its first output) is counted once.
	failed atomic.Bool
	// gzip is set when the client accepts a gzip'ed answer (the proxy asks the backend for gzip itself and
	// decompresses it to translate).
	gzip bool
	// yaml is set when kube-apiserver would answer the client in YAML (negotiate.AnswersYAML): the proxy
	// asks for JSON and writes the translation in YAML.
	yaml bool
	// answer is the media type kube-apiserver would answer a discovery request in (negotiate.Answer):
	// the proxy asks for JSON and writes the rewritten document in it (discovery.Encode).
	answer string
	// rulesReview is set for a SelfSubjectRulesReview: whether the namespace it reviews is served from the
	// upstream groups (accessreview.go).
	rulesReview *bool
	// sent is the request body as the client sent it and as the proxy forwarded it, where it changed it
	// (translateRequest).
	sent *sentBody
	// sharedScope, when set, is the scope under which a watch's translations are shared with the other
	// watches of its resource (translateResponse): it names the resource whose translation they are.
	sharedScope string
	// watch is a watch's answer once its headers are ready, for the handler to copy (serveWatch).
	watch *watchCopy
	// statusUpstream, when set, translates the backend's Status bodies for this request instead of
	// s.bodies.Upstream (statusOf): a resource whose objects are named after a group renames a private
	// name in details.name (groupnamed.go).
	statusUpstream func([]byte) ([]byte, error)
}

type exchangeKey struct{}

func exchangeFrom(ctx context.Context) *exchange {
	ex, _ := ctx.Value(exchangeKey{}).(*exchange)
	return ex
}

// withClass classifies a request and puts its classification (classify.NewContext: the one value every
// package reads) and its exchange, the proxy's own state of the request, into the request's context. A
// request it has classified already (the same request, passed on by a handler between two withClass) goes
// through as it is: each request is classified once.
func withClass(c *classify.Classifier, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ex := exchangeFrom(r.Context()); ex != nil && ex.url == r.URL {
			next.ServeHTTP(w, r)
			return
		}
		req := c.Classify(r)
		next.ServeHTTP(w, r.WithContext(newExchange(r.Context(), &req, r.URL)))
	})
}

// newExchange returns a copy of ctx carrying req (classify.NewContext) and a new exchange of the request
// of u that refers to it.
func newExchange(ctx context.Context, req *classify.Request, u *url.URL) context.Context {
	ex := &exchange{req: req, url: u}
	return context.WithValue(classify.NewContext(ctx, req), exchangeKey{}, ex)
}

// withAbort is the outermost stage: it makes every request abortable (inprocess.Abortable) and breaks
// off the response of one a stage aborted (inprocess.Abort: the Adapter when an answer it converts was
// broken off, proxyError when the backend reset the request's stream, watchcopy.Copier.Copy when a watch cannot be
// copied) once the chain returned, in net/http's documented way, as ReverseProxy does:
// panic(http.ErrAbortHandler), which resets the client's HTTP/2 stream or closes its HTTP/1.1
// connection, so that the client never takes a response cut short for a whole one. It is the one place
// the proxy's own stages break a response off.
func withAbort(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, aborted := inprocess.Abortable(r)
		next.ServeHTTP(w, r)
		if aborted() != nil {
			panic(http.ErrAbortHandler)
		}
	})
}

// withLoopbackIdentity answers a client on a loopback address uncompressed: it sets the request's
// Accept-Encoding to "identity", so that no step of the chain gzips an answer for it (gzip.Compress, the
// Adapter, OpenAPI v2) and an answer the backend would gzip is asked for uncompressed
// (gzip.PassThrough); lists are still asked of the backend gzip'ed, and decompressed (listsGzip). HTTP
// lets a server answer in identity whatever Accept-Encoding names (RFC 9110 section 12.5.3), and
// client-go reads either. A client elsewhere, or a RemoteAddr that is not an address (a Unix socket),
// keeps its header. With on false it leaves next as it is (Options.GzipLoopback).
func withLoopbackIdentity(on bool, next http.Handler) http.Handler {
	if !on {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Header["Accept-Encoding"]; ok && loopback(r.RemoteAddr) {
			r.Header.Set("Accept-Encoding", "identity")
		}
		next.ServeHTTP(w, r)
	})
}

// loopback reports whether a RemoteAddr ("host:port", as net/http sets it) is a loopback address
// (127.0.0.0/8, ::1, or ::ffff:127.0.0.0/104).
func loopback(remoteAddr string) bool {
	ap, err := netip.ParseAddrPort(remoteAddr)
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// withUnrouted answers a request of a private group, and one of a mapped group that no route serves and
// whose path does not name its group plainly, with 404 as kube-apiserver answers a group, version or
// resource it does not serve (through the proxy the private groups do not exist), and a request whose
// target is not a path ("GET a:b HTTP/1.1", which the HTTP server lets through) with 400. Any other
// Unrouted request goes on, to be answered by the backend (serveUnrouted).
func withUnrouted(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Opaque != "" || !strings.HasPrefix(r.URL.Path, "/") {
			status.Write(w, apierrors.NewBadRequest(fmt.Sprintf("the request target %q is not a path", r.RequestURI)))
			return
		}
		req, _ := classify.FromContext(r.Context())
		if req.Class == classify.Private || req.Class == classify.Unrouted && req.BackendPath == r.URL.Path {
			status.NotFound(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// withBodyLimit answers a resource request whose body kube-apiserver would read up to its limit
// (classify.Request.Writes), and
// whose declared Content-Length exceeds limit, with 413, as kube-apiserver would, before reading any of
// it. Bodies without a declared length are bounded where the proxy reads them (readBody), or by the
// backend where it forwards them unread.
func withBodyLimit(limit int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := classify.FromContext(r.Context())
		if r.ContentLength > limit && req.IsResource && !req.LongRunning && req.Writes() {
			status.Write(w, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", limit)))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// withUpgrades sends genuine connection upgrades (classify.Upgrade: exec, attach, port-forward, proxy,
// a pod's log over a websocket) to upgrades untouched, and a watch over a websocket on with its upgrade
// headers (its events are translated frame by frame, translateWebSocket). Any other request's upgrade headers
// are removed (withoutUpgrade): kube-apiserver serves such a request as if they were not there, and so
// does the proxy, with every translation and guard of the request's class.
func withUpgrades(upgrades, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := classify.FromContext(r.Context())
		switch {
		case req.Class == classify.Upgrade:
			upgrades.ServeHTTP(w, r)
			return
		case !req.WebSocket:
			withoutUpgrade(r.Header)
		}
		next.ServeHTTP(w, r)
	})
}

// withoutUpgrade removes the headers that ask for a connection upgrade from a request that carries any:
// the Upgrade header, the Connection header and the hop-by-hop headers it names (which a proxy removes
// anyway, RFC 9110 section 7.6.1). Without them the request reaches the backend as the ordinary request
// kube-apiserver takes it for, over HTTP/2 too (where Connection and Upgrade are not allowed).
func withoutUpgrade(h http.Header) {
	if _, ok := h["Upgrade"]; !ok && !httpstream.IsUpgradeRequest(&http.Request{Header: h}) {
		return
	}
	for _, v := range h["Connection"] {
		for _, name := range strings.Split(v, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	h.Del("Connection")
	h.Del("Upgrade")
}
