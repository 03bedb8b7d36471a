package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/groupnamed"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/gzip"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
)

// groupNamed is a resource whose objects are named after an API group, <x>.<group> (package groupnamed):
// CustomResourceDefinitions and APIServices.
type groupNamed struct {
	names *groupnamed.Names
	// mapped checks and translates a request naming the upstream name of a private object (privateName),
	// other than a create or a delete (which are refused): serveGroupNamed then points it at the private
	// object.
	mapped func(r *http.Request, ex *exchange, privateName string) error
}

// serveGroupNamed serves a request of a resource whose objects are named after an API group (see package
// groupnamed): by the upstream name of a private object it reaches the private object (g.mapped checks
// writes; creates and deletes are refused); a hidden name and a private name address nothing (absent); the
// collection is filtered and renamed object by object, its fieldSelector translated, creates checked, and
// a deletecollection deletes only what the client sees (deleteCollection). What the proxy refuses itself
// is refused after the backend authorized the client (authorize), as kube-apiserver authorizes first.
func (s *server) serveGroupNamed(w http.ResponseWriter, r *http.Request, ex *exchange, g *groupNamed) {
	req := ex.req
	names := g.names
	// A Status naming the private object a request by its upstream name reached names it as the client did.
	ex.statusUpstream = names.Upstream
	// Answers are translated in JSON only (ServeHTTP narrowed Accept, negotiate.Narrow): a YAML answer
	// would show the backend's objects as they are.
	// A request naming a private object by its upstream name goes to the private object's path (its
	// target, privateObjectPath).
	named, privateName := namedObject(r, req, names)
	var err error
	switch {
	case named == groupnamed.Hidden || named == groupnamed.Private:
		if req.Verb == "watch" {
			// A watch of one name by its path (/watch/<resource>/<name>): the apiserver would watch an
			// object that does not exist, an open stream without events.
			ex.respond = func(resp *http.Response) error { return s.translateObjects(ex, resp, dropObject) }
			s.proxy.ServeHTTP(w, r)
			return
		}
		err = s.absent(r, ex, names)
	case named == groupnamed.Mapped && (req.Verb == "create" || req.Verb == "delete"):
		err = names.Forbidden(req.Verb, req.Name, groupnamed.GroupOf(req.Name))
	case named == groupnamed.Mapped:
		err = g.mapped(r, ex, privateName)
	case req.Verb == "deletecollection":
		if err = s.deleteCollection(w, r, ex, names); err == nil {
			return
		}
	default:
		err = s.collectionRequest(r, ex, names)
	}
	if err != nil {
		if named == groupnamed.Mapped || named == groupnamed.Unmapped && req.Verb != "deletecollection" {
			// The proxy refuses the request (or could not read the private object it checks it against):
			// kube-apiserver would have authorized the client first. absent and deleteCollection did.
			if denied := s.authorize(r, ex, names); denied != nil {
				err = denied
			}
		}
		status.Write(w, err)
		return
	}
	ex.respond = func(resp *http.Response) error { return s.translateObjects(ex, resp, names.Upstream) }
	s.proxy.ServeHTTP(w, r)
}

// probeContentType is a media type no apiserver decodes: a request whose body has it is authenticated and
// authorized (filters that run first) and then refused with 415 before anything is read or written.
const probeContentType = "application/x-hypershift-capi-proxy-probe"

// probeBody is the body of such a request: DeleteOptions with a UID precondition no object has, so that
// even a delete that decoded it would delete nothing (the apiserver's storage checks preconditions before
// it deletes).
const probeBody = `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","preconditions":{"uid":"hypershift-capi-proxy-probe"}}`

// absent answers a request naming a hidden name or a private name (groupnamed.Names.Absent) as
// kube-apiserver answers one naming an object that does not exist, authentication and authorization
// included (authorize): the backend's refusal, or Absent's answer.
func (s *server) absent(r *http.Request, ex *exchange, names *groupnamed.Names) error {
	if err := s.authorize(r, ex, names); err != nil {
		return err
	}
	return names.Absent(ex.req.Verb, ex.req.Name, r.Header.Get("Content-Type"))
}

// authorize has the backend authenticate and authorize the client's request as kube-apiserver does
// before it reads a body or looks an object up, for an answer the proxy gives itself (absent, a refused
// write): the backend gets the same method, path and query with the client's credentials, a GET as it
// is and any other method with the body probeBody of type probeContentType, so that it authenticates and
// authorizes the client's verb on that path and changes nothing. It returns the backend's 401, 403 or 429
// (naming the object as the client named it), the error of a backend that could not be reached, or nil.
func (s *server) authorize(r *http.Request, ex *exchange, names *groupnamed.Names) error {
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
		return apierrors.NewGenericServerResponse(resp.StatusCode, r.Method, names.GroupResource(), ex.req.Name, string(data), 0, false)
	}
	return nil
}

