// Package crd serves the CustomResourceDefinitions of the mapped groups the way the proxy's clients must
// see them: as an apiserver that holds HyperShift's private CRDs under their upstream names and nothing
// else of the mapped groups. The private CRD machines.cluster.hypershift.openshift.io is served as
// machines.cluster.x-k8s.io, with its upstream group, shortNames and categories; the platform's own CRDs of
// the upstream groups (hidden) and the private names do not exist. CAPI reads its contract labels from
// these CRDs by name, and its CRD migrator patches them.
//
// What a CRD name addresses depends on the name alone (Lookup): the group is what follows the first dot,
// since kube-apiserver requires a CRD's name to be <plural>.<spec.group>.
//
// Reads (get, list, watch, in full, as PartialObjectMetadata or as a Table) are translated object by
// object (Upstream): a private CRD with a route is renamed, a hidden CRD and a CRD of a private group
// without a route are dropped (as discovery drops their groups), any other CRD is passed on as it is.
// The metadata.name terms of a fieldSelector are translated so that they select what they would select on
// such an apiserver (FieldSelector).
//
// Writes by upstream name reach the private CRD, but may change only its metadata (labels, annotations,
// finalizers, ...) and its status (CAPI's migrator sets status.storedVersions and an observed-generation
// annotation): a patch touching spec or the name, or an update whose spec differs from the stored one, is
// refused with 403 Forbidden, since a change to the group, names or schema of a private CRD must come from
// the generator. Bodies are read as kube-apiserver reads them: member names match exactly, a repeated
// member is decoded over the earlier one (sigs.k8s.io/json, the apiserver's JSON decoder), and YAML,
// protobuf and CBOR bodies are decoded first (BodyJSON).
//
// Creating or deleting a CRD of a mapped group is refused with 403 Forbidden: a create whose name or
// spec.group is in an upstream or a private mapped group (CheckCreate), a delete by the upstream name of a
// private CRD, and a deletecollection that selects one (DeleteCollection). A deletecollection deletes only
// the CRDs the proxy's clients see; a get, update, patch or delete naming a hidden CRD or a private name
// is answered 404 NotFound, as for a CRD that does not exist.
package crd

import (
	"fmt"
	"mime"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Resource is the resource this package serves.
var Resource = schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}

// crdNames is one private CRD: its two names and the upstream names clients see.
type crdNames struct {
	upstream, private string
	// upstreamGroup and privateGroup are the CRD's spec.group either side.
	upstreamGroup, privateGroup string
	// shortNames and categories are upstream's (the route table's).
	shortNames, categories []string
}

// Names maps CRD names between the upstream and the private groups, from the route table. It is safe for
// concurrent use.
type Names struct {
	byUpstream map[string]*crdNames
	byPrivate  map[string]*crdNames
}

// New returns the Names of the routed resources of table: one CRD per private group and resource.
func New(table *translate.Table) *Names {
	n := &Names{byUpstream: map[string]*crdNames{}, byPrivate: map[string]*crdNames{}}
	for _, r := range table.Routes() {
		c := &crdNames{
			upstream:      r.Upstream.Resource + "." + r.Upstream.Group,
			private:       r.Private.Resource + "." + r.Private.Group,
			upstreamGroup: r.Upstream.Group,
			privateGroup:  r.Private.Group,
			shortNames:    r.ShortNames,
			categories:    r.Categories,
		}
		n.byUpstream[c.upstream] = c
		n.byPrivate[c.private] = c
	}
	return n
}

// Target says what a CRD name addresses.
type Target int

const (
	// Unmapped is a CRD of any other group: passed on as it is.
	Unmapped Target = iota
	// Mapped is the upstream name of a private CRD: served from the private CRD.
	Mapped
	// Hidden is an upstream-named CRD of a mapped group that no route serves (the platform's own): the
	// proxy's clients never see it, as discovery never shows its group.
	Hidden
	// Private is a name in a private group (a private CRD's own name): through the proxy the private
	// groups do not exist, so neither does a CRD of that name.
	Private
)

// Lookup returns what a CRD name addresses and, for Mapped, the private CRD's name.
func (n *Names) Lookup(name string) (Target, string) {
	if c, ok := n.byUpstream[name]; ok {
		return Mapped, c.private
	}
	_, group, _ := strings.Cut(name, ".")
	switch {
	case translate.ToPrivate.Maps(group):
		return Hidden, ""
	case translate.ToUpstream.Maps(group):
		return Private, ""
	}
	return Unmapped, ""
}

