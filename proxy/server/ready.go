package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/openshift/hypershift-capi-proxy/proxy/auth"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/backend"
)

// readyTimeout bounds one readiness probe of the backend.
const readyTimeout = 5 * time.Second

// BackendReady returns a readiness check of the backend, for the proxy's own /readyz: it asks the
// backend's /readyz with the credentials the proxy's requests carry of their own (none in pass-through
// mode, where kube-apiserver's default RBAC lets system:anonymous read it through
// system:public-info-viewer; the pod's in sidecar mode). 200 means ready; 401 and 403 mean the backend
// answers but does not say (a cluster that withdrew anonymous access), and count as ready too. Any other
// code, or no answer within 5s (or before the probe's request is cancelled), is an error naming it.
func BackendReady(o Options) (func(*http.Request) error, error) {
	if o.AuthMode == "" {
		o.AuthMode = auth.PassThrough
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	b, err := backend.New(o.Backend, o.AuthMode, o.DialTimeout, o.BackendCA)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Transport: b.Transport}
	url := joinPath(b.URL.String(), "/readyz")
	return func(r *http.Request) error {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("the backend does not answer: %w", err)
		}
		_ = resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK, http.StatusUnauthorized, http.StatusForbidden:
			return nil
		}
		return fmt.Errorf("the backend's /readyz answered %s", resp.Status)
	}, nil
}
