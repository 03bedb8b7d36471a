package watchcopy

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/inprocess"
	"github.com/openshift/hypershift-capi-proxy/proxy/stream"
)

// countingBuffers is a copy buffer pool that counts the buffers taken and not given back.
type countingBuffers struct{ out atomic.Int64 }

func (c *countingBuffers) get() *[]byte {
	c.out.Add(1)
	b := make([]byte, 8<<10)
	return &b
}
func (c *countingBuffers) put(*[]byte) { c.out.Add(-1) }

// backendBody is a watch body from the backend as the HTTP/2 client hands it on: a Read returns what
// is buffered of the last chunk the backend sent, and waits for the next chunk when nothing is. Each
// Read that has to wait first reports the size of its caller's buffer on waiting.
type backendBody struct {
	chunks  chan string
	waiting chan int
	rest    string
}

func (b *backendBody) Read(p []byte) (int, error) {
	if b.rest == "" {
		b.waiting <- len(p)
		chunk, ok := <-b.chunks
		if !ok {
			return 0, io.EOF
		}
		b.rest = chunk
	}
	n := copy(p, b.rest)
	b.rest = b.rest[n:]
	return n, nil
}

func (b *backendBody) Close() error { return nil }

// flushes records what was written to the client at each flush.
type flushes struct {
	*httptest.ResponseRecorder
	flushed chan string
	at      int
}

func (f *flushes) Flush() {
	out := f.Body.String()
	f.flushed <- out[f.at:]
	f.at = len(out)
}

// TestCopyHoldsNoBufferWhileWaiting: between events a watch waits for the backend on a byte of
// its own, without a copy buffer, whether its events are translated (a WatchReader) or passed on as
// they are; each event is written and flushed whole, as soon as it came.
func TestCopyHoldsNoBufferWhileWaiting(t *testing.T) {
	events := []string{`{"type":"ADDED","object":{"kind":"Machine"}}` + "\n", `{"type":"MODIFIED","object":{"kind":"Machine","x":"` + strings.Repeat("y", 3000) + `"}}` + "\n"}
	for _, translated := range []bool{false, true} {
		name := map[bool]string{false: "passed on", true: "translated"}[translated]
		t.Run(name, func(t *testing.T) {
			buffers := &countingBuffers{}
			c := &Copier{buffers: buffers}
			backend := &backendBody{chunks: make(chan string), waiting: make(chan int)}
			src := NewSource(backend)
			var body io.ReadCloser = src
			if translated {
				r := stream.NewWatchReader(src, stream.Objects{Object: func(obj []byte) ([]byte, error) { return obj, nil }})
				body = translatedBody{WatchReader: r, Closer: src}
			}
			w := &flushes{ResponseRecorder: httptest.NewRecorder(), flushed: make(chan string, 10)}
			done := make(chan struct{})
			go func() {
				defer close(done)
				c.Copy(w, httptest.NewRequest(http.MethodGet, "/?watch=true", nil), body, src)
			}()
			if got := <-w.flushed; got != "" {
				t.Fatalf("the headers' flush wrote %q", got)
			}
			for _, event := range events {
				if n := <-backend.waiting; n != 1 {
					t.Fatalf("the watch waited for the backend with a buffer of %d bytes, want its own byte", n)
				}
				if out := buffers.out.Load(); out != 0 {
					t.Fatalf("the watch holds %d copy buffers while it waits", out)
				}
				backend.chunks <- event
				if got := <-w.flushed; got != event {
					t.Fatalf("flushed %q, want the event %q", got, event)
				}
			}
			<-backend.waiting
			close(backend.chunks)
			<-done
			if out := buffers.out.Load(); out != 0 {
				t.Errorf("%d copy buffers not given back", out)
			}
			if got, want := w.Body.String(), strings.Join(events, ""); got != want {
				t.Errorf("the client got %q, want %q", got, want)
			}
		})
	}
}

// translatedBody is a translated watch's body as package server's watchBody is: it tells when it is idle.
type translatedBody struct {
	*stream.WatchReader
	io.Closer
}

// readCloser is a Reader with its own Close.
type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// failingWriter fails every write.
type failingWriter struct{ *httptest.ResponseRecorder }

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("the client went away") }

// TestCopyClientGone: a watch whose client cannot be written to ends and closes the backend's body,
// its response aborted (inprocess.Abort), as ReverseProxy ends a copy that failed.
func TestCopyClientGone(t *testing.T) {
	c := &Copier{buffers: &countingBuffers{}}
	closed := false
	body := readCloser{Reader: bytes.NewReader([]byte("{}\n")), close: func() error { closed = true; return nil }}
	r, aborted := inprocess.Abortable(httptest.NewRequest(http.MethodGet, "/?watch=true", nil))
	c.Copy(failingWriter{httptest.NewRecorder()}, r, body, NewSource(io.NopCloser(nil)))
	if aborted() == nil {
		t.Error("the response was not aborted")
	}
	if !closed {
		t.Error("the backend's body was not closed")
	}
}
