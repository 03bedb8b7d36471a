package server

import (
	"net/http"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/crd"
	"github.com/openshift/hypershift-capi-proxy/proxy/negotiate"
)

// crdRequest checks and translates the body of a patch or an update naming the upstream name of a
// private CRD (privateName; groupNamed.mapped of CRDs): only its metadata and status may change (package
// crd).
func (s *server) crdRequest(r *http.Request, ex *exchange, privateName string) error {
	req := ex.req
	switch req.Verb {
	case "patch":
		data, err := body.ReadRequest(r, s.maxBody)
		if err != nil {
			return err
		}
		mediaType, _ := negotiate.MediaType(r.Header.Get("Content-Type"))
		out, err := s.crds.Patch(req.Name, req.Subresource, mediaType, data)
		if err != nil {
			return err
		}
		contentType := r.Header.Get("Content-Type")
		if mediaType == body.ApplyPatchYAML {
			contentType = body.ApplyPatchYAML // the body is JSON now, which is YAML too
		}
		body.SetRequest(r, contentType, out)
	case "update":
		data, err := body.ReadRequest(r, s.maxBody)
		if err != nil {
			return err
		}
		// YAML, protobuf and CBOR are checked and sent in JSON, which the apiserver takes as well.
		if data, err = s.crds.BodyJSON(r.Header.Get("Content-Type"), data); err != nil {
			return err
		}
		current, err := s.getPrivateCRD(r, req.Name, privateName)
		if err != nil {
			return err
		}
		out, err := s.crds.Update(req.Name, req.Subresource, current, data)
		if err != nil {
			return err
		}
		body.SetRequest(r, body.JSON, out)
	}
	return nil
}

// getPrivateCRD reads the private CRD privateName, whose upstream name is upstreamName, from the backend
// with the client's own credentials, as the check of an update needs it.
func (s *server) getPrivateCRD(r *http.Request, upstreamName, privateName string) ([]byte, error) {
	resp, data, err := s.backendGet(r, "/apis/"+crd.Resource.Group+"/v1/"+crd.Resource.Resource+"/"+privateName, body.JSON, "")
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, s.crds.Names.BackendError(resp, data, http.MethodGet, upstreamName)
	}
	return data, nil
}
