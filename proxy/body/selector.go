package body

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openshift/hypershift-capi-proxy/translate"
)

// FieldSelector translates, in direction d, the values of a list or watch request's fieldSelector that
// name a group, for the resources of builtinKinds that can select on such a field (an Event's
// involvedObject.apiVersion). A selector of any other resource, or one without such a key, is returned as
// it is. A selector that does not parse is a 400 BadRequest, as the apiserver answers it.
func FieldSelector(d translate.Direction, gr schema.GroupResource, selector string) (string, error) {
	k, ok := builtinByResource[gr]
	if !ok || len(k.selectable) == 0 || selector == "" {
		return selector, nil
	}
	sel, err := fields.ParseSelector(selector)
	if err != nil {
		return "", apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
	}
	changed := false
	out, err := sel.Transform(func(field, value string) (string, string, error) {
		var t string
		switch k.selectable[field] {
		case translate.APIVersionValue:
			t = d.APIVersion(value)
		case translate.GroupValue:
			t = d.Group(value)
		default:
			return field, value, nil
		}
		changed = changed || t != value
		return field, t, nil
	})
	if err != nil || !changed {
		return selector, err
	}
	return out.String(), nil
}
