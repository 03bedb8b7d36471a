package openapi

// Serving the documents: what the proxy answers at the OpenAPI paths of the mapped groups.

import (
	"bytes"
	"crypto/sha512"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/munnerz/goautoneg"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/gzip"
	"github.com/openshift/hypershift-capi-proxy/proxy/loglevel"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// BackendGet reads path from the backend on behalf of the client of r, with its credentials and nothing
// of the proxy's own, so that the backend authorizes the client, asking for accept and, if ifNoneMatch is
// set, conditionally. It returns the response (its body read and closed, gzip undone) and the body. The
// error is an API status: 503 when the backend cannot be reached.
type BackendGet func(r *http.Request, path, accept, ifNoneMatch string) (*http.Response, []byte, error)

// Handler serves the OpenAPI documents through the proxy (ServeHTTP): read from the backend with
// BackendGet, translated by a Rewriter and cached.
type Handler struct {
	rw *Rewriter
	// docs holds the translated documents, by backend path.
	docs *Cache
	get  BackendGet
}

// NewHandler returns a Handler that reads the backend's documents with get and translates them with rw.
func NewHandler(rw *Rewriter, get BackendGet) *Handler {
	return &Handler{rw: rw, docs: NewCache(), get: get}
}

// ServeHTTP serves the OpenAPI documents that name the mapped groups (classify.OpenAPI):
// /openapi/v2, the /openapi/v3 index and /openapi/v3/apis/<upstream group>/<version>; any other
// path of a mapped group, and every one of a private group, is answered 404 as kube-apiserver answers a
// group version it does not serve.
//
// Each document is read from the backend with the client's own credentials (so that the backend
// authorizes every client) and If-None-Match of the cached translation's backend ETag, translated once
// per backend version, and served with the proxy's own ETag and hash (Rewriter.Hash): in JSON,
// or in protobuf when the client asks for it (kubectl and client-go ask for v2 in protobuf only).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case path == "/openapi/v2":
		h.document(w, r, path, nil)
	case path == "/openapi/v3":
		h.index(w, r)
	default:
		parts := strings.Split(strings.TrimPrefix(path, "/openapi/v3/apis/"), "/")
		if len(parts) != 2 || !h.rw.Maps(parts[0]) {
			notFound(w)
			return
		}
		gv := schema.GroupVersion{Group: parts[0], Version: parts[1]}
		private, ok := h.rw.PrivateGroupVersion(gv)
		if !ok {
			notFound(w)
			return
		}
		h.document(w, r, "/openapi/v3/apis/"+private.String(), &gv)
	}
}

// gzipHandlerMinSize is NYTimes/gziphandler's DefaultMinSize, below which the gzip handler kube-openapi
// serves v2 through leaves an answer uncompressed.
const gzipHandlerMinSize = 1400

// notFound answers an OpenAPI v3 path of a group version that is not served as kube-apiserver does:
// 404 with an empty body.
func notFound(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusNotFound)
}

