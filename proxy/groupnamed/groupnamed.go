// Package groupnamed serves the cluster-scoped resources whose objects are named after the API group they
// register, <x>.<group>, the way the proxy's clients must see them: as an apiserver that holds the
// private objects the route table serves under their upstream names, and nothing else of the mapped
// groups. Two resources are such: CustomResourceDefinitions, named <plural>.<spec.group> (kube-apiserver
// requires it; package crd), and APIServices, named <spec.version>.<spec.group> (kube-aggregator's
// validation requires it; package apiservice). On the backend both exist for the private groups and for
// the platform's own upstream groups.
//
// What a name addresses depends on the name alone (Lookup): the group is what follows the first dot.
//
//   - Mapped: the upstream name of a private object the route table serves (machines.cluster.x-k8s.io,
//     v1beta2.cluster.x-k8s.io) addresses the private object (machines.cluster.hypershift.openshift.io,
//     v1beta2.cluster.hypershift.openshift.io), shown renamed (Upstream, with the resource's Rename);
//   - Hidden: any other name in an upstream mapped group (the platform's own objects) and Private: any name
//     in a private group do not exist for the proxy's clients. A request naming one is answered 404
//     NotFound, as for an object that does not exist (Absent); lists, watches and Tables drop them
//     (Upstream), and a fieldSelector naming one selects nothing (FieldSelector);
//   - Unmapped: every other name, passed on as it is.
//
// Creating an object whose name or spec.group is in a mapped group, upstream or private, is refused with
// 403 Forbidden (CheckCreate, Forbidden), and so is a deletecollection that selects a Mapped object
// (DeleteCollection); a deletecollection deletes only the objects the clients see. Bodies are read as
// kube-apiserver reads them: member names match exactly, a repeated member is decoded over the earlier
// one (sigs.k8s.io/json, the apiserver's JSON decoder), and YAML, protobuf and CBOR bodies are decoded
// first (BodyJSON).
//
// What the proxy refuses itself is refused once the backend authorized the client (Authorize), as
// kube-apiserver authorizes first; a deletecollection is served by the backend's requests DeleteSelected
// lists, each with the client's credentials (backend.go). Package server dispatches the requests here.
package groupnamed

