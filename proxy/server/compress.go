package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// gzipLevel is kube-apiserver's (defaultGzipContentEncodingLevel in
// k8s.io/apiserver/pkg/endpoints/handlers/responsewriters): the fastest level. klauspost/compress
// writes the same format as compress/gzip (RFC 1952, one member) at about twice its speed and a
// similar ratio, so a client sees an answer of about the size kube-apiserver would send.
const gzipLevel = gzip.BestSpeed

// gzipWriters are reused, as kube-apiserver reuses its own (a writer holds its compression tables).
var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzipLevel) // a valid level: no error
	return w
}}

func getGzipWriter(w io.Writer) *gzip.Writer {
	gw := gzipWriters.Get().(*gzip.Writer)
	gw.Reset(w)
	return gw
}

// gzipThreshold is kube-apiserver's (defaultGzipThresholdBytes in
// k8s.io/apiserver/pkg/endpoints/handlers/responsewriters): a body up to it goes uncompressed, a larger
// one is gzip'ed for a client that accepts it.
const gzipThreshold = 128 << 10

// acceptsGzip reports whether an Accept-Encoding header names gzip, read as kube-apiserver reads it (a
// token "gzip", no q-values).
func acceptsGzip(h http.Header) bool {
	for _, v := range h.Values("Accept-Encoding") {
		for _, token := range strings.Split(v, ",") {
			if strings.TrimSpace(token) == "gzip" {
				return true
			}
		}
	}
	return false
}

// compress gzips a translated response for a client that accepts gzip, as kube-apiserver does for a body
// larger than gzipThreshold, at kube-apiserver's level (gzipLevel), as the body is read: the client gets
// it without a Content-Length, as from kube-apiserver's gzip writer. A streamed list (its length unknown)
// is held back until it is known to be larger than gzipThreshold, as kube-apiserver's deferred response
// writer does (a shorter one goes uncompressed, with its length and without "Vary: Accept-Encoding"). A
// body that is already encoded, or a response without one, is left alone.
func compress(resp *http.Response) error {
	if resp.Header.Get("Content-Encoding") != "" || resp.Body == nil || resp.Body == http.NoBody ||
		resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified ||
		(resp.ContentLength >= 0 && resp.ContentLength <= gzipThreshold) {
		return nil
	}
	src := resp.Body
	headp := heads.Get().(*[]byte)
	head := *headp
	n := 0
	if resp.ContentLength < 0 {
		var err error
		n, err = io.ReadFull(src, head)
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			// The whole body, no larger than the threshold: sent as it is.
			_ = src.Close()
			body := bytes.Clone(head[:n])
			heads.Put(headp)
			resp.Body = io.NopCloser(bytes.NewReader(body))
			resp.ContentLength = int64(n)
			resp.Header.Set("Content-Length", strconv.Itoa(n))
			return nil
		case err != nil:
			_ = src.Close()
			heads.Put(headp)
			return apierrors.NewInternalError(fmt.Errorf("reading the translated response: %w", err))
		}
	}
	// As kube-apiserver's gzip writer, it is not flushed between writes: the client gets whole
	// compressed blocks (a list is not read before it is complete).
	z := &gzipReader{src: src, chunk: head}
	z.gw = getGzipWriter(&z.out)
	if _, err := z.gw.Write(head[:n]); err != nil {
		_ = src.Close()
		heads.Put(headp)
		return apierrors.NewInternalError(fmt.Errorf("compressing the response: %w", err))
	}
	resp.Body = &readCloser{Reader: z, close: func() error {
		z.release()
		heads.Put(headp)
		return src.Close()
	}}
	resp.ContentLength = -1
	resp.Header.Set("Content-Encoding", "gzip")
	resp.Header.Add("Vary", "Accept-Encoding")
	resp.Header.Del("Content-Length")
	return nil
}

// heads holds the buffers compress reads the first gzipThreshold+1 bytes of a streamed body into, and
// then the rest through.
var heads = sync.Pool{New: func() any { b := make([]byte, gzipThreshold+1); return &b }}

// gzipReader compresses src as it is read: each Read compresses what one read of src gave until there
// is compressed output, so that compression needs no goroutine or pipe of its own and holds one chunk of
// input and the compressed blocks not read yet.
type gzipReader struct {
	src   io.Reader
	gw    *gzip.Writer
	chunk []byte
	// out is compressed output not read yet; err ends the reading once out is read (io.EOF at the end).
	out bytes.Buffer
	err error
}

func (z *gzipReader) Read(p []byte) (int, error) {
	for z.out.Len() == 0 {
		if z.err != nil {
			return 0, z.err
		}
		n, err := z.src.Read(z.chunk)
		if n > 0 {
			if _, werr := z.gw.Write(z.chunk[:n]); werr != nil {
				z.err = werr
				continue
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			z.err = io.EOF
			if cerr := z.gw.Close(); cerr != nil {
				z.err = cerr
			}
		case err != nil:
			z.err = err
		}
	}
	return z.out.Read(p)
}

// release gives the gzip writer back once the body is closed (it holds no reference to the body then).
func (z *gzipReader) release() {
	if z.gw != nil && errors.Is(z.err, io.EOF) {
		gzipWriters.Put(z.gw)
	}
	z.gw = nil
}

// gzipBytes compresses data in memory.
func gzipBytes(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	gw := getGzipWriter(&buf)
	if _, err := gw.Write(data); err != nil {
		return nil, err
	}
	if err := gw.Close(); err != nil {
		return nil, err
	}
	gzipWriters.Put(gw)
	return buf.Bytes(), nil
}
