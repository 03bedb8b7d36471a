// Package crd serves the CustomResourceDefinitions of the mapped groups the way the proxy's clients must
// see them: HyperShift's private CRD (machines.cluster.hypershift.openshift.io) under its upstream name
// (machines.cluster.x-k8s.io), with its upstream group, shortNames and categories, and the platform's own
// CRDs of the upstream groups hidden. CAPI reads its contract labels from these CRDs by name, and its CRD
// migrator patches them.
//
// Reads (get, list, watch, in full, as PartialObjectMetadata or as a Table) are translated object by
// object: a private CRD with a route is renamed, an upstream-named CRD of a mapped group is dropped (as
// discovery drops the group), any other CRD is passed on as it is.
//
// Writes by upstream name reach the private CRD, but may change only its metadata (labels, annotations,
// finalizers, ...) and its status (CAPI's migrator sets status.storedVersions and an observed-generation
// annotation): a patch touching spec or the name, or an update whose spec differs from the stored one, is
// refused with 403 Forbidden, since a change to the group, names or schema of a private CRD must come from
// the generator. Creating or deleting a CRD of a mapped group through the proxy is refused the same way.
// Requests naming a private CRD are not translated at all (like every private path).
package crd

import (
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
	// Private is the name of a private CRD: passed on as it is, like every private path.
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

// forbidden is the 403 for a write the proxy refuses on the CRD name.
func forbidden(name, format string, args ...any) error {
	return apierrors.NewForbidden(Resource, name, fmt.Errorf(format, args...))
}

// Forbidden refuses creating or deleting a CRD of a mapped group through the proxy.
func Forbidden(verb, name string) error {
	_, group, _ := strings.Cut(name, ".")
	return forbidden(name, "the proxy serves the CRDs of %s from HyperShift's private CRDs (group %s), which "+
		"are installed from the generator's output: they cannot be %s through the proxy", group, translate.ToPrivate.Group(group), pastTense(verb))
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

// NameOf returns metadata.name of a JSON object, or "" if it has none or does not decode.
func NameOf(obj []byte) string {
	var id identity
	_ = json.Unmarshal(obj, &id)
	return id.Metadata.Name
}

// FieldSelector translates the metadata.name values of a list or watch's fieldSelector (a client-go
// informer on one CRD selects it so) from the upstream name of a private CRD to its private name. A
// selector that does not parse is a 400 BadRequest.
func (n *Names) FieldSelector(selector string) (string, error) {
	sel, err := fields.ParseSelector(selector)
	if err != nil {
		return "", apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
	}
	out, err := sel.Transform(func(field, value string) (string, string, error) {
		if field == "metadata.name" {
			if target, private := n.Lookup(value); target == Mapped {
				return field, private, nil
			}
		}
		return field, value, nil
	})
	if err != nil {
		return "", apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
	}
	if out.String() == sel.String() {
		return selector, nil
	}
	return out.String(), nil
}
