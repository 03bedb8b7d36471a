package server

import (
	"encoding/json"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
	"github.com/openshift/hypershift-capi-proxy/proxy/crd"
	"github.com/openshift/hypershift-capi-proxy/proxy/negotiate"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// serveCRD serves a request of apiextensions.k8s.io customresourcedefinitions (see package crd): by the
// upstream name of a private CRD it reaches the private CRD, writes checked; the collection is filtered
// and renamed object by object; a private CRD's own name passes through untranslated.
func (s *server) serveCRD(w http.ResponseWriter, r *http.Request, ex *exchange) {
	req := ex.req
	target, privateName := crd.Unmapped, ""
	// A list or watch selecting metadata.name has req.Name set too (as the apiserver authorizes it); only
	// a name in the path addresses one CRD.
	if req.Name != "" && strings.Contains(r.URL.Path, "/"+crd.Resource.Resource+"/"+req.Name) {
		target, privateName = s.crds.Lookup(req.Name)
	}
	var err error
	switch target {
	case crd.Private:
		s.proxy.ServeHTTP(w, r)
		return
	case crd.Hidden:
		err = crd.NotFound(req.Name)
	case crd.Mapped:
		err = s.crdRequest(r, ex, privateName)
	default:
		err = s.crdCollectionRequest(r, req)
	}
	if err != nil {
		status.Write(w, err)
		return
	}
	ex.respond = func(resp *http.Response) error { return s.translateObjects(ex, resp, s.crds.Upstream) }
	s.proxy.ServeHTTP(w, r)
}

// crdRequest points a request naming the upstream name of a private CRD at the private CRD, and checks and
// translates its body.
func (s *server) crdRequest(r *http.Request, ex *exchange, privateName string) error {
	req := ex.req
	switch req.Verb {
	case "create", "delete":
		return crd.Forbidden(req.Verb, req.Name)
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
		mediaType, _ := negotiate.MediaType(r.Header.Get("Content-Type"))
		data, err := body.ReadRequest(r, s.maxBody)
		if err != nil {
			return err
		}
		if data, err = yamlToJSON(mediaType, data); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		current, err := s.getPrivateCRD(r, privateName)
		if err != nil {
			return err
		}
		out, err := s.crds.Update(req.Name, req.Subresource, current, data)
		if err != nil {
			return err
		}
		body.SetRequest(r, body.JSON, out)
	}
	ex.req.BackendPath = strings.Replace(r.URL.Path, "/"+crd.Resource.Resource+"/"+req.Name, "/"+crd.Resource.Resource+"/"+privateName, 1)
	return nil
}

// crdCollectionRequest checks a create and translates the fieldSelector of a list or watch of the
// collection.
func (s *server) crdCollectionRequest(r *http.Request, req classify.Request) error {
	switch req.Verb {
	case "create":
		data, err := body.ReadRequest(r, s.maxBody)
		if err != nil {
			return err
		}
		mediaType, _ := negotiate.MediaType(r.Header.Get("Content-Type"))
		if j, err := yamlToJSON(mediaType, data); err == nil && mediaType != body.Protobuf {
			if name := crd.NameOf(j); name != "" {
				if target, _ := s.crds.Lookup(name); target == crd.Mapped || target == crd.Hidden {
					return crd.Forbidden(req.Verb, name)
				}
			}
		}
		body.SetRequest(r, r.Header.Get("Content-Type"), data)
	case "list", "watch":
		q := r.URL.Query()
		if selector := q.Get("fieldSelector"); selector != "" {
			out, err := s.crds.FieldSelector(selector)
			if err != nil {
				return err
			}
			if out != selector {
				q.Set("fieldSelector", out)
				r.URL.RawQuery = q.Encode()
			}
		}
	}
	return nil
}

// getPrivateCRD reads a private CRD from the backend with the client's own credentials, as the check of
// an update needs it.
func (s *server) getPrivateCRD(r *http.Request, privateName string) ([]byte, error) {
	resp, data, err := s.backendGet(r, "/apis/"+crd.Resource.Group+"/v1/"+crd.Resource.Resource+"/"+privateName, body.JSON, "")
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var st metav1.Status
		if translated, err := status.Translate(translate.ToUpstream, data); err == nil && json.Unmarshal(translated, &st) == nil && st.Code != 0 {
			return nil, &apierrors.StatusError{ErrStatus: st}
		}
		return nil, apierrors.NewGenericServerResponse(resp.StatusCode, http.MethodGet, crd.Resource, privateName, string(data), 0, false)
	}
	return data, nil
}