import (
	"fmt"
	"mime"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Resource describes a resource whose objects are named <x>.<group>.
type Resource struct {
	// GroupResource is the resource (apiextensions.k8s.io customresourcedefinitions, ...).
	schema.GroupResource
	// Version is the only version of the group kube-apiserver serves the resource in, Kind its objects'
	// kind: a protobuf body's envelope defaults to them.
	Version, Kind string
	// Scheme holds the types of Version with their defaults, to decode protobuf bodies.
	Scheme *runtime.Scheme
	// Objects names the objects in messages, in the plural ("CustomResourceDefinitions").
	Objects string
	// ServedFrom says in messages what the proxy serves the objects of an upstream group from, given the
	// private group ("HyperShift's private CRDs (group cluster.hypershift.openshift.io)").
	ServedFrom func(privateGroup string) string
}

// Rename returns the JSON object obj (an object, a list item without a kind, a PartialObjectMetadata,
// a Table row's object) that the backend holds under the private name private, in the view of the
// proxy's clients, whose name for it is upstream.
type Rename func(obj []byte, private, upstream string) ([]byte, error)

// Names maps the names of a Resource's objects between the upstream and the private groups. It is safe
// for concurrent use.
type Names struct {
	resource   Resource
	byUpstream map[string]string
	byPrivate  map[string]string
	rename     Rename
	decoder    decoder
}

// New returns the Names of resource whose Mapped objects are mapped, by upstream name to private name;
// rename translates such an object. It panics if resource.Scheme has no protobuf or JSON serializer.
func New(resource Resource, mapped map[string]string, rename Rename) *Names {
	n := &Names{resource: resource, byUpstream: map[string]string{}, byPrivate: map[string]string{}, rename: rename,
		decoder: newDecoder(resource)}
	for upstream, private := range mapped {
		n.byUpstream[upstream] = private
		n.byPrivate[private] = upstream
	}
	return n
}

// GroupResource returns the resource.
func (n *Names) GroupResource() schema.GroupResource { return n.resource.GroupResource }

// Target says what a name addresses.
type Target int

const (
	// Unmapped is a name of any other group: passed on as it is.
	Unmapped Target = iota
	// Mapped is the upstream name of a private object with a route: served from the private object.
	Mapped
	// Hidden is an upstream-named object of a mapped group that no route serves (the platform's own):
	// the proxy's clients never see it, as discovery never shows what it registers.
	Hidden
	// Private is a name in a private group (a private object's own name): through the proxy the private
	// groups do not exist, so neither does an object of that name.
	Private
)

// Lookup returns what a name addresses and, for Mapped, the private object's name.
func (n *Names) Lookup(name string) (Target, string) {
	if private, ok := n.byUpstream[name]; ok {
		return Mapped, private
	}
	switch group := GroupOf(name); {
	case translate.ToPrivate.Maps(group):
		return Hidden, ""
	case translate.ToUpstream.Maps(group):
		return Private, ""
	}
	return Unmapped, ""
}

// view says how an object the backend holds under name is shown: under the upstream name (renamed),
// hidden, or as it is (neither). Any object of a mapped group, upstream (the platform's) or private
// (without a route), but a private one with a route, is hidden.
func (n *Names) view(name string) (upstream string, renamed, hide bool) {
	if upstream, ok := n.byPrivate[name]; ok {
		return upstream, true, false
	}
	return "", false, MappedGroup(GroupOf(name))
}

// GroupOf returns the group part of a name: what follows its first dot.
func GroupOf(name string) string {
	_, group, _ := strings.Cut(name, ".")
	return group
}

// MappedGroup reports whether group is an upstream or a private group of the table.
func MappedGroup(group string) bool {
	return translate.ToPrivate.Maps(group) || translate.ToUpstream.Maps(group)
}

// NotFound is the 404 kube-apiserver answers for an object of the resource that does not exist.
func (n *Names) NotFound(name string) error {
	return apierrors.NewNotFound(n.resource.GroupResource, name)
}

// Absent is the answer to a request naming a Hidden or Private name, which do not exist for the proxy's
// clients: 404 NotFound, as kube-apiserver answers for an object that does not exist; but a server-side
// apply patch (Content-Type application/apply-patch+yaml, +cbor, ...) would create the object, and is
// refused as a create is (Forbidden).
func (n *Names) Absent(verb, name, contentType string) error {
	if mediaType, _, _ := mime.ParseMediaType(contentType); verb == "patch" && strings.HasPrefix(mediaType, "application/apply-patch") {
		return n.Forbidden("create", name, GroupOf(name))
	}
	return n.NotFound(name)
}

// Forbidden refuses verb (create, update, patch, delete, deletecollection) through the proxy on the object
// name (as the client named it) of the mapped group group: an upstream group, whose objects the proxy
// serves from the private ones (Resource.ServedFrom), or a private group, which the proxy's clients do
// not see. It is a 403 Forbidden naming the resource and name.
func (n *Names) Forbidden(verb, name, group string) error {
	if translate.ToPrivate.Maps(group) {
		return apierrors.NewForbidden(n.resource.GroupResource, name, fmt.Errorf("the proxy serves the %s of %s from %s: they cannot be %s through the proxy",
			n.resource.Objects, group, n.resource.ServedFrom(translate.ToPrivate.Group(group)), pastTense(verb)))
	}
	return apierrors.NewForbidden(n.resource.GroupResource, name, fmt.Errorf("%s of group %s cannot be %s through the proxy",
		n.resource.Objects, group, pastTense(verb)))
}

func pastTense(verb string) string {
	switch verb {
	case "create":
		return "created"
	case "delete", "deletecollection":
		return "deleted"
	case "patch":
		return "patched"
	}
	return verb + "d"
}
