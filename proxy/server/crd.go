package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/crd"
	"github.com/openshift/hypershift-capi-proxy/proxy/negotiate"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// serveCRD serves a request of apiextensions.k8s.io customresourcedefinitions (see package crd): by the
// upstream name of a private CRD it reaches the private CRD, writes checked; a hidden CRD's name and a
// private name address nothing; the collection is filtered and renamed object by object, its
// fieldSelector translated, creates checked, and a deletecollection deletes only what the client sees
// (crdDeleteCollection).
func (s *server) serveCRD(w http.ResponseWriter, r *http.Request, ex *exchange) {
	req := ex.req
	// Answers are translated in JSON only (ServeHTTP narrowed Accept, negotiate.Narrow): a YAML answer
	// would show the backend's CRDs as they are.
	target, privateName := crd.Unmapped, ""
	// A list or watch selecting metadata.name has req.Name set too (as the apiserver authorizes it); only
	// a name in the path addresses one CRD.
	if req.Name != "" && strings.Contains(r.URL.Path, "/"+crd.Resource.Resource+"/"+req.Name) {
		target, privateName = s.crds.Lookup(req.Name)
	}
	var err error
	switch {
	case target == crd.Hidden || target == crd.Private:
		if req.Verb == "watch" {
			// A watch of one name by its path (/watch/customresourcedefinitions/<name>): the apiserver
			// would watch a CRD that does not exist, an open stream without events.
			ex.respond = func(resp *http.Response) error { return s.translateObjects(ex, resp, dropObject) }
			s.proxy.ServeHTTP(w, r)
			return
		}
		err = s.crdAbsent(r, ex)
	case target == crd.Mapped:
		err = s.crdRequest(r, ex, privateName)
	case req.Verb == "deletecollection":
		if err = s.crdDeleteCollection(w, r, ex); err == nil {
			return
		}
	default:
		err = s.crdCollectionRequest(r, ex)
	}
	if err != nil {
		status.Write(w, err)
		return
	}
	ex.respond = func(resp *http.Response) error { return s.translateObjects(ex, resp, s.crds.Upstream) }
	s.proxy.ServeHTTP(w, r)
}

// probeContentType is a media type no apiserver decodes: a request whose body has it is authenticated and
// authorized (filters that run first) and then refused with 415 before anything is read or written.
const probeContentType = "application/x-hypershift-capi-proxy-probe"

// probeBody is the body of such a request: DeleteOptions with a UID precondition no CRD has, so that
// even a delete that decoded it would delete nothing (the apiextensions-apiserver checks it first).
const probeBody = `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","preconditions":{"uid":"hypershift-capi-proxy-probe"}}`

// crdAbsent answers a request naming a hidden CRD or a private name (crd.Absent) as kube-apiserver
// answers one naming a CRD that does not exist, authentication and authorization included: the backend
// gets the same method, path and query with the client's credentials, a GET as it is and any other
// method with the body probeBody of type probeContentType, so that it authenticates and authorizes the
// client's verb on that name and changes nothing. Its 401, 403 or 429 is the answer (naming the CRD as
// the client named it); anything else becomes crd.Absent's answer.
func (s *server) crdAbsent(r *http.Request, ex *exchange) error {
	header := http.Header{"Accept": {body.JSON}}
	var probe []byte
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		header.Set("Content-Type", probeContentType)
		probe = []byte(probeBody)
	}
	resp, data, err := s.backendDo(r, r.Method, ex.req.BackendPath, r.URL.RawQuery, header, probe)
	if err != nil {
		return err
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests:
		var st metav1.Status
		if json.Unmarshal(data, &st) == nil && st.Code != 0 {
			return &apierrors.StatusError{ErrStatus: st}
		}
		return apierrors.NewGenericServerResponse(resp.StatusCode, r.Method, crd.Resource, ex.req.Name, string(data), 0, false)
	}
	return crd.Absent(ex.req.Verb, ex.req.Name, r.Header.Get("Content-Type"))
}

// dropObject drops every object of a response.
func dropObject([]byte) ([]byte, error) { return nil, nil }

