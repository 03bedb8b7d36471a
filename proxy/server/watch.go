package server

import (
	"errors"
	"io"
	"net/http"

	"k8s.io/klog/v2"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/inprocess"
	"github.com/openshift/hypershift-capi-proxy/proxy/loglevel"
)

// Copying a watch's answer to the client. httputil.ReverseProxy copies a body through a buffer from its
// BufferPool that it holds for the response's life, and a watch is open for minutes while it waits for
// events: with 1,000 watches open that is 1,000 idle buffers. The proxy's watches are therefore copied
// by the proxy itself (serveWatch): ReverseProxy forwards the request and writes the response's headers,
// as for any other request, and is handed an empty body (modifyWatchResponse); the handler then copies
// the real one (watchCopy), taking a copy buffer only while an event is being read and written, and
// waiting for the next one on a byte of its own (watchSource). Each event is still written and flushed
// at once, in one write per read as ReverseProxy does with FlushInterval -1.

// watchSource is a watch's body from the backend, read through the translation (watchBody) or as it is.
// Its copy waits on it without a buffer (wait): the first byte of what the backend sends next is read
// into the watch's own byte, and the next Read hands it on with whatever the backend sent with it.
type watchSource struct {
	io.ReadCloser
	b    [1]byte
	held bool
	// err is what the backend's body returned while waiting; Read returns it after the byte held.
	err error
}

// wait returns once something can be read: a byte arrived or the backend's body ended.
func (s *watchSource) wait() {
	for !s.held && s.err == nil {
		var n int
		n, s.err = s.ReadCloser.Read(s.b[:])
		s.held = n > 0
	}
}

// Read hands on the byte held, if any, with what the backend's body has after it (read at once if it
// came with the byte, waited for otherwise: the byte begins an event, whose reader would wait for the
// rest anyway).
func (s *watchSource) Read(p []byte) (int, error) {
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
func (s *watchSource) Idle() bool { return !s.held && s.err == nil }

// idler is a watch body that can tell when it holds nothing, so that its next Read would wait for the
// backend (watchBody, watchSource, the serving-mode filter's watchEnder). A body that cannot tell (an
// error's Status, a decompressed stream) is copied with a buffer held throughout.
type idler interface {
	Idle() bool
}

// watchBufferPool hands out the watches' copy buffers (copyBuffers), by pointer: a watch takes one and
// gives it back for every event, which must not allocate.
type watchBufferPool interface {
	get() *[]byte
	put(*[]byte)
}

// watchCopy is a watch's answer, taken from ReverseProxy (modifyWatchResponse), to be copied by the
// handler (serveWatch).
type watchCopy struct {
	body io.ReadCloser
	src  *watchSource
}

// modifyWatchResponse is modifyResponse for a watch, whose body it takes to be copied by serveWatch: the
// backend's body is read through a watchSource, translated as any other answer (modifyResponse), and
// ReverseProxy, which then writes the response's headers, is left an empty body. A response ReverseProxy
// must handle itself (a watch over a websocket: 101 Switching Protocols) is left to it.
func modifyWatchResponse(resp *http.Response) error {
	ex := exchangeFrom(resp.Request.Context())
	if ex == nil || resp.StatusCode == http.StatusSwitchingProtocols {
		return modifyResponse(resp)
	}
	src := &watchSource{ReadCloser: resp.Body}
	resp.Body = src
	if err := modifyResponse(resp); err != nil {
		return err
	}
	ex.watch = &watchCopy{body: resp.Body, src: src}
	resp.Body = http.NoBody
	return nil
}

// serveWatch forwards a watch of a resource with the watches' ReverseProxy and copies its answer to the
// client (see above). Kubernetes sends no trailers after a watch, and none are copied.
func (s *server) serveWatch(w http.ResponseWriter, r *http.Request, ex *exchange) {
	defer func() {
		if ex.watch != nil { // ReverseProxy did not return
			_ = ex.watch.body.Close()
			ex.watch = nil
		}
	}()
	s.watches.ServeHTTP(w, r)
	if c := ex.watch; c != nil {
		ex.watch = nil
		s.copyWatch(w, r, c)
	}
}

// copyWatch copies a watch's answer to w, each read written and flushed at once, and closes it. While the
// answer waits for the backend (idler), it holds no copy buffer. As ReverseProxy does, it breaks the
// response off (abortCopy) when the client cannot be written to or the backend's body fails (a
// translated watch ends cleanly instead: watchBody), so that the client's stream is reset rather than
// ended as if complete.
func (s *server) copyWatch(w http.ResponseWriter, r *http.Request, c *watchCopy) {
	defer c.body.Close()
	flush := http.NewResponseController(w).Flush
	_ = flush() // the headers, at once: a client waits for them before it reads events
	idle, _ := c.body.(idler)
	var buf *[]byte
	defer func() {
		if buf != nil {
			s.watchBuffers.put(buf)
		}
	}()
	for {
		if idle != nil && idle.Idle() {
			if buf != nil {
				s.watchBuffers.put(buf)
				buf = nil
			}
			c.src.wait()
		}
		if buf == nil {
			buf = s.watchBuffers.get()
		}
		n, err := c.body.Read(*buf)
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
// (inprocess.Abort), so that the client's stream is reset (withAbort), or a part of a merged watch,
// served in process, ends with an error.
func abortCopy(r *http.Request, err error) {
	if r.Context().Err() == nil {
		klog.V(loglevel.Unusual).InfoS("Copying a watch to the client failed", "path", r.URL.Path, "err", err)
	}
	inprocess.Abort(r, err)
}
