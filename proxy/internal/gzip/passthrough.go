package gzip

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"

	"github.com/openshift/hypershift-capi-proxy/proxy/groupnames"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Compressed answers that need no translation are passed through: a client that accepts gzip, asking
// for a resource of no mapped group (a list of Secrets, of Pods), makes the proxy ask the backend for
// gzip too; the backend's compressed answer (kube-apiserver compresses one larger than 128 KiB) is
// decompressed only to be searched for the names of the private groups, and sent on as it came when it
// names none, so that the proxy spends no compression work on it. An answer that names one (a Secret
// owned by a Cluster) is translated and compressed again. Lists of mapped kinds always name their group:
// the proxy asks for them gzip'ed only because receiving them compressed costs less (package server).

// maxPassThrough bounds the compressed answer the proxy holds while it finds out whether the answer
// names a private group: a list of hundreds of MiB of built-in objects would otherwise be held whole.
// A larger answer is translated as it streams.
const maxPassThrough = 1 << 20

// mentionOverlap is how much decompressed text before a chunk is searched again with it: more than the
// longest group name and the longest JSON escape, so that a name split between two chunks is found.
const mentionOverlap = 128

// PassThrough passes a gzip'ed response that names no private group through as it is, with its
// Content-Length: it decompresses the body as it reads it, holding the compressed bytes (at most 1 MiB),
// and searches the text for the names translate.ToUpstream translates (groupnames.Mentions). It reports
// whether it did; if not (the text names a group, the body is larger, or it could not be read whole),
// resp.Body is the whole body again, decompressed (Decompress), to be translated. A body that is not
// gzip'ed is left to Decompress.
func PassThrough(resp *http.Response) (bool, error) {
	if !strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		return false, Decompress(resp)
	}
	src := resp.Body
	var held bytes.Buffer
	zr, err := gzip.NewReader(io.TeeReader(io.LimitReader(src, maxPassThrough+1), &held))
	mentions := true
	if err == nil {
		mentions, err = mentionsGroup(zr)
	}
	if err == nil && !mentions && held.Len() <= maxPassThrough {
		_ = src.Close()
		resp.Body = io.NopCloser(bytes.NewReader(held.Bytes()))
		resp.ContentLength = int64(held.Len())
		resp.Header.Set("Content-Length", strconv.Itoa(held.Len()))
		return true, nil
	}
	// To be translated, from the beginning; a read error of src is src's again.
	resp.Body = &readCloser{Reader: io.MultiReader(&held, src), close: src.Close}
	return false, Decompress(resp)
}

// mentionsGroup reads r to its end, or to the first name of a private group in it.
func mentionsGroup(r io.Reader) (bool, error) {
	bufp := heads.Get().(*[]byte)
	defer heads.Put(bufp)
	buf := *bufp
	kept := 0
	for {
		n, err := r.Read(buf[kept:])
		if end := kept + n; n > 0 {
			if groupnames.Mentions(translate.ToUpstream, buf[:end]) {
				return true, nil
			}
			kept = copy(buf, buf[max(0, end-mentionOverlap):end])
		}
		switch {
		case errors.Is(err, io.EOF):
			return false, nil
		case err != nil:
			return false, err
		}
	}
}
