package server

import (
	"net/http"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// translateQuery translates the query parameters of a resource request that can name a group: the
// fieldSelector of a list, watch or deletecollection of a resource that selects on a group-carrying
// field (Events by involvedObject.apiVersion). The error is an API status.
func translateQuery(r *http.Request, req classify.Request) error {
	switch req.Verb {
	case "list", "watch", "deletecollection":
	default:
		return nil
	}
	q := r.URL.Query()
	selector := q.Get("fieldSelector")
	if selector == "" {
		return nil
	}
	out, err := body.FieldSelector(translate.ToPrivate, schema.GroupResource{Group: req.Group, Resource: req.Resource}, selector)
	if err != nil || out == selector {
		return err
	}
	q.Set("fieldSelector", out)
	r.URL.RawQuery = q.Encode()
	return nil
}
