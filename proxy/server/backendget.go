package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// backendGet reads path from the backend on behalf of the client of r: with its Authorization and
// impersonation headers and nothing of the proxy's own, so that the backend authorizes the client.
// ifNoneMatch, if set, makes the read conditional. It returns the response (its body read and closed,
// gzip undone) and the body. The error is an API status: 503 when the backend cannot be reached.
func (s *server) backendGet(r *http.Request, path, accept, ifNoneMatch string) (*http.Response, []byte, error) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	u := *s.backend
	u.Path, u.RawPath, u.RawQuery = joinPath(s.backend.Path, path), "", ""
	get, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	for k, v := range r.Header {
		if k == "Authorization" || strings.HasPrefix(k, "Impersonate-") {
			get.Header[k] = v
		}
	}
	get.Header.Set("Accept", accept)
	if ifNoneMatch != "" {
		get.Header.Set("If-None-Match", ifNoneMatch)
	}
	resp, err := s.proxy.Transport.RoundTrip(get)
	if err != nil {
		return nil, nil, apierrors.NewServiceUnavailable(fmt.Sprintf("the backend kube-apiserver is unavailable: %v", err))
	}
	defer resp.Body.Close()
	if err := gunzip(resp); err != nil {
		return nil, nil, err
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, apierrors.NewServiceUnavailable(fmt.Sprintf("reading the backend's response: %v", err))
	}
	return resp, data, nil
}
