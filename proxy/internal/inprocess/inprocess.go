// Package inprocess serves the requests the proxy makes to its own handlers: the Adapter's reads and
// writes in the backend's version and its reads of discovery (package adapt), and the parts of a merged
// cluster-wide list or watch (package cutover). Serve records a handler's whole answer, Start streams it
// through a pipe; a response the handler breaks off is an error (ErrBrokenOff), where net/http's server
// would reset the client's stream.
//
// A handler breaks its response off with Abort, which records why in the request's context and leaves
// the breaking off to the stage that made the request abortable (Abortable): package server's outermost
// handler for a client's request, Serve and Start for a request served in process. A panic of the
// handler (net/http's ReverseProxy panics with http.ErrAbortHandler when it cannot copy a response) is
// an error too.
package inprocess

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"sync"

	"k8s.io/klog/v2"
)

// ErrBrokenOff is the error of a response its handler broke off, by Abort or by panicking with
// http.ErrAbortHandler.
var ErrBrokenOff = errors.New("the response was broken off")

type abortKey struct{}

// aborted is what Abort recorded for a request.
type aborted struct {
	mu  sync.Mutex
	err error
}

// Abortable returns r with a place for Abort in its context, and the function that returns what Abort
// recorded there (nil: nothing). A request made abortable again (a sub-request cloned from it, served in
// process) has a place of its own.
func Abortable(r *http.Request) (*http.Request, func() error) {
	a := &aborted{}
	return r.WithContext(context.WithValue(r.Context(), abortKey{}, a)), func() error {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.err
	}
}

// Abort records that the response to r must be broken off, for err: the stage that made r abortable
// breaks it off once the handler returned, so the handler must return after it, writing nothing more.
// The first error recorded is kept. Without such a stage (a handler served by net/http directly) it
// breaks the response off itself, as net/http documents it (panic(http.ErrAbortHandler)).
func Abort(r *http.Request, err error) {
	a, ok := r.Context().Value(abortKey{}).(*aborted)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err == nil {
		a.err = err
	}
}

// Recorder is the http.ResponseWriter of Serve: it keeps a whole response in memory.
type Recorder struct {
	header http.Header
	code   int
	// Body is the response body.
	Body bytes.Buffer
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{header: http.Header{}} }

// Header returns the response headers.
func (r *Recorder) Header() http.Header { return r.header }

// WriteHeader records the first code written.
func (r *Recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *Recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.Body.Write(p)
}

// Flush does nothing: the response is kept whole.
func (r *Recorder) Flush() {}

// Code returns the response code, 200 if the handler wrote none (as net/http answers).
func (r *Recorder) Code() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}

// Serve serves req with h and returns the whole response. The error is ErrBrokenOff when h broke the
// response off or panicked (the Recorder then holds what it wrote before).
func Serve(h http.Handler, req *http.Request) (*Recorder, error) {
	rec := NewRecorder()
	return rec, serve(h, rec, req)
}

// serve serves req with h into w and returns why the response was broken off (nil if it was not).
func serve(h http.Handler, w http.ResponseWriter, req *http.Request) (err error) {
	req, abortedWith := Abortable(req)
	defer func() {
		if p := recover(); p != nil {
			err = panicked(req, p)
		}
	}()
	h.ServeHTTP(w, req)
	if cause := abortedWith(); cause != nil {
		return fmt.Errorf("%w: %w", ErrBrokenOff, cause)
	}
	return nil
}

// panicked returns the error of a handler's panic with p: ErrBrokenOff for http.ErrAbortHandler, else
// ErrBrokenOff naming p, logged with its stack as net/http's server logs a handler's panic.
func panicked(req *http.Request, p any) error {
	if p == http.ErrAbortHandler { //nolint:errorlint // handlers panic with this very value
		return ErrBrokenOff
	}
	klog.ErrorS(nil, "A handler served in process panicked", "path", req.URL.Path, "panic", p, "stack", string(debug.Stack()))
	return fmt.Errorf("%w: serving %s: %v", ErrBrokenOff, req.URL.Path, p)
}

// Streamed is the response of a handler to one request, read as the handler writes it (Start).
type Streamed struct {
	// Code and Header are the response's status code and headers, as they were when the handler wrote
	// them (or returned without writing: 200).
	Code   int
	Header http.Header
	// Body is the response body as the handler writes it. Reading it fails with the error of Serve once
	// the handler broke the response off; closing it makes the handler's writes fail, as a client that
	// went away does.
	Body io.ReadCloser
}

// Start serves req with h in its own goroutine and returns once h has written its headers (or
// returned). The caller must close the body.
func Start(h http.Handler, req *http.Request) *Streamed {
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, pw: pw, started: make(chan struct{})}
	go func() {
		err := serve(h, w, req)
		w.WriteHeader(http.StatusOK) // a handler that wrote nothing answered 200 with no body
		_ = pw.CloseWithError(err)
	}()
	<-w.started
	return &Streamed{Code: w.code, Header: w.snapshot, Body: pr}
}

// pipeWriter is the http.ResponseWriter of Start.
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
