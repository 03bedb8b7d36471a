package server

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// streamBufferSize is how much translated output is gathered before it is handed on. Watches flush after
// every event regardless.
const streamBufferSize = 32 << 10

// gunzip decompresses a gzip'ed response body in place. The transport normally asks for gzip itself and
// decompresses it (the proxy removes the client's Accept-Encoding); this covers a backend that compresses
// anyway.
func gunzip(resp *http.Response) error {
	switch enc := strings.ToLower(resp.Header.Get("Content-Encoding")); enc {
	case "", "identity":
		return nil
	case "gzip":
	default:
		return apierrors.NewInternalError(fmt.Errorf("the backend sent an unsupported Content-Encoding %q", enc))
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("decompressing the backend's response: %w", err))
	}
	resp.Body = &readCloser{Reader: zr, close: resp.Body.Close}
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	return nil
}

// replaceBody reads the whole response body, translates it with fn and sets the result with its
// Content-Length. An empty body is left alone. A read failure is a 503, a translation failure a 500 whose
// message says what the backend sent that could not be translated.
func replaceBody(resp *http.Response, fn func([]byte) ([]byte, error)) error {
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("reading the backend's response: %v", err))
	}
	out := data
	if len(bytes.TrimSpace(data)) > 0 {
		if out, err = fn(data); err != nil {
			return apierrors.NewInternalError(fmt.Errorf("translating the backend's response: %w", err))
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(out))
	resp.ContentLength = int64(len(out))
	resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
	return nil
}

// streamBody replaces the response body with the output of translate, which runs in its own goroutine
// and reads the backend's body as the client reads the translation: nothing is held but the object being
// translated and streamBufferSize of output. translate may call flush to hand its output on at once (a
// watch does after every event).
//
// With waitForOutput, streamBody returns only once translate has handed on its first output or finished:
// a translation that fails before that (a malformed list, a list small enough to fit the buffer) is
// returned as a 500, and the client gets a clean Status. A failure after that can only break the
// connection off (ReverseProxy aborts the response). Without it (watches, whose first event can be
// minutes away), the response starts at once and translate reports failures in the stream.
func streamBody(resp *http.Response, waitForOutput bool, translate func(dst io.Writer, flush func() error, src io.Reader) error) error {
	src := resp.Body
	pr, pw := io.Pipe()
	started := &startSignal{w: pw, ch: make(chan struct{})}
	out := bufio.NewWriterSize(started, streamBufferSize)
	done := make(chan error, 1)
	go func() {
		defer src.Close()
		err := translate(out, out.Flush, src)
		if err == nil {
			err = out.Flush()
		}
		done <- err
		_ = pw.CloseWithError(err) // nil: the reader sees io.EOF
	}()

	if waitForOutput {
		select {
		case <-started.ch:
		case err := <-done:
			if err != nil && !started.fired() {
				return apierrors.NewInternalError(fmt.Errorf("translating the backend's response: %w", err))
			}
		}
	}
	resp.Body = &readCloser{Reader: pr, close: func() error {
		_ = pr.Close() // unblocks the goroutine's writes
		return src.Close()
	}}
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	return nil
}

// startSignal closes ch on the first write through it.
type startSignal struct {
	w    io.Writer
	ch   chan struct{}
	once sync.Once
}

func (s *startSignal) Write(p []byte) (int, error) {
	s.once.Do(func() { close(s.ch) })
	return s.w.Write(p)
}

func (s *startSignal) fired() bool {
	select {
	case <-s.ch:
		return true
	default:
		return false
	}
}

// readCloser is a Reader with its own Close.
type readCloser struct {
	io.Reader
	close func() error
}

func (r *readCloser) Close() error { return r.close() }
