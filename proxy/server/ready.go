package server

import (
	"net/http"

	"github.com/openshift/hypershift-capi-proxy/proxy/auth"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/backend"
)

// BackendReady returns a readiness check of the backend, for the proxy's own /readyz: it asks the
// backend's /readyz with the credentials the proxy's requests carry of their own (none in pass-through
// mode, where kube-apiserver's default RBAC lets system:anonymous read it through
// system:public-info-viewer; the pod's in sidecar mode). 200 means ready; 401 and 403 mean the backend
// answers but does not say (a cluster that withdrew anonymous access), and count as ready too. Any other
// code, or no answer within 5s (or before the probe's request is cancelled), is an error naming it
// (backend.Backend.Ready).
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
	return b.Ready(), nil
}
