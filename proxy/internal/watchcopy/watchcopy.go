// Package watchcopy copies a watch's answer to the client. httputil.ReverseProxy copies a body through
// a buffer from its BufferPool that it holds for the response's life, and a watch is open for minutes
// while it waits for events: with 1,000 watches open that is 1,000 idle buffers. The proxy's watches
// are therefore copied by the proxy itself: ReverseProxy forwards the request and writes the response's
// headers, as for any other request, and is handed an empty body (package server's serveWatch); the
// handler then copies the real one (Copier.Copy), taking a copy buffer only while an event is being read
// and written, and waiting for the next one on a byte of its own (Source). Each event is still written
// and flushed at once, in one write per read as ReverseProxy does with FlushInterval -1.
//
// A watch over a websocket is copied by ReverseProxy, which joins the two upgraded connections; the
// backend's side of it is read frame by frame, each message translated as one watch event
// (NewWebSocket, websocket.go).
package watchcopy

import (
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"sync"

	"k8s.io/klog/v2"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/inprocess"
	"github.com/openshift/hypershift-capi-proxy/proxy/loglevel"
)

// Source is a watch's body from the backend, read through the translation or as it is. Its copy waits
// on it without a buffer (wait): the first byte of what the backend sends next is read into the watch's
// own byte, and the next Read hands it on with whatever the backend sent with it.
type Source struct {
	io.ReadCloser
	b    [1]byte
	held bool
	// err is what the backend's body returned while waiting; Read returns it after the byte held.
	err error
}

// NewSource returns the Source of body, a watch's body from the backend.
func NewSource(body io.ReadCloser) *Source { return &Source{ReadCloser: body} }

// wait returns once something can be read: a byte arrived or the backend's body ended.
func (s *Source) wait() {
	for !s.held && s.err == nil {
		var n int
		n, s.err = s.ReadCloser.Read(s.b[:])
		s.held = n > 0
	}
}

// Read hands on the byte held, if any, with what the backend's body has after it (read at once if it
// came with the byte, waited for otherwise: the byte begins an event, whose reader would wait for the
// rest anyway).
func (s *Source) Read(p []byte) (int, error) {
	switch {
	case len(p) == 0:
		return 0, nil
	case !s.held && s.err != nil:
		return 0, s.err
	case !s.held:
		return s.ReadCloser.Read(p)
	}
	p[0], s.held = s.b[0], false
	if s.err != nil || len(p) == 1 {
		return 1, nil
	}
	n, err := s.ReadCloser.Read(p[1:])
	return n + 1, err
}

// Idle reports whether the source holds nothing: a body passed on as it is is between reads.
func (s *Source) Idle() bool { return !s.held && s.err == nil }

// idler is a watch body that can tell when it holds nothing, so that its next Read would wait for the
// backend (a translated watch's body, Source, the serving-mode filter's watchEnder). A body that cannot
// tell (an error's Status, a decompressed stream) is copied with a buffer held throughout.
type idler interface {
	Idle() bool
}

// bufferPool hands out copy buffers by pointer: a watch takes one and gives it back for every event,
// which must not allocate.
type bufferPool interface {
	get() *[]byte
	put(*[]byte)
}

// buffers is a pool of buffers of one size, by pointer (bufferPool) and as an httputil.BufferPool.
type buffers struct{ pool sync.Pool }

func (b *buffers) Get() []byte   { return *b.pool.Get().(*[]byte) }
func (b *buffers) Put(p []byte)  { b.pool.Put(&p) }
func (b *buffers) get() *[]byte  { return b.pool.Get().(*[]byte) }
func (b *buffers) put(p *[]byte) { b.pool.Put(p) }

// Copier copies watches' answers to their clients with copy buffers of one size, from a pool of its own.
type Copier struct {
	// pool is buffers as ReverseProxy takes them (BufferPool); nil in tests that count buffers.
	pool    *buffers
	buffers bufferPool
}

// NewCopier returns a Copier whose copy buffers have size bytes: an event that fits is copied in one
// read, a larger one in several (each flushed to the client).
func NewCopier(size int) *Copier {
	pool := &buffers{pool: sync.Pool{New: func() any { b := make([]byte, size); return &b }}}
	return &Copier{pool: pool, buffers: pool}
}

// BufferPool returns the Copier's buffers as an httputil.BufferPool, for the ReverseProxy that forwards
// the watches: it copies the bodies the handler does not (a refusal, a websocket's handshake) with them.
func (c *Copier) BufferPool() httputil.BufferPool { return c.pool }

// Copy copies a watch's answer, body, to w, each read written and flushed at once, and closes it; src is
// the backend's body that body reads, directly or through a translation. While the answer waits for the
// backend (body has an Idle method that says so), it holds no copy buffer. As ReverseProxy does, it
// breaks the response off (inprocess.Abort) when the client cannot be written to or the backend's body
// fails (a translated watch ends cleanly instead), so that the client's stream is reset rather than
// ended as if complete. Kubernetes sends no trailers after a watch, and none are copied.
func (c *Copier) Copy(w http.ResponseWriter, r *http.Request, body io.ReadCloser, src *Source) {
	defer body.Close()
	flush := http.NewResponseController(w).Flush
	_ = flush() // the headers, at once: a client waits for them before it reads events
	idle, _ := body.(idler)
	var buf *[]byte
	defer func() {
		if buf != nil {
			c.buffers.put(buf)
		}
	}()
	for {
		if idle != nil && idle.Idle() {
			if buf != nil {
				c.buffers.put(buf)
				buf = nil
			}
			src.wait()
		}
		if buf == nil {
			buf = c.buffers.get()
		}
		n, err := body.Read(*buf)
		if n > 0 {
			if _, werr := w.Write((*buf)[:n]); werr != nil {
				abortCopy(r, werr)
				return
			}
			_ = flush() // as ReverseProxy's flush after each write; a failure shows in the next write
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return
		default:
			abortCopy(r, err)
			return
		}
	}
}

// abortCopy ends a response whose body could not be copied, as ReverseProxy does: it is aborted
// (inprocess.Abort), so that the client's stream is reset (package server's withAbort), or a part of a
// merged watch, served in process, ends with an error.
func abortCopy(r *http.Request, err error) {
	if r.Context().Err() == nil {
		klog.V(loglevel.Unusual).InfoS("Copying a watch to the client failed", "path", r.URL.Path, "err", err)
	}
	inprocess.Abort(r, err)
}
