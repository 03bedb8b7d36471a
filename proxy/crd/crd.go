// Package crd serves the CustomResourceDefinitions of the mapped groups the way the proxy's clients must
// see them: as an apiserver that holds HyperShift's private CRDs under their upstream names and nothing
// else of the mapped groups. The private CRD machines.cluster.hypershift.openshift.io is served as
// machines.cluster.x-k8s.io, with its upstream group, shortNames and categories; the platform's own CRDs of
// the upstream groups (hidden) and the private names do not exist. CAPI reads its contract labels from
// these CRDs by name, and its CRD migrator patches them.
//
// A CRD's name is <plural>.<spec.group> (kube-apiserver requires it), so what it addresses, how lists,
// watches and Tables are filtered and renamed, fieldSelectors translated, creates checked and
// deletecollections decided is package groupnamed's, shared with APIServices; this package adds what is
// CRDs' own: the renaming of a private CRD (name, group, shortNames, categories) and the checks of writes.
//
// Writes by upstream name reach the private CRD, but may change only its metadata (labels, annotations,
// finalizers, ...) and its status (CAPI's migrator sets status.storedVersions and an observed-generation
// annotation): a patch touching spec or the name, or an update whose spec differs from the stored one, is
// refused with 403 Forbidden, since a change to the group, names or schema of a private CRD must come from
// the generator. Bodies are read as kube-apiserver reads them: member names match exactly, a repeated
// member is decoded over the earlier one (sigs.k8s.io/json, the apiserver's JSON decoder), and YAML,
// protobuf and CBOR bodies are decoded first (groupnamed.Names.BodyJSON).
//
// Creating or deleting a CRD of a mapped group is refused with 403 Forbidden: a create whose name or
// spec.group is in an upstream or a private mapped group (CheckCreate), a delete by the upstream name of a
// private CRD, and a deletecollection that selects one (DeleteCollection). A deletecollection deletes only
// the CRDs the proxy's clients see; a get, update, patch or delete naming a hidden CRD or a private name
// is answered 404 NotFound, as for a CRD that does not exist.
package crd

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/proxy/groupnamed"
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

// Names maps CRD names between the upstream and the private groups, from the route table: its
// groupnamed.Names serve what CRDs share with APIServices (Lookup, Upstream, FieldSelector, CheckCreate,
// DeleteCollection, Absent, Forbidden, BodyJSON). It is safe for concurrent use.
type Names struct {
	*groupnamed.Names
	byUpstream map[string]*crdNames
	byPrivate  map[string]*crdNames
}

// New returns the Names of the routed resources of table: one CRD per private group and resource.
func New(table *translate.Table) *Names {
	n := &Names{byUpstream: map[string]*crdNames{}, byPrivate: map[string]*crdNames{}}
	mapped := map[string]string{}
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
		mapped[c.upstream] = c.private
	}
	n.Names = groupnamed.New(groupnamed.Resource{
		GroupResource: Resource,
		Version:       "v1",
		Kind:          "CustomResourceDefinition",
		Scheme:        scheme,
		Objects:       "CustomResourceDefinitions",
		ServedFrom: func(privateGroup string) string {
			return fmt.Sprintf("HyperShift's private CRDs (group %s), which are installed from the generator's output", privateGroup)
		},
	}, mapped, n.upstreamCRD)
	return n
}

// upstreamCRD renames the private CRD obj (groupnamed.Rename).
func (n *Names) upstreamCRD(obj []byte, private, _ string) ([]byte, error) {
	return groupnamed.Apply(obj, n.byPrivate[private].toUpstream())
}

// forbidden is the 403 for a write the proxy refuses on the CRD name.
func forbidden(name, format string, args ...any) error {
	return apierrors.NewForbidden(Resource, name, fmt.Errorf(format, args...))
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
