package adapt

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// recorder is an http.ResponseWriter that keeps a whole response in memory, for the adapter's own
// requests through the proxy (discovery, the read of a patch) and for small answers.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}

func (r *recorder) Flush() {}

// status returns the response code (200 if the handler wrote nothing).
func (r *recorder) status() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}

// record serves req with next and returns the whole response. A panic of next with
// http.ErrAbortHandler (ReverseProxy's way to break off a response) becomes an error.
func record(next http.Handler, req *http.Request) (rec *recorder, err error) {
	req = identity(req)
	rec = newRecorder()
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler { //nolint:errorlint // ReverseProxy panics with this very value
				panic(p)
			}
			err = errors.New("the response was broken off")
		}
	}()
	next.ServeHTTP(rec, req)
	return rec, nil
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

// streamed is the response of next to one request, read as next writes it: headers once next has
// written them, then the body through a pipe, so that a watch flows event by event.
type streamed struct {
	header http.Header
	code   int
	body   io.ReadCloser
}

// serveStreamed serves req with next in its own goroutine and returns once next has written its headers (or
// returned). The caller must close body; closing it early makes next's writes fail, as a client that went
// away does. When next breaks its response off (http.ErrAbortHandler), reading body fails.
func serveStreamed(next http.Handler, req *http.Request) *streamed {
	req = identity(req)
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, pw: pw, started: make(chan struct{})}
	go func() {
		var err error
		defer func() {
			if p := recover(); p != nil {
				if p != http.ErrAbortHandler { //nolint:errorlint // ReverseProxy panics with this very value
					err = fmt.Errorf("serving %s: %v", req.URL.Path, p)
				} else {
					err = errors.New("the response was broken off")
				}
			}
			w.WriteHeader(http.StatusOK) // a handler that wrote nothing answered 200 with no body
			_ = pw.CloseWithError(err)
		}()
		next.ServeHTTP(w, req)
	}()
	<-w.started
	return &streamed{header: w.snapshot, code: w.code, body: pr}
}

// pipeWriter is the http.ResponseWriter of serveStreamed.
type pipeWriter struct {
	header   http.Header
	snapshot http.Header
	code     int
	pw       *io.PipeWriter
	once     sync.Once
	started  chan struct{}
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(code int) {
	w.once.Do(func() {
		w.code, w.snapshot = code, w.header.Clone()
		close(w.started)
	})
}

func (w *pipeWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(p)
}

// Flush does nothing: a write returns only once the reader has taken the data.
func (w *pipeWriter) Flush() {}

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
// answers it writes whole as kube-apiserver does (responsewriters.SerializeObject): with gzip, when the
// client's Accept-Encoding names it (a "gzip" token, no q-values) and the body is larger than 128 KiB
// (defaultGzipThresholdBytes). Streams (watches) are not compressed, as kube-apiserver's are not.
const gzipThreshold = 128 << 10

// acceptsGzip is the http.ResponseWriter of a client whose Accept-Encoding names gzip; writeBody
// compresses what it writes to one.
type acceptsGzip struct{ http.ResponseWriter }

// Unwrap lets http.ResponseController reach the underlying writer's Flush.
func (w acceptsGzip) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// gzipping returns w, marked if r's client accepts gzip.
func gzipping(w http.ResponseWriter, r *http.Request) http.ResponseWriter {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, token := range strings.Split(v, ",") {
			if strings.TrimSpace(token) == "gzip" {
				return acceptsGzip{w}
			}
		}
	}
	return w
}

// writeBody writes a whole response, gzip'ed if w is acceptsGzip and body is larger than
// gzipThreshold.
func writeBody(w http.ResponseWriter, header http.Header, code int, body []byte) {
	copyHeader(w, header)
	if _, ok := w.(acceptsGzip); ok && len(body) > gzipThreshold && header.Get("Content-Encoding") == "" {
		var buf bytes.Buffer
		gw := gzip.NewWriter(&buf)
		if _, err := gw.Write(body); err == nil && gw.Close() == nil {
			body = buf.Bytes()
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Add("Vary", "Accept-Encoding")
		}
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
