package server

import (
	"bytes"
	"io"
	"net/http"
	"strconv"

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
// is refused after the backend authorized the client (groupnamed.Names.Authorize), as kube-apiserver
// authorizes first.
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
			if denied := names.Authorize(r, s.backendDo, ex.req.BackendPath, ex.req.Name); denied != nil {
				err = denied
			}
		}
		status.Write(w, err)
		return
	}
	ex.respond = func(resp *http.Response) error { return s.translateObjects(ex, resp, names.Upstream) }
	s.proxy.ServeHTTP(w, r)
}

// absent answers a request naming a hidden name or a private name (groupnamed.Names.Absent) as
// kube-apiserver answers one naming an object that does not exist, authentication and authorization
// included (groupnamed.Names.Authorize): the backend's refusal, or Absent's answer.
func (s *server) absent(r *http.Request, ex *exchange, names *groupnamed.Names) error {
	if err := names.Authorize(r, s.backendDo, ex.req.BackendPath, ex.req.Name); err != nil {
		return err
	}
	return names.Absent(ex.req.Verb, ex.req.Name, r.Header.Get("Content-Type"))
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
		if _, err := names.TranslateSelector(q); err != nil {
			return err
		}
		r.URL.RawQuery = q.Encode()
	}
	return nil
}

// deleteCollection serves a deletecollection of a resource whose objects are named after a group
// (groupnamed.Names.DeleteSelected) and writes the answer: the list of what it selected, translated as a
// list is (names.Upstream) and compressed for a client that accepts gzip. It returns an error only
// before it wrote anything.
func (s *server) deleteCollection(w http.ResponseWriter, r *http.Request, ex *exchange, names *groupnamed.Names) error {
	deleteOptions, err := body.ReadRequest(r, s.maxBody)
	if err != nil {
		return err
	}
	resp, list, err := names.DeleteSelected(r, s.backendDo, ex.target.BackendPath, deleteOptions)
	if err != nil {
		return err
	}
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