// NotFound is the 404 kube-apiserver answers for a CRD that does not exist.
func NotFound(name string) error {
	return apierrors.NewNotFound(Resource, name)
}

// Absent is the answer to a request naming a hidden CRD or a private name (Hidden, Private), which do not
// exist for the proxy's clients: 404 NotFound, as kube-apiserver answers for a CRD that does not exist;
// but a server-side apply patch (Content-Type application/apply-patch+yaml, +cbor, ...) would create the
// CRD, and is refused as a create is (Forbidden).
func Absent(verb, name, contentType string) error {
	if mediaType, _, _ := mime.ParseMediaType(contentType); verb == "patch" && strings.HasPrefix(mediaType, "application/apply-patch") {
		return Forbidden("create", name, groupOf(name))
	}
	return NotFound(name)
}

// forbidden is the 403 for a write the proxy refuses on the CRD name.
func forbidden(name, format string, args ...any) error {
	return apierrors.NewForbidden(Resource, name, fmt.Errorf(format, args...))
}

// Forbidden refuses creating or deleting through the proxy the CRD name (as the client named it) of the
// mapped group group: an upstream group, whose CRDs the proxy serves from the private CRDs, or a private
// group, which the proxy's clients do not see.
func Forbidden(verb, name, group string) error {
	if translate.ToPrivate.Maps(group) {
		return forbidden(name, "the proxy serves the CRDs of %s from HyperShift's private CRDs (group %s), which "+
			"are installed from the generator's output: they cannot be %s through the proxy", group, translate.ToPrivate.Group(group), pastTense(verb))
	}
	return forbidden(name, "CustomResourceDefinitions of group %s cannot be %s through the proxy", group, pastTense(verb))
}

// mappedGroup reports whether group is an upstream or a private group of the table.
func mappedGroup(group string) bool {
	return translate.ToPrivate.Maps(group) || translate.ToUpstream.Maps(group)
}

// groupOf returns the group part of a CRD name.
func groupOf(name string) string {
	_, group, _ := strings.Cut(name, ".")
	return group
}

func pastTense(verb string) string {
	switch verb {
	case "create":
		return "created"
	case "delete", "deletecollection":
		return "deleted"
	}
	return verb + "d"
}

// privateShortNames and privateCategories are what the generator writes into the private CRDs for
// upstream's shortNames and categories (see apis/upstream).
func privateShortNames(in []string) []string { return prefixed(upstream.PrivateShortNamePrefix, in) }
func privateCategories(in []string) []string { return prefixed(upstream.PrivateCategoryPrefix, in) }

func prefixed(prefix string, in []string) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = prefix + s
	}
	return out
}

// nameField is the field of a CRD's name in a field selector; kube-apiserver's field label conversion for
// CustomResourceDefinitions (runtime.DefaultMetaV1FieldSelectorConversion) knows it and metadata.namespace.
const nameField = "metadata.name"

// FieldSelector translates the fieldSelector of a list, watch or deletecollection so that it selects on
// the backend exactly what it would select on an apiserver holding only the CRDs the proxy's clients see:
//
//   - a metadata.name term naming the upstream name of a private CRD names the private CRD (= and !=);
//   - metadata.name=<hidden or private name> selects a CRD the clients cannot see: it becomes
//     metadata.name= (empty), which no CRD has, so that it selects nothing;
//   - metadata.name!=<hidden or private name> holds for every CRD the clients see: it is dropped.
//
// Every other term is kept. The selector is parsed as kube-apiserver parses it (fields.ParseSelector, "=" and
// "==" alike, terms ANDed, values unescaped from \\, \, and \=), so a value is looked up as the apiserver
// would compare it, and written again with fields' escaping. An unchanged selector is returned as it is;
// one whose terms were all dropped is "". A selector that does not parse is a 400 BadRequest.
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

// WithName returns the (translated) fieldSelector selector narrowed to the CRD named name on the backend:
// selector ANDed with metadata.name=<name>. An empty name selects no CRD. A selector that does not parse
// is a 400 BadRequest.
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