// dropObject drops every object of a response.
func dropObject([]byte) ([]byte, error) { return nil, nil }

// collectionRequest checks a create (groupnamed.Names.CheckCreate; the body goes on unchanged) and
// translates the fieldSelector of a list or watch of the collection.
func (s *server) collectionRequest(r *http.Request, ex *exchange, names *groupnamed.Names) error {
	switch ex.req.Verb {
	case "create":
		data, err := body.ReadRequest(r, s.maxBody)
		if err != nil {
			return err
		}
		if err := names.CheckCreate(r.Header.Get("Content-Type"), data); err != nil {
			return err
		}
		body.SetRequest(r, r.Header.Get("Content-Type"), data)
	case "list", "watch":
		q := r.URL.Query()
		if _, err := translateSelector(q, names); err != nil {
			return err
		}
		r.URL.RawQuery = q.Encode()
	}
	return nil
}

// translateSelector translates the fieldSelector of q in place (groupnamed.Names.FieldSelector) and
// returns it.
func translateSelector(q url.Values, names *groupnamed.Names) (string, error) {
	selector, err := names.FieldSelector(q.Get("fieldSelector"))
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

// deleteCollection serves a deletecollection of a resource whose objects are named after a group as an
// apiserver holding only the objects the proxy's clients see would, but that private objects are refused
// (groupnamed.Names.DeleteCollection has the rule), and writes the answer. Every backend request carries
// the client's credentials and its query, fieldSelector translated (groupnamed.Names.FieldSelector):
//
//  1. the client's deletecollection narrowed to select nothing (fieldSelector ANDed with metadata.name=,
//     which no object has), with the client's DeleteOptions: the backend authorizes the deletecollection
//     and validates its options and query, as it does before it deletes anything;
//  2. a list of what the request selects (its limit, continue and resourceVersion kept, watch parameters
//     dropped), in the shape the client asked for: the backend authorizes the client's list;
//  3. for each object to delete, the client's deletecollection narrowed to its name (fieldSelector ANDed
//     with metadata.name=<name>; limit, continue and resourceVersion dropped), with the client's
//     DeleteOptions: the names come from 2 and a hidden or private object is told by its name alone, so
//     nothing the client cannot see is deleted, whatever changed on the backend since 2;
//  4. the answer is the list of 2, translated as a list is: kube-apiserver answers a deletecollection with
//     the list of what it selected.
//
// A failure of 1 or 3 is answered with the backend's Status (the objects deleted before stay deleted, as
// with kube-apiserver's own deletecollection). It returns an error only before it wrote anything.
func (s *server) deleteCollection(w http.ResponseWriter, r *http.Request, ex *exchange, names *groupnamed.Names) error {
	deleteOptions, err := body.ReadRequest(r, s.maxBody)
	if err != nil {
		return err
	}
	if len(deleteOptions) == 0 {
		deleteOptions = nil
	}
	q := r.URL.Query()
	selector, err := translateSelector(q, names)
	if err != nil {
		return err
	}
	path := ex.target.BackendPath
	deleteHeader := http.Header{"Accept": {body.JSON}}
	if deleteOptions != nil {
		deleteHeader.Set("Content-Type", r.Header.Get("Content-Type"))
	}
	deleteNamed := func(name string) error {
		narrowed, err := groupnamed.WithName(selector, name)
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
			return backendError(resp, data, names, http.MethodDelete, name)
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
		return backendError(resp, list, names, http.MethodGet, "")
	}
	deleted, err := names.DeleteCollection(list)
	if err != nil {
		if _, ok := err.(apierrors.APIStatus); ok {
			return err
		}
		return apierrors.NewInternalError(err)
	}
	// 3.
	for _, name := range deleted {
		if err := deleteNamed(name); err != nil {
			return err
		}
	}
	// 4.
	resp.Body = io.NopCloser(bytes.NewReader(list))
	resp.ContentLength = int64(len(list))
	resp.Header.Set("Content-Length", strconv.Itoa(len(list)))
	resp.Request = r
	if err := s.translateObjects(ex, resp, names.Upstream); err != nil {
		return err
	}
	if ex.gzip {
		if err := gzip.Compress(resp); err != nil {
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

// backendError is the error of a backend's answer to a request of the resource of names that failed: its
// Status in upstream terms (names.Upstream), or a generic one of its code.
func backendError(resp *http.Response, data []byte, names *groupnamed.Names, method, name string) error {
	var st metav1.Status
	if translated, err := names.Upstream(data); err == nil && json.Unmarshal(translated, &st) == nil && st.Code != 0 {
		return &apierrors.StatusError{ErrStatus: st}
	}
	return apierrors.NewGenericServerResponse(resp.StatusCode, method, names.GroupResource(), name, string(data), 0, false)
}
