package model

import (
	"k8s.io/gengo/v2/types"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Model is everything the emitters need, for all mirrored packages.
type Model struct {
	// Packages in the order of upstream.Packages.
	Packages []*Package
	// Module is the Go module path of this repository; private packages live under Module/apis/private.
	Module string

	byPath  map[string]*Package
	carries map[*types.Type]bool
	aliased map[*types.Type]bool
	tables  Tables
}

// Tables are the hand-kept lists classification reads besides the Go types, each keyed
// "<import path>.<type name>" (NotGroupFields: "<import path>.<type name>.<Go field name>") with the
// reason the entry is safe.
type Tables struct {
	// OpaqueTypes are free-form JSON types that never carry a mapped group (upstream.OpaqueTypes).
	OpaqueTypes map[string]string
	// ForeignTypes are types of other APIs, passed through untouched (upstream.ForeignTypes).
	ForeignTypes map[string]string
	// NotGroupFields are apiVersion or apiGroup fields that never name a mapped group
	// (upstream.NotGroupFields).
	NotGroupFields map[string]string
	// RemovedReleases are the releases that stop serving deprecated packages, by import path
	// (upstream.RemovedReleases).
	RemovedReleases map[string]string
}

// UpstreamTables are the project's tables, from package apis/upstream.
var UpstreamTables = Tables{
	OpaqueTypes:     upstream.OpaqueTypes,
	ForeignTypes:    upstream.ForeignTypes,
	NotGroupFields:  upstream.NotGroupFields,
	RemovedReleases: upstream.RemovedReleases,
}

// Package is one mirrored upstream API package.
type Package struct {
	upstream.Package
	// Group and PrivateGroup are the upstream group (from +groupName) and its private twin.
	Group, PrivateGroup string
	// Version is the API version, the last element of the import path.
	Version string
	// Kinds are the root types (+kubebuilder:object:root=true with ObjectMeta), sorted by name. List kinds
	// are not in Kinds: each Kind names its list.
	Kinds []*Kind
	// Types are the named types of this package reachable from any kind of any package, sorted by name,
	// including kinds and lists.
	Types []*types.Type
	// Universe package, for doc comments.
	Source *types.Package
	// SetsAPIVersionGetter is true when the package has a function SetAPIVersionGetter(func(schema.GroupKind)
	// (string, error)): CAPI's v1beta1 conversions resolve the apiVersion of a reference they down-convert
	// (apiGroup and kind) through it.
	SetsAPIVersionGetter bool
	// RemovedRelease is the release of the package's project that stops serving its version
	// (Tables.RemovedReleases), or "" where none is known. Only a package whose kinds are all Deprecated
	// has one.
	RemovedRelease string
}

// PrivatePath is the import path of the private twin of p.
func (m *Model) PrivatePath(p *Package) string { return m.Module + "/apis/private/" + p.Dir }

// ConvertPath is the import path of the converters of p.
func (m *Model) ConvertPath(p *Package) string { return m.Module + "/zz_generated/convert/" + p.Dir }

// PackageOf returns the mirrored package a named type belongs to, or nil for a type outside the table
// (metav1, corev1, ...), which both twins share.
func (m *Model) PackageOf(t *types.Type) *Package { return m.byPath[t.Name.Package] }

// Kind is one root type with its list.
type Kind struct {
	Type, List *types.Type
	// Name is the kind ("Machine"); ListName its list kind ("MachineList").
	Name, ListName string
	// Resource is the plural resource, Singular the singular; from +kubebuilder:resource:path or the
	// lowercased plural of the kind as controller-gen derives it.
	Resource, Singular string
	Namespaced         bool
	ShortNames         []string
	Categories         []string
	Subresources       []string
	// Storage marks the version stored by the apiserver (+kubebuilder:storageversion).
	Storage bool
	// Unserved marks a version the CRD keeps for stored objects but no longer serves
	// (+kubebuilder:unservedversion; CAPA's v1beta1 kinds).
	Unserved bool
	// Deprecated marks a version upstream deprecates (+kubebuilder:deprecatedversion, with or without a
	// warning): its CRD version says deprecated, and kube-apiserver warns every client of it.
	Deprecated bool
	// Paths are the group-carrying JSON paths of the kind, in translate.Paths syntax.
	Paths []string
	// Conversion says how upstream converts this version into the kind's other versions, read from the
	// methods of its Go type (see Model.conversions): translate.NoConversion (one version, or several
	// whose Go types have no conversion methods; then their schemas must be equal, which the emitter
	// checks on the CRD, and the CRD converts with strategy None), translate.Hub (the Go type has
	// controller-runtime's conversion.Hub method Hub(); it must be the storage version) or translate.Spoke
	// (conversion.Convertible's ConvertTo and ConvertFrom).
	Conversion translate.Conversion
}
