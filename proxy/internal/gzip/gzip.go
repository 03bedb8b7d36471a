// Package gzip is the proxy's gzip of HTTP bodies, as kube-apiserver gzips its own answers: whether a
// client accepts gzip (Accepts), an answer compressed as it is read for such a client (Compress), a
// backend's answer decompressed in place to be translated (Decompress), a compressed backend answer
// that names no private group passed through as it came (PassThrough), a document compressed in
// memory (Bytes), and an answer whose head is known only after its body has been compressed (Deferred:
// a protobuf list). It compresses and decompresses with klauspost/compress, which reads and writes the
// same format as compress/gzip (RFC 1952, one member) in less CPU.
package gzip

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

// level is kube-apiserver's (defaultGzipContentEncodingLevel in
// k8s.io/apiserver/pkg/endpoints/handlers/responsewriters): the fastest level. klauspost/compress
// writes the same format as compress/gzip (RFC 1952, one member) at about twice its speed and a
// similar ratio, so a client sees an answer of about the size kube-apiserver would send.
const level = gzip.BestSpeed

// writers are reused, as kube-apiserver reuses its own (a writer holds its compression tables).
var writers = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, level) // a valid level: no error
	return w
}}

func getWriter(w io.Writer) *gzip.Writer {
	gw := writers.Get().(*gzip.Writer)
	gw.Reset(w)
	return gw
}

// Threshold is kube-apiserver's (defaultGzipThresholdBytes in
// k8s.io/apiserver/pkg/endpoints/handlers/responsewriters), in bytes: a body up to it goes uncompressed,
// a larger one is gzip'ed for a client that accepts it.
const Threshold = 128 << 10

const threshold = Threshold

// Accepts reports whether an Accept-Encoding header names gzip, read as kube-apiserver reads it (a
// token "gzip", no q-values).
func Accepts(h http.Header) bool {
	for _, v := range h.Values("Accept-Encoding") {
		for _, token := range strings.Split(v, ",") {
			if strings.TrimSpace(token) == "gzip" {
				return true
			}
		}
	}
	return false
}

// Compress gzips a translated response for a client that accepts gzip, as kube-apiserver does for a body
// larger than 128 KiB (its defaultGzipThresholdBytes), at kube-apiserver's level (the fastest), as the
// body is read: the client gets it without a Content-Length, as from kube-apiserver's gzip writer. A
// streamed body (its length unknown, a list) is held back until it is known to be larger than 128 KiB,
// as kube-apiserver's deferred response writer does (a shorter one goes uncompressed, with its length
// and without "Vary: Accept-Encoding"). A body that is already encoded, or a response without one, is
// left alone. The error is an API status (500).
func Compress(resp *http.Response) error {
	if resp.Header.Get("Content-Encoding") != "" || resp.Body == nil || resp.Body == http.NoBody ||
		resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified ||
		(resp.ContentLength >= 0 && resp.ContentLength <= threshold) {
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
	z := &reader{src: src, chunk: head}
	z.gw = getWriter(&z.out)
	if _, err := z.gw.Write(head[:n]); err != nil {
		_ = src.Close()
		heads.Put(headp)
		return apierrors.NewInternalError(fmt.Errorf("compressing the response: %w", err))
	}
	SetCompressed(resp, &readCloser{Reader: z, close: func() error {
		z.release()
		heads.Put(headp)
		return src.Close()
	}})
	return nil
}

// heads holds the buffers Compress reads the first threshold+1 bytes of a streamed body into, and
// then the rest through.
var heads = sync.Pool{New: func() any { b := make([]byte, threshold+1); return &b }}

// reader compresses src as it is read: each Read compresses what one read of src gave until there
// is compressed output, so that compression needs no goroutine or pipe of its own and holds one chunk of
// input and the compressed blocks not read yet.
type reader struct {
	src   io.Reader
	gw    *gzip.Writer
	chunk []byte
	// out is compressed output not read yet; err ends the reading once out is read (io.EOF at the end).
	out bytes.Buffer
	err error
}

func (z *reader) Read(p []byte) (int, error) {
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
func (z *reader) release() {
	if z.gw != nil && errors.Is(z.err, io.EOF) {
		writers.Put(z.gw)
	}
	z.gw = nil
}

// Bytes compresses data in memory, at kube-apiserver's level.
func Bytes(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	gw := getWriter(&buf)
	if _, err := gw.Write(data); err != nil {
		return nil, err
	}
	if err := gw.Close(); err != nil {
		return nil, err
	}
	writers.Put(gw)
	return buf.Bytes(), nil
}

// Decompress decompresses a gzip'ed response body in place: a list the proxy asked for gzip, an answer
// it could not pass through (PassThrough), or a backend that compresses anyway; a body without a
// Content-Encoding (or "identity") is left as it is. Readers are not pooled: a body may be closed by
// another goroutine than the one reading it (a watch ended by its namespace's mode change), and a reader
// put back while still read would mix two responses. The error is an API status (500: an encoding other
// than gzip, or a body that is not gzip).
func Decompress(resp *http.Response) error {
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

// readCloser is a Reader with its own Close.
type readCloser struct {
	io.Reader
	close func() error
}

func (r *readCloser) Close() error { return r.close() }
