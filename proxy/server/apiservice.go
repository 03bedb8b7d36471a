package server

import (
	"net/http"

	"github.com/openshift/hypershift-capi-proxy/proxy/groupnamed"
)

// apiServiceRequest refuses an update or a patch naming the upstream name of a private APIService
// (groupNamed.mapped of APIServices): kube-apiserver's autoregistration controller keeps it for the
// versions of a private CRD, so that nothing of it may change through the proxy (package apiservice).
// Reads go on to the private APIService.
func (s *server) apiServiceRequest(_ *http.Request, ex *exchange, _ string) error {
	switch req := ex.req; req.Verb {
	case "update", "patch":
		return s.apiServices.names.Forbidden(req.Verb, req.Name, groupnamed.GroupOf(req.Name))
	}
	return nil
}
