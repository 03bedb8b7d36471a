package metrics

// The handler chain's filter of metrics (WithRequests): every request counted, timed and logged.

import (
	"bufio"
	"net"
	"net/http"
	"time"

	"k8s.io/klog/v2"

	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
	"github.com/openshift/hypershift-capi-proxy/proxy/loglevel"
)

// WithRequests is the handler chain's filter of metrics: it counts every request by its classification
// (classify.FromContext: a filter before it classified the request) and outcome, keeps watches open in the
// open_watches gauge while they are served, counts the requests of deprecated versions
// (deprecatedRequest) and logs each request at verbosity 3.
func WithRequests(m *Metrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := classify.FromContext(r.Context())
		start := time.Now()
		done := m.StartRequest(requestLabels(req), req.Watch, req.LongRunning)
		rec := &statusRecorder{ResponseWriter: w, answered: deprecatedRequest(m, req, r.UserAgent())}
		defer func() {
			code := rec.status()
			rec.answer(code)
			done(code)
			klog.V(loglevel.PerRequest).InfoS("Served", "verb", req.Verb, "path", r.URL.Path, "class", req.Class, "code", code, "duration", time.Since(start))
		}()
		next.ServeHTTP(rec, r)
	})
}

// requestLabels are the metric labels of req: group, resource and subresource only for a mapped
// resource, from its route, so that their values are bounded by the route table.
func requestLabels(req *classify.Request) RequestLabels {
	l := RequestLabels{Class: req.Class.String(), Verb: req.Verb}
	if req.Class == classify.Mapped {
		l.Group, l.Resource = req.Route.Upstream.Group, req.Route.Upstream.Resource
		switch {
		case req.Subresource == "":
		case req.Route.HasSubresource(req.Subresource):
			l.Subresource = req.Subresource
		default:
			l.Subresource = "other"
		}
	}
	return l
}

// deprecatedRequest returns the func that counts req, a request of a version upstream deprecates sent
// with the User-Agent userAgent, in requested_deprecated_apis_total once it is called with the status
// code of its answer, or nil for any other request. It is called as soon as the code is known (see
// statusRecorder.answered), so that a watch counts when it starts, not when it ends minutes later. An
// answer 401 is not counted: the request named no one the backend knows (kube-apiserver, too, counts
// only requests it has authenticated), and the series would otherwise be anyone's to raise who can
// reach the proxy.
func deprecatedRequest(m *Metrics, req *classify.Request, userAgent string) func(code int) {
	if m == nil || req.Class != classify.Mapped || !req.Route.Deprecated {
		return nil
	}
	up := req.Route.Upstream
	l := DeprecatedRequestLabels{Group: up.Group, Version: up.Version, Resource: up.Resource,
		Subresource: requestLabels(req).Subresource, RemovedRelease: req.Route.RemovedRelease}
	return func(code int) {
		if code != http.StatusUnauthorized {
			m.DeprecatedRequest(l, userAgent)
		}
	}
}

// statusRecorder remembers the status code of a response. http.ResponseController reaches the writer it
// wraps through Unwrap (Flush, deadlines); Hijack is its own, to see upgrades.
type statusRecorder struct {
	http.ResponseWriter
	code     int
	hijacked bool
	// answered, when set, is called once with the status code as soon as it is known: when the header
	// is written (a final code, not 1xx), when the first byte of the body is, when the connection is
	// hijacked (101), or, for a response that wrote nothing, by the handler's end (answer).
	answered func(code int)
}

// answer calls answered with code, unless it was called already.
func (w *statusRecorder) answer(code int) {
	if f := w.answered; f != nil {
		w.answered = nil
		f(code)
	}
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.code == 0 && code >= http.StatusOK {
		w.code = code
		w.answer(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
		w.answer(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.hijacked = true
		if w.code == 0 {
			w.answer(http.StatusSwitchingProtocols)
		}
	}
	return conn, rw, err
}

// status is the code the client got: 101 for an upgraded connection, 200 if nothing was written.
func (w *statusRecorder) status() int {
	switch {
	case w.code != 0:
		return w.code
	case w.hijacked:
		return http.StatusSwitchingProtocols
	default:
		return http.StatusOK
	}
}
