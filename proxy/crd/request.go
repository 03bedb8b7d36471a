package crd

import (
	"net/http"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/groupnamed"
	"github.com/openshift/hypershift-capi-proxy/proxy/negotiate"
)

// Request checks and translates, in place, the body of r, a patch or an update (verb) of subresource
// ("" or "status") naming the upstream name of a private CRD, upstreamName (privateName the private
// CRD's): only its metadata and status may change (Patch, Update). An update's body is checked and sent in
// JSON, which the apiserver takes as well as YAML, protobuf and CBOR; it is checked against the private
// CRD as do reads it from the backend with the client's own credentials. A body is read up to maxBody
// bytes. Any other verb is left as it is. The error is an API status.
func (n *Names) Request(r *http.Request, do groupnamed.Backend, verb, upstreamName, subresource, privateName string, maxBody int64) error {
	switch verb {
	case "patch":
		data, err := body.ReadRequest(r, maxBody)
		if err != nil {
			return err
		}
		mediaType, _ := negotiate.MediaType(r.Header.Get("Content-Type"))
		out, err := n.Patch(upstreamName, subresource, mediaType, data)
		if err != nil {
			return err
		}
		contentType := r.Header.Get("Content-Type")
		if mediaType == body.ApplyPatchYAML {
			contentType = body.ApplyPatchYAML // the body is JSON now, which is YAML too
		}
		body.SetRequest(r, contentType, out)
	case "update":
		data, err := body.ReadRequest(r, maxBody)
		if err != nil {
			return err
		}
		if data, err = n.BodyJSON(r.Header.Get("Content-Type"), data); err != nil {
			return err
		}
		current, err := n.getPrivate(r, do, upstreamName, privateName)
		if err != nil {
			return err
		}
		out, err := n.Update(upstreamName, subresource, current, data)
		if err != nil {
			return err
		}
		body.SetRequest(r, body.JSON, out)
	}
	return nil
}

// getPrivate reads the private CRD privateName, whose upstream name is upstreamName, from the backend
// with the client's own credentials, as the check of an update needs it.
func (n *Names) getPrivate(r *http.Request, do groupnamed.Backend, upstreamName, privateName string) ([]byte, error) {
	resp, data, err := do(r, http.MethodGet, "/apis/"+Resource.Group+"/v1/"+Resource.Resource+"/"+privateName, "", http.Header{"Accept": {body.JSON}}, nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, n.BackendError(resp, data, http.MethodGet, upstreamName)
	}
	return data, nil
}
