package server

import (
	"net/http"
)

// crdRequest checks and translates the body of a patch or an update naming the upstream name of a
// private CRD (privateName; groupNamed.mapped of CRDs): only its metadata and status may change
// (crd.Names.Request).
func (s *server) crdRequest(r *http.Request, ex *exchange, privateName string) error {
	req := ex.req
	return s.crds.Request(r, s.backendDo, req.Verb, req.Name, req.Subresource, privateName, s.maxBody)
}