// document serves the translation of the backend document at backendPath: /openapi/v2, or the v3
// document of the upstream group version gv.
func (h *Handler) document(w http.ResponseWriter, r *http.Request, backendPath string, gv *schema.GroupVersion) {
	v3 := gv != nil
	contentType, ok := answerType(r.Header.Get("Accept"), v3)
	if !ok {
		w.WriteHeader(http.StatusNotAcceptable)
		return
	}
	cached := h.docs.Get(backendPath)
	ifNoneMatch := ""
	if cached != nil {
		ifNoneMatch = strconv.Quote(cached.BackendETag)
	}
	resp, data, err := h.get(r, backendPath, JSON, ifNoneMatch)
	if err != nil {
		status.Write(w, err)
		return
	}
	doc := cached
	switch {
	case resp.StatusCode == http.StatusNotModified && cached != nil:
	case resp.StatusCode == http.StatusOK:
		translated, err := h.rw.Spec(data)
		if err != nil {
			status.Write(w, apierrors.NewInternalError(fmt.Errorf("translating the backend's OpenAPI document %s: %w", backendPath, err)))
			return
		}
		etag, err := strconv.Unquote(resp.Header.Get("ETag"))
		if err != nil || etag == "" {
			etag = fmt.Sprintf("%X", sha512.Sum512(data))
		}
		doc = h.docs.Put(backendPath, etag, translated, v3)
	default:
		writeBackendError(w, resp, data)
		return
	}

	out := doc.JSON
	if contentType != JSON {
		if out, err = doc.Protobuf(); err != nil {
			status.Write(w, apierrors.NewInternalError(err))
			return
		}
	}
	hash := h.rw.Hash(doc.BackendETag)
	hdr := w.Header()
	if !v3 {
		// kube-apiserver serves v2 through a gzip handler (kube-openapi's handler, NYTimes/gziphandler),
		// which names Accept-Encoding first on every answer.
		hdr.Add("Vary", "Accept-Encoding")
	}
	hdr.Set("Content-Type", contentType)
	hdr.Set("ETag", strconv.Quote(hash))
	hdr.Add("Vary", "Accept")
	hdr.Set("Cache-Control", "no-cache, private")
	if v3 {
		if asked := r.URL.Query().Get("hash"); asked != "" {
			if asked != hash {
				// As kube-apiserver answers a stale hash: the current document's URL.
				http.Redirect(w, r, h.rw.GroupVersionURL(*gv, doc.BackendETag), http.StatusMovedPermanently)
				return
			}
			hdr.Set("Cache-Control", "public, immutable")
			hdr.Set("Expires", time.Now().AddDate(1, 0, 0).Format(time.RFC1123))
		}
	}
	// v3 documents go uncompressed, as kube-apiserver's handler3 writes them; v2 as gziphandler does.
	if !v3 && gzip.Accepts(r.Header) && len(out) >= gzipHandlerMinSize {
		raw := out
		if out, err = doc.Derived("gzip "+contentType, func() ([]byte, error) { return gzip.Bytes(raw) }); err != nil {
			status.Write(w, apierrors.NewInternalError(err))
			return
		}
		hdr.Set("Content-Encoding", "gzip")
	}
	http.ServeContent(w, r, "", doc.LastModified, bytes.NewReader(out))
}

// index serves the translated /openapi/v3 index.
func (h *Handler) index(w http.ResponseWriter, r *http.Request) {
	resp, data, err := h.get(r, "/openapi/v3", JSON, "")
	if err != nil {
		status.Write(w, err)
		return
	}
	if resp.StatusCode != http.StatusOK {
		writeBackendError(w, resp, data)
		return
	}
	out, err := h.rw.Index(data)
	if err != nil {
		status.Write(w, apierrors.NewInternalError(fmt.Errorf("translating the backend's OpenAPI v3 index: %w", err)))
		return
	}
	// The index is kube-aggregator's (its OpenAPI v3 aggregator writes it without a Content-Type, which
	// net/http sniffs, and without an ETag): its headers are the backend's, and an ETag only where the
	// backend sent one, of the translation.
	hdr := w.Header()
	for _, k := range []string{"Content-Type", "Cache-Control", "Last-Modified", "Expires", "Vary", "X-Content-Type-Options"} {
		if v := resp.Header.Values(k); v != nil {
			hdr[k] = v
		}
	}
	if resp.Header.Get("ETag") == "" {
		hdr.Set("Content-Length", strconv.Itoa(len(out)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(out)
		return
	}
	hdr.Set("ETag", strconv.Quote(fmt.Sprintf("%X", sha512.Sum512(out))))
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(out))
}

// answerType negotiates the answer's media type from an Accept header as kube-apiserver does:
// the first clause that names JSON or the document's protobuf form (in either spelling) wins; an empty
// header means JSON. ok is false when nothing acceptable is asked for (406).
func answerType(accept string, v3 bool) (string, bool) {
	if accept == "" {
		return JSON, true
	}
	protobuf, protobufRequest := V2Protobuf, V2ProtobufRequest
	if v3 {
		protobuf, protobufRequest = V3Protobuf, V3ProtobufRequest
	}
	for _, clause := range goautoneg.ParseAccept(accept) {
		for _, offer := range []struct{ mediaType, answer string }{
			{JSON, JSON}, {protobuf, protobuf}, {protobufRequest, protobuf},
		} {
			typ, sub, _ := strings.Cut(offer.mediaType, "/")
			if (clause.Type == typ || clause.Type == "*") && (clause.SubType == sub || clause.SubType == "*") {
				return offer.answer, true
			}
		}
	}
	return "", false
}

// writeBackendError answers with the backend's failed response, its Status translated.
func writeBackendError(w http.ResponseWriter, resp *http.Response, data []byte) {
	if translated, err := status.Translate(translate.ToUpstream, data); err == nil {
		data = translated
	} else {
		klog.V(loglevel.Debug).InfoS("Backend error body is not a Status", "code", resp.StatusCode, "err", err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(data)
}
