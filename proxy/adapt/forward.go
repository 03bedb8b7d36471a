package adapt

import (
	"net/http"
	"strconv"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/gzip"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/inprocess"
)

// record serves req with next, in process (inprocess.Serve), and returns the whole response. The error
// is inprocess.ErrBrokenOff when next broke the response off.
func record(next http.Handler, req *http.Request) (*inprocess.Recorder, error) {
	return inprocess.Serve(next, identity(req))
}

// identity returns req asking for an uncompressed answer: the adapter reads and converts what next writes,
// and next gzips large or streamed answers for clients that accept it.
func identity(req *http.Request) *http.Request {
	if req.Header.Get("Accept-Encoding") == "" {
		return req
	}
	out := req.Clone(req.Context())
	out.Header.Del("Accept-Encoding")
	return out
}

// serveStreamed serves req with next in its own goroutine (inprocess.Start) and returns once next has
// written its headers (or returned). The caller must close the body; closing it early makes next's
// writes fail, as a client that went away does. When next breaks its response off, reading the body
// fails with inprocess.ErrBrokenOff.
func serveStreamed(next http.Handler, req *http.Request) *inprocess.Streamed {
	return inprocess.Start(next, identity(req))
}

// copyHeader copies a response's headers to w, but for the length (the adapter changes the body).
func copyHeader(w http.ResponseWriter, h http.Header) {
	for k, vs := range h {
		if k == "Content-Length" {
			continue
		}
		w.Header()[k] = append([]string(nil), vs...)
	}
}

// The Adapter asks the proxy behind it for uncompressed answers (identity), so it compresses the
// answers it writes whole as kube-apiserver does (responsewriters.SerializeObject): with gzip, at
// kube-apiserver's level, when the client accepts it (gzip.Accepts) and the body is larger than
// gzip.Threshold (128 KiB). Streams (watches) are not compressed, as kube-apiserver's are not.
const gzipThreshold = gzip.Threshold

// acceptsGzip is the http.ResponseWriter of a client whose Accept-Encoding names gzip; writeBody
// compresses what it writes to one.
type acceptsGzip struct{ http.ResponseWriter }

// Unwrap lets http.ResponseController reach the underlying writer's Flush.
func (w acceptsGzip) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// gzipping returns w, marked if r's client accepts gzip.
func gzipping(w http.ResponseWriter, r *http.Request) http.ResponseWriter {
	if gzip.Accepts(r.Header) {
		return acceptsGzip{w}
	}
	return w
}

// writeBody writes a whole response, gzip'ed if w is acceptsGzip and body is larger than
// gzipThreshold.
func writeBody(w http.ResponseWriter, header http.Header, code int, body []byte) {
	copyHeader(w, header)
	if _, ok := w.(acceptsGzip); ok && len(body) > gzipThreshold && header.Get("Content-Encoding") == "" {
		if zipped, err := gzip.Bytes(body); err == nil {
			body = zipped
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Add("Vary", "Accept-Encoding")
		}
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
