package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/gzip"
)

// backendGet reads path from the backend on behalf of the client of r: with its Authorization and
// impersonation headers and nothing of the proxy's own, so that the backend authorizes the client.
// ifNoneMatch, if set, makes the read conditional. It returns the response (its body read and closed,
// gzip undone) and the body. The error is an API status: 503 when the backend cannot be reached.
func (s *server) backendGet(r *http.Request, path, accept, ifNoneMatch string) (*http.Response, []byte, error) {
	header := http.Header{"Accept": {accept}}
	if ifNoneMatch != "" {
		header.Set("If-None-Match", ifNoneMatch)
	}
	return s.backendDo(r, http.MethodGet, path, "", header, nil)
}

// backendDo is backendGet for any method: it sends method to path?rawQuery with the headers of header
// and body (nil for none) on behalf of the client of r.
func (s *server) backendDo(r *http.Request, method, path, rawQuery string, header http.Header, body []byte) (*http.Response, []byte, error) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	u := *s.backend
	u.Path, u.RawPath, u.RawQuery = joinPath(s.backend.Path, path), "", rawQuery
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	for k, v := range r.Header {
		if k == "Authorization" || strings.HasPrefix(k, "Impersonate-") {
			req.Header[k] = v
		}
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := s.proxy.Transport.RoundTrip(req)
	if err != nil {
		return nil, nil, apierrors.NewServiceUnavailable(fmt.Sprintf("the backend kube-apiserver is unavailable: %v", err))
	}
	defer resp.Body.Close()
	if err := gzip.Decompress(resp); err != nil {
		return nil, nil, err
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, apierrors.NewServiceUnavailable(fmt.Sprintf("reading the backend's response: %v", err))
	}
	return resp, data, nil
}
