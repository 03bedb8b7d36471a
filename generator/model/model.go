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
	// ConversionPackages are the candidate conversion packages (Tables.Conversions) that exist at the
	// pinned versions and were loaded, in the order of the table.
	ConversionPackages []ConversionPackage
	// APIVersionGetterSetters are the SetAPIVersionGetter functions of the mirrored API packages and of the
	// conversion packages, in the order of Packages, then ConversionPackages: CAPI's conversions turn a
	// v1beta2 reference (apiGroup, kind) into a v1beta1 one (apiVersion) by asking the getter installed
	// with them (see package proxy/convert).
	APIVersionGetterSetters []GetterSetter

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
	// Conversions are the candidate packages, per module, where upstream may keep the conversions of its
	// kinds outside the API types (upstream.ConversionPackages).
	Conversions []upstream.ConversionModule
	// RemovedReleases are the releases that stop serving deprecated packages, by import path
	// (upstream.RemovedReleases).
	RemovedReleases map[string]string
}

// UpstreamTables are the project's tables, from package apis/upstream.
var UpstreamTables = Tables{
	OpaqueTypes:     upstream.OpaqueTypes,
	ForeignTypes:    upstream.ForeignTypes,
	NotGroupFields:  upstream.NotGroupFields,
	Conversions:     upstream.ConversionPackages,
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
	// RemovedRelease is the release of the package's project that stops serving its version
	// (Tables.RemovedReleases), or "" where none is known. Only a package whose kinds are all Deprecated
	// has one.
	RemovedRelease string
}

// ConversionPackage is a loaded conversion package.
type ConversionPackage struct {
	// Path is its import path ("sigs.k8s.io/cluster-api/core/webhooks/conversion"), Dir the same relative
	// to its module ("core/webhooks/conversion").
	Path, Dir string
}

// GetterSetter is a function SetAPIVersionGetter of an upstream package, which installs the getter its
// conversions resolve the apiVersion of a down-converted reference with: func(func(context.Context,
// schema.GroupKind) (string, error)) (Context; CAPI v1.14's, in its conversion packages) or
// func(func(schema.GroupKind) (string, error)) (CAPI v1.13's, in its v1beta1 API packages).
type GetterSetter struct {
	// Package is the import path of the package holding the function.
	Package string
	// Context is true when the getter takes a context.Context first.
	Context bool
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
	// Conversion says how upstream converts this version into the kind's other versions (see
	// Model.conversions): translate.NoConversion (one version, or several that upstream has no
	// conversions for; then their schemas must be equal, which the emitter checks on the CRD, and the CRD
	// converts with strategy None), translate.Hub (the version the others convert through; the storage
	// version) or translate.Spoke (converts to and from the hub, by the methods ConvertTo and ConvertFrom
	// of its Go type, or by the functions ToHub and FromHub).
	Conversion translate.Conversion
	// ToHub and FromHub are, for a spoke that upstream converts with functions of a conversion package
	// (Tables.Conversions), those functions: func(context.Context, *Spoke, *Hub) error and
	// func(context.Context, *Hub, *Spoke) error. Both are zero for a spoke whose Go type converts itself
	// (controller-runtime's conversion.Convertible) and for every other version.
	ToHub, FromHub types.Name
}

// ConvertsByFunctions reports whether upstream converts the spoke k with the functions ToHub and FromHub
// rather than with methods of its Go type.
func (k *Kind) ConvertsByFunctions() bool { return k.ToHub.Name != "" }
