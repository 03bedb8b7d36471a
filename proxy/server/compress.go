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
// larger than gzipThreshold, at kube-apiserver's level (gzipLevel). A streamed list (its length unknown)
// is held back until it is known to be larger than gzipThreshold, as kube-apiserver's deferred response
// writer does (a shorter one goes uncompressed, with its length and without "Vary: Accept-Encoding"),
// and from then on gzip'ed as it streams. A body that is already encoded, or a
// response without one, is left alone.
func compress(resp *http.Response) error {
	if resp.Header.Get("Content-Encoding") != "" || resp.Body == nil || resp.Body == http.NoBody ||
		resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified {
		return nil
	}
	if resp.ContentLength >= 0 {
		if resp.ContentLength <= gzipThreshold {
			return nil
		}
		data, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("reading the translated response: %w", err))
		}
		if data, err = gzipBytes(data); err != nil {
			return apierrors.NewInternalError(fmt.Errorf("compressing the response: %w", err))
		}
		resp.Body = io.NopCloser(bytes.NewReader(data))
		resp.ContentLength = int64(len(data))
		resp.Header.Set("Content-Length", strconv.Itoa(len(data)))
		resp.Header.Set("Content-Encoding", "gzip")
		resp.Header.Add("Vary", "Accept-Encoding")
		return nil
	}

	src := resp.Body
	head := make([]byte, gzipThreshold+1)
	n, err := io.ReadFull(src, head)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		// The whole body, no larger than the threshold: sent as it is.
		_ = src.Close()
		resp.Body = io.NopCloser(bytes.NewReader(head[:n]))
		resp.ContentLength = int64(n)
		resp.Header.Set("Content-Length", strconv.Itoa(n))
		return nil
	case err != nil:
		_ = src.Close()
		return apierrors.NewInternalError(fmt.Errorf("reading the translated response: %w", err))
	}
	src = &readCloser{Reader: io.MultiReader(bytes.NewReader(head), src), close: src.Close}
	pr, pw := io.Pipe()
	go func() {
		defer src.Close()
		gw := getGzipWriter(pw)
		// As kube-apiserver's gzip writer, it is not flushed between writes: the client gets whole
		// compressed blocks (a list is not read before it is complete).
		_, err := io.Copy(gw, src)
		if err == nil {
			err = gw.Close()
		}
		if err == nil {
			gzipWriters.Put(gw)
		}
		_ = pw.CloseWithError(err) // nil: the reader sees io.EOF
	}()
	resp.Body = &readCloser{Reader: pr, close: func() error {
		_ = pr.Close() // unblocks the goroutine's writes
		return src.Close()
	}}
	resp.Header.Set("Content-Encoding", "gzip")
	resp.Header.Add("Vary", "Accept-Encoding")
	resp.Header.Del("Content-Length")
	return nil
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