// crdRequest points a request naming the upstream name of a private CRD at the private CRD, and checks and
// translates its body.
func (s *server) crdRequest(r *http.Request, ex *exchange, privateName string) error {
	req := ex.req
	switch req.Verb {
	case "create", "delete":
		_, group, _ := strings.Cut(req.Name, ".")
		return crd.Forbidden(req.Verb, req.Name, group)
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
		if data, err = crd.BodyJSON(r.Header.Get("Content-Type"), data); err != nil {
			return err
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

// crdCollectionRequest checks a create (crd.CheckCreate; the body goes on unchanged) and translates the
// fieldSelector of a list or watch of the collection.
func (s *server) crdCollectionRequest(r *http.Request, ex *exchange) error {
	switch ex.req.Verb {
	case "create":
		data, err := body.ReadRequest(r, s.maxBody)
		if err != nil {
			return err
		}
		if err := s.crds.CheckCreate(r.Header.Get("Content-Type"), data); err != nil {
			return err
		}
		body.SetRequest(r, r.Header.Get("Content-Type"), data)
	case "list", "watch":
		q := r.URL.Query()
		if _, err := s.translateCRDSelector(q); err != nil {
			return err
		}
		r.URL.RawQuery = q.Encode()
	}
	return nil
}

// translateCRDSelector translates the fieldSelector of q in place (crd.Names.FieldSelector) and returns it.
func (s *server) translateCRDSelector(q url.Values) (string, error) {
	selector, err := s.crds.FieldSelector(q.Get("fieldSelector"))
	if err != nil {
		return "", err
	}
	if selector == "" {
		q.Del("fieldSelector")
	} else {
		q.Set("fieldSelector", selector)
	}
	return selector, nil
}

// Query parameters that belong to listing, not to deleting, and to watching.
var (
	listParameters  = []string{"limit", "continue", "resourceVersion", "resourceVersionMatch"}
	watchParameters = []string{"watch", "allowWatchBookmarks", "sendInitialEvents"}
)

// crdDeleteCollection serves a deletecollection of CRDs as an apiserver holding only the CRDs the proxy's
// clients see would, but that private CRDs are refused (crd.Names.DeleteCollection has the rule), and
// writes the answer. Every backend request carries the client's credentials and its query, fieldSelector
// translated (crd.Names.FieldSelector):
//
//  1. the client's deletecollection narrowed to select nothing (fieldSelector ANDed with metadata.name=,
//     which no CRD has), with the client's DeleteOptions: the backend authorizes the deletecollection and
//     validates its options and query, as it does before it deletes anything;
//  2. a list of what the request selects (its limit, continue and resourceVersion kept, watch parameters
//     dropped), in the shape the client asked for: the backend authorizes the client's list;
//  3. for each CRD to delete, the client's deletecollection narrowed to its name (fieldSelector ANDed with
//     metadata.name=<name>; limit, continue and resourceVersion dropped), with the client's DeleteOptions:
//     the names come from 2 and a hidden or private CRD is told by its name alone, so nothing the
//     client cannot see is deleted, whatever changed on the backend since 2;
//  4. the answer is the list of 2, translated as a list is: kube-apiserver answers a deletecollection with
//     the list of what it selected.
//
// A failure of 1 or 3 is answered with the backend's Status (the CRDs deleted before stay deleted, as
// with kube-apiserver's own deletecollection). It returns an error only before it wrote anything.
func (s *server) crdDeleteCollection(w http.ResponseWriter, r *http.Request, ex *exchange) error {
	deleteOptions, err := body.ReadRequest(r, s.maxBody)
	if err != nil {
		return err
	}
	if len(deleteOptions) == 0 {
		deleteOptions = nil
	}
	q := r.URL.Query()
	selector, err := s.translateCRDSelector(q)
	if err != nil {
		return err
	}
	path := ex.req.BackendPath
	deleteHeader := http.Header{"Accept": {body.JSON}}
	if deleteOptions != nil {
		deleteHeader.Set("Content-Type", r.Header.Get("Content-Type"))
	}
	deleteNamed := func(name string) error {
		narrowed, err := crd.WithName(selector, name)
		if err != nil {
			return err
		}
		dq := cloneValues(q)
		dq.Set("fieldSelector", narrowed)
		if name != "" {
			for _, p := range listParameters {
				dq.Del(p)
			}
			for _, p := range watchParameters {
				dq.Del(p)
			}
		}
		resp, data, err := s.backendDo(r, http.MethodDelete, path, dq.Encode(), deleteHeader, deleteOptions)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return backendError(resp, data, http.MethodDelete, name)
		}
		return nil
	}

	// 1.
	if err := deleteNamed(""); err != nil {
		return err
	}
	// 2.
	lq := cloneValues(q)
	for _, p := range watchParameters {
		lq.Del(p)
	}
	resp, list, err := s.backendDo(r, http.MethodGet, path, lq.Encode(), http.Header{"Accept": {r.Header.Get("Accept")}}, nil)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return backendError(resp, list, http.MethodGet, "")
	}
	names, err := s.crds.DeleteCollection(list)
	if err != nil {
		if _, ok := err.(apierrors.APIStatus); ok {
			return err
		}
		return apierrors.NewInternalError(err)
	}
	// 3.
	for _, name := range names {
		if err := deleteNamed(name); err != nil {
			return err
		}
	}
	// 4.
	resp.Body = io.NopCloser(bytes.NewReader(list))
	resp.ContentLength = int64(len(list))
	resp.Header.Set("Content-Length", strconv.Itoa(len(list)))
	resp.Request = r
	if err := s.translateObjects(ex, resp, s.crds.Upstream); err != nil {
		return err
	}
	if ex.gzip {
		if err := compress(resp); err != nil {
			return err
		}
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		switch k {
		case "Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade":
			continue
		}
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
	return nil
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// getPrivateCRD reads a private CRD from the backend with the client's own credentials, as the check of
// an update needs it.
func (s *server) getPrivateCRD(r *http.Request, privateName string) ([]byte, error) {
	resp, data, err := s.backendGet(r, "/apis/"+crd.Resource.Group+"/v1/"+crd.Resource.Resource+"/"+privateName, body.JSON, "")
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, backendError(resp, data, http.MethodGet, privateName)
	}
	return data, nil
}

// backendError is the error of a backend's answer that failed: its Status in upstream terms, or a
// generic one of its code.
func backendError(resp *http.Response, data []byte, method, name string) error {
	var st metav1.Status
	if translated, err := status.Translate(translate.ToUpstream, data); err == nil && json.Unmarshal(translated, &st) == nil && st.Code != 0 {
		return &apierrors.StatusError{ErrStatus: st}
	}
	return apierrors.NewGenericServerResponse(resp.StatusCode, method, crd.Resource, name, string(data), 0, false)
}
