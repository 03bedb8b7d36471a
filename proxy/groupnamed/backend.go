package groupnamed

// What the proxy asks the backend on a client's behalf to serve these resources: authorization of an
// answer it gives itself (Authorize), a deletecollection of what the client sees (DeleteSelected).

import (
	"encoding/json"
	"net/http"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
)

// Backend sends a request to the backend on behalf of the client of r: method to path?rawQuery with the
// headers of header and body (nil for none), and the client's credentials. It returns the response (its
// body read and closed, gzip undone) and the body. The error is an API status: 503 when the backend
// cannot be reached.
type Backend func(r *http.Request, method, path, rawQuery string, header http.Header, body []byte) (*http.Response, []byte, error)

// probeContentType is a media type no apiserver decodes: a request whose body has it is authenticated and
// authorized (filters that run first) and then refused with 415 before anything is read or written.
const probeContentType = "application/x-hypershift-capi-proxy-probe"

// probeBody is the body of such a request: DeleteOptions with a UID precondition no object has, so that
// even a delete that decoded it would delete nothing (the apiserver's storage checks preconditions before
// it deletes).
const probeBody = `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","preconditions":{"uid":"hypershift-capi-proxy-probe"}}`

// Authorize has the backend authenticate and authorize the client's request r (of the object name, at
// backendPath) as kube-apiserver does before it reads a body or looks an object up, for an answer the
// proxy gives itself (Absent, a refused write): the backend gets the same method, path and query with the
// client's credentials, a GET as it is and any other method with a body of a media type no apiserver
// decodes (DeleteOptions whose UID precondition no object has), so that it authenticates and authorizes
// the client's verb on that path and changes nothing. It returns the backend's 401, 403 or 429 (naming
// the object as the client named it), the error of a backend that could not be reached, or nil.
func (n *Names) Authorize(r *http.Request, do Backend, backendPath, name string) error {
	header := http.Header{"Accept": {body.JSON}}
	var probe []byte
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		header.Set("Content-Type", probeContentType)
		probe = []byte(probeBody)
	}
	resp, data, err := do(r, r.Method, backendPath, r.URL.RawQuery, header, probe)
	if err != nil {
		return err
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusTooManyRequests:
		var st metav1.Status
		if json.Unmarshal(data, &st) == nil && st.Code != 0 {
			return &apierrors.StatusError{ErrStatus: st}
		}
		return apierrors.NewGenericServerResponse(resp.StatusCode, r.Method, n.GroupResource(), name, string(data), 0, false)
	}
	return nil
}

// TranslateSelector translates the fieldSelector of q in place (FieldSelector) and returns it.
func (n *Names) TranslateSelector(q url.Values) (string, error) {
	selector, err := n.FieldSelector(q.Get("fieldSelector"))
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

// DeleteSelected serves a deletecollection, r, of the resource at backendPath as an apiserver holding
// only the objects the proxy's clients see would, but that private objects are refused (DeleteCollection
// has the rule). deleteOptions is r's body, read (nil for none). Every backend request carries the
// client's credentials and its query, fieldSelector translated (FieldSelector):
//
//  1. the client's deletecollection narrowed to select nothing (fieldSelector ANDed with metadata.name=,
//     which no object has), with the client's DeleteOptions: the backend authorizes the deletecollection
//     and validates its options and query, as it does before it deletes anything;
//  2. a list of what the request selects (its limit, continue and resourceVersion kept, watch parameters
//     dropped), in the shape the client asked for: the backend authorizes the client's list;
//  3. for each object to delete, the client's deletecollection narrowed to its name (fieldSelector ANDed
//     with metadata.name=<name>; limit, continue and resourceVersion dropped), with the client's
//     DeleteOptions: the names come from 2 and a hidden or private object is told by its name alone, so
//     nothing the client cannot see is deleted, whatever changed on the backend since 2.
//
// It returns the backend's answer to 2 (its body read, the backend's objects as they are) and its body:
// kube-apiserver answers a deletecollection with the list of what it selected, for the caller to translate
// (Upstream) and write. A failure of 1 or 3 is the backend's Status (the objects deleted before stay
// deleted, as with kube-apiserver's own deletecollection), as an API status error.
func (n *Names) DeleteSelected(r *http.Request, do Backend, backendPath string, deleteOptions []byte) (*http.Response, []byte, error) {
	if len(deleteOptions) == 0 {
		deleteOptions = nil
	}
	q := r.URL.Query()
	selector, err := n.TranslateSelector(q)
	if err != nil {
		return nil, nil, err
	}
	deleteHeader := http.Header{"Accept": {body.JSON}}
	if deleteOptions != nil {
		deleteHeader.Set("Content-Type", r.Header.Get("Content-Type"))
	}
	deleteNamed := func(name string) error {
		narrowed, err := WithName(selector, name)
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
		resp, data, err := do(r, http.MethodDelete, backendPath, dq.Encode(), deleteHeader, deleteOptions)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return n.BackendError(resp, data, http.MethodDelete, name)
		}
		return nil
	}

	// 1.
	if err := deleteNamed(""); err != nil {
		return nil, nil, err
	}
	// 2.
	lq := cloneValues(q)
	for _, p := range watchParameters {
		lq.Del(p)
	}
	resp, list, err := do(r, http.MethodGet, backendPath, lq.Encode(), http.Header{"Accept": {r.Header.Get("Accept")}}, nil)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, n.BackendError(resp, list, http.MethodGet, "")
	}
	deleted, err := n.DeleteCollection(list)
	if err != nil {
		if _, ok := err.(apierrors.APIStatus); ok {
			return nil, nil, err
		}
		return nil, nil, apierrors.NewInternalError(err)
	}
	// 3.
	for _, name := range deleted {
		if err := deleteNamed(name); err != nil {
			return nil, nil, err
		}
	}
	return resp, list, nil
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// BackendError is the error of a backend's answer to a request of the resource (method, of the object
// name or "") that failed: its Status in upstream terms (Upstream), or a generic one of its code.
func (n *Names) BackendError(resp *http.Response, data []byte, method, name string) error {
	var st metav1.Status
	if translated, err := n.Upstream(data); err == nil && json.Unmarshal(translated, &st) == nil && st.Code != 0 {
		return &apierrors.StatusError{ErrStatus: st}
	}
	return apierrors.NewGenericServerResponse(resp.StatusCode, method, n.GroupResource(), name, string(data), 0, false)
}
