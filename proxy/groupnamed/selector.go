package groupnamed

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/selection"
)

// nameField is the field of an object's name in a field selector; kube-apiserver's field label conversion
// for CustomResourceDefinitions and APIServices (runtime.DefaultMetaV1FieldSelectorConversion) knows it
// and metadata.namespace.
const nameField = "metadata.name"

// FieldSelector translates the fieldSelector of a list, watch or deletecollection so that it selects on
// the backend exactly what it would select on an apiserver holding only the objects the proxy's clients
// see:
//
//   - a metadata.name term naming the upstream name of a private object names the private object (= and
//     !=);
//   - metadata.name=<hidden or private name> selects an object the clients cannot see: it becomes
//     metadata.name= (empty), which no object has, so that it selects nothing;
//   - metadata.name!=<hidden or private name> holds for every object the clients see: it is dropped.
//
// Every other term is kept. The selector is parsed as kube-apiserver parses it (fields.ParseSelector, "="
// and "==" alike, terms ANDed, values unescaped from \\, \, and \=), so a value is looked up as the
// apiserver would compare it, and written again with fields' escaping. An unchanged selector is returned
// as it is; one whose terms were all dropped is "". A selector that does not parse is a 400 BadRequest.
func (n *Names) FieldSelector(selector string) (string, error) {
	sel, err := fields.ParseSelector(selector)
	if err != nil {
		return "", apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
	}
	changed := false
	var terms []fields.Selector
	for _, r := range sel.Requirements() {
		value, keep := r.Value, true
		if r.Field == nameField {
			switch target, private := n.Lookup(r.Value); target {
			case Mapped:
				value = private
			case Hidden, Private:
				if r.Operator == selection.NotEquals {
					keep = false
				} else {
					value = ""
				}
			}
		}
		if !keep || value != r.Value {
			changed = true
		}
		if !keep {
			continue
		}
		if r.Operator == selection.NotEquals {
			terms = append(terms, fields.OneTermNotEqualSelector(r.Field, value))
		} else {
			terms = append(terms, fields.OneTermEqualSelector(r.Field, value))
		}
	}
	if !changed {
		return selector, nil
	}
	return fields.AndSelectors(terms...).String(), nil
}

// WithName returns the (translated) fieldSelector selector narrowed to the object named name on the
// backend: selector ANDed with metadata.name=<name>. An empty name selects no object. A selector that
// does not parse is a 400 BadRequest.
func WithName(selector, name string) (string, error) {
	sel, err := fields.ParseSelector(selector)
	if err != nil {
		return "", apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
	}
	term := fields.OneTermEqualSelector(nameField, name)
	if sel.Empty() {
		return term.String(), nil
	}
	return fields.AndSelectors(sel, term).String(), nil
}
