package server

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
	"github.com/openshift/hypershift-capi-proxy/proxy/openapi"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// serveOpenAPI serves the OpenAPI documents that name the mapped groups (classify.OpenAPI, package
// openapi): /openapi/v2, the /openapi/v3 index and /openapi/v3/apis/<upstream group>/<version>; any other
// path of a mapped group, and every one of a private group, is answered 404 as kube-apiserver answers a
// group version it does not serve.
//
// Each document is read from the backend with the client's own credentials (so that the backend
// authorizes every client) and If-None-Match of the cached translation's backend ETag, translated once
// per backend version, and served with the proxy's own ETag and hash (openapi.Rewriter.Hash): in JSON,
// or in protobuf when the client asks for it (kubectl and client-go ask for v2 in protobuf only).
func (s *server) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case path == "/openapi/v2":
		s.openAPIDocument(w, r, path, nil)
	case path == "/openapi/v3":
		s.openAPIIndex(w, r)
	default:
		parts := strings.Split(strings.TrimPrefix(path, "/openapi/v3/apis/"), "/")
		if len(parts) != 2 || !s.openapi.Maps(parts[0]) {
			openAPINotFound(w)
			return
		}
		gv := schema.GroupVersion{Group: parts[0], Version: parts[1]}
		private, ok := s.openapi.PrivateGroupVersion(gv)
		if !ok {
			openAPINotFound(w)
			return
		}
		s.openAPIDocument(w, r, "/openapi/v3/apis/"+private.String(), &gv)
	}
}

// gzipHandlerMinSize is NYTimes/gziphandler's DefaultMinSize, below which the gzip handler kube-openapi
// serves v2 through leaves an answer uncompressed.
const gzipHandlerMinSize = 1400

// openAPINotFound answers an OpenAPI v3 path of a group version that is not served as kube-apiserver does:
// 404 with an empty body.
func openAPINotFound(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusNotFound)
}

// openAPIDocument serves the translation of the backend document at backendPath: /openapi/v2, or the v3
// document of the upstream group version gv.
func (s *server) openAPIDocument(w http.ResponseWriter, r *http.Request, backendPath string, gv *schema.GroupVersion) {
	v3 := gv != nil
	contentType, ok := openAPIContentType(r.Header.Get("Accept"), v3)
	if !ok {
		w.WriteHeader(http.StatusNotAcceptable)
		return
	}
	cached := s.openapiDocs.Get(backendPath)
	ifNoneMatch := ""
	if cached != nil {
		ifNoneMatch = strconv.Quote(cached.BackendETag)
	}
	resp, data, err := s.backendGet(r, backendPath, openapi.JSON, ifNoneMatch)
	if err != nil {
		status.Write(w, err)
		return
	}
	doc := cached
	switch {
	case resp.StatusCode == http.StatusNotModified && cached != nil:
	case resp.StatusCode == http.StatusOK:
		translated, err := s.openapi.Spec(data)
		if err != nil {
			status.Write(w, apierrors.NewInternalError(fmt.Errorf("translating the backend's OpenAPI document %s: %w", backendPath, err)))
			return
		}
		etag, err := strconv.Unquote(resp.Header.Get("ETag"))
		if err != nil || etag == "" {
			etag = fmt.Sprintf("%X", sha512.Sum512(data))
		}
		doc = s.openapiDocs.Put(backendPath, etag, translated, v3)
	default:
		writeBackendError(w, resp, data)
		return
	}

	out := doc.JSON
	if contentType != openapi.JSON {
		if out, err = doc.Protobuf(); err != nil {
			status.Write(w, apierrors.NewInternalError(err))
			return
		}
	}
	hash := s.openapi.Hash(doc.BackendETag)
	h := w.Header()
	if !v3 {
		// kube-apiserver serves v2 through a gzip handler (kube-openapi's handler, NYTimes/gziphandler),
		// which names Accept-Encoding first on every answer.
		h.Add("Vary", "Accept-Encoding")
	}
	h.Set("Content-Type", contentType)
	h.Set("ETag", strconv.Quote(hash))
	h.Add("Vary", "Accept")
	h.Set("Cache-Control", "no-cache, private")
	if v3 {
		if asked := r.URL.Query().Get("hash"); asked != "" {
			if asked != hash {
				// As kube-apiserver answers a stale hash: the current document's URL.
				http.Redirect(w, r, s.openapi.GroupVersionURL(*gv, doc.BackendETag), http.StatusMovedPermanently)
				return
			}
			h.Set("Cache-Control", "public, immutable")
			h.Set("Expires", time.Now().AddDate(1, 0, 0).Format(time.RFC1123))
		}
	}
	// v3 documents go uncompressed, as kube-apiserver's handler3 writes them; v2 as gziphandler does.
	if !v3 && gzip.Accepts(r.Header) && len(out) >= gzipHandlerMinSize {
		raw := out
		if out, err = doc.Derived("gzip "+contentType, func() ([]byte, error) { return gzip.Bytes(raw) }); err != nil {
			status.Write(w, apierrors.NewInternalError(err))
			return
		}
		h.Set("Content-Encoding", "gzip")
	}
	http.ServeContent(w, r, "", doc.LastModified, bytes.NewReader(out))
}

// openAPIIndex serves the translated /openapi/v3 index.
func (s *server) openAPIIndex(w http.ResponseWriter, r *http.Request) {
	resp, data, err := s.backendGet(r, "/openapi/v3", openapi.JSON, "")
	if err != nil {
		status.Write(w, err)
		return
	}
	if resp.StatusCode != http.StatusOK {
		writeBackendError(w, resp, data)
		return
	}
	out, err := s.openapi.Index(data)
	if err != nil {
		status.Write(w, apierrors.NewInternalError(fmt.Errorf("translating the backend's OpenAPI v3 index: %w", err)))
		return
	}
	// The index is kube-aggregator's (its OpenAPI v3 aggregator writes it without a Content-Type, which
	// net/http sniffs, and without an ETag): its headers are the backend's, and an ETag only where the
	// backend sent one, of the translation.
	h := w.Header()
	for _, k := range []string{"Content-Type", "Cache-Control", "Last-Modified", "Expires", "Vary", "X-Content-Type-Options"} {
		if v := resp.Header.Values(k); v != nil {
			h[k] = v
		}
	}
	if resp.Header.Get("ETag") == "" {
		h.Set("Content-Length", strconv.Itoa(len(out)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(out)
		return
	}
	h.Set("ETag", strconv.Quote(fmt.Sprintf("%X", sha512.Sum512(out))))
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(out))
}

// openAPIContentType negotiates the answer's media type from an Accept header as kube-apiserver does:
// the first clause that names JSON or the document's protobuf form (in either spelling) wins; an empty
// header means JSON. ok is false when nothing acceptable is asked for (406).
func openAPIContentType(accept string, v3 bool) (string, bool) {
	if accept == "" {
		return openapi.JSON, true
	}
	protobuf, protobufRequest := openapi.V2Protobuf, openapi.V2ProtobufRequest
	if v3 {
		protobuf, protobufRequest = openapi.V3Protobuf, openapi.V3ProtobufRequest
	}
	for _, clause := range goautoneg.ParseAccept(accept) {
		for _, offer := range []struct{ mediaType, answer string }{
			{openapi.JSON, openapi.JSON}, {protobuf, protobuf}, {protobufRequest, protobuf},
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
