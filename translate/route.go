package translate

import (
	"context"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Route is one kind at one version, as the generator found it upstream: its upstream and private
// GroupVersionResource, the names it is served under and its codecs. One Route exists per version of
// upstream's CRD, served or not (Unserved).
type Route struct {
	// Upstream is the resource clients address, e.g. cluster.x-k8s.io/v1beta2, Resource=machines.
	Upstream schema.GroupVersionResource
	// Private is the resource the backend serves, e.g. cluster.hypershift.openshift.io/v1beta2, machines.
	Private schema.GroupVersionResource
	// Kind and ListKind are the same in both groups ("Machine", "MachineList").
	Kind, ListKind string
	// Singular is the singular resource name ("machine").
	Singular string
	// Namespaced is false for cluster-scoped kinds.
	Namespaced bool
	// Subresources lists the served subresources ("status", "scale").
	Subresources []string
	// ShortNames and Categories are upstream's (the private CRDs carry prefixed ones that cannot clash);
	// discovery through the proxy shows these.
	ShortNames, Categories []string
	// Storage is true for the hub (storage) version of the kind.
	Storage bool
	// Unserved is true for a version upstream's CRD keeps for stored objects but does not serve
	// (+kubebuilder:unservedversion: CAPA's v1beta1 kinds). kube-apiserver serving upstream's CRD answers
	// it 404 and lists it in no discovery document, so the proxy never serves it in process (package
	// proxy/adapt). Its codecs still convert objects stored at it.
	Unserved bool
	// Deprecated is true for a version upstream deprecates (+kubebuilder:deprecatedversion): its CRD
	// version says deprecated: true, and kube-apiserver warns every client of it. The proxy counts the
	// requests of deprecated versions (package proxy/metrics, requested_deprecated_apis_total).
	Deprecated bool
	// RemovedRelease is the release of the project owning a Deprecated version that stops serving it
	// ("v1.16" for CAPI's v1beta1), from apis/upstream.RemovedReleases; "" where none is known.
	RemovedRelease string
	// Conversion says how this version converts into the other versions of its kind, as upstream converts
	// it: the generator reads it from wherever upstream keeps its conversions, the upstream Go types'
	// methods (controller-runtime's conversion.Hub and conversion.Convertible) or the functions of a
	// conversion package (apis/upstream.ConversionPackages).
	Conversion Conversion
	// ToHub, on a Spoke, converts spoke, an upstream object of this version (a pointer made by
	// Object.New), into hub, an upstream object of the kind's hub version (a pointer made by the hub
	// route's Object.New), with upstream's own conversion, whichever way the generator found it: the
	// ConvertTo method of the spoke's Go type (ConvertToMethod) or the function upstream registers
	// with its conversion webhook (ConvertFunc; CAPI v1.14's ConvertMachineV1Beta1ToHub in
	// sigs.k8s.io/cluster-api/core/webhooks/conversion). ctx reaches a function (CAPI's apiVersion getter
	// reads it); a method takes none. Its error is upstream's, unwrapped. nil on every other route.
	ToHub func(ctx context.Context, spoke, hub any) error
	// FromHub, on a Spoke, converts hub into spoke, the other way, with the spoke's ConvertFrom method
	// (ConvertFromMethod) or upstream's function (ConvertFunc). nil on every other route.
	FromHub func(ctx context.Context, hub, spoke any) error
	// ViaHubError, on a Spoke, wraps the error of ToHub or FromHub where the call is one leg of a
	// conversion between two spokes, as controller-runtime's conversion webhook wraps it on the path
	// upstream's webhook takes for the kind: MethodsViaHubError where the Go types convert themselves,
	// ConverterViaHubError where upstream registers a hub-and-spoke converter. nil on every other route.
	ViaHubError ViaHubError
	// ContractLabels are CAPI's contract labels of the kind's private CRD ("cluster.x-k8s.io/v1beta2":
	// "v1beta2"; the served versions implementing each contract, joined by "_"), the same on every version
	// of the kind; nil for kinds CAPI does not reference by contract. The apiVersion getter of CAPI's
	// conversions reads them (see package proxy/convert).
	ContractLabels map[string]string
	// Object is the typed codec of the kind at this version; Paths the group-carrying JSON paths of the
	// same type, along which every body of the kind is rewritten (objects, list items, watch events,
	// patches). The generated table (zz_generated/routes) sets Object only
	// where the kind converts by hub and spoke (the conversions run it); for NoConversion kinds it is nil
	// unless zz_generated/routes/codecs is imported (tests), so that the proxy does not link their types.
	Object Kind
	Paths  *Node
	// List is the typed codec of the list kind (lists are streamed item by item on the hot path; List is
	// for tests, benchmarks and tools); nil where Object is.
	List Kind
}

// Conversion says how one version of a kind converts into the kind's other versions.
type Conversion int

const (
	// NoConversion: the kind has no other version, or all its versions have the same schema, so that
	// converting changes apiVersion only (the CRD's conversion strategy None, as upstream's CRD has it:
	// CAPZ's AzureASOManaged* v1alpha1 and v1beta1, Agent's v1alpha1 and v1beta1).
	NoConversion Conversion = iota
	// Hub is the version every other version converts through; it is the storage version.
	Hub
	// Spoke converts to and from the hub with upstream's conversions (Route.ToHub and Route.FromHub),
	// which keep what the spoke cannot hold in the annotation cluster.x-k8s.io/conversion-data. The kind's
	// CRD converts with a webhook.
	Spoke
)

var conversionNames = [...]string{"NoConversion", "Hub", "Spoke"}

func (c Conversion) String() string {
	if int(c) < len(conversionNames) {
		return conversionNames[c]
	}
	return "Conversion(" + strconv.Itoa(int(c)) + ")"
}

// UpstreamGVK returns the upstream GroupVersionKind of the route.
func (r *Route) UpstreamGVK() schema.GroupVersionKind {
	return r.Upstream.GroupVersion().WithKind(r.Kind)
}

// PrivateGVK returns the private GroupVersionKind of the route.
func (r *Route) PrivateGVK() schema.GroupVersionKind {
	return r.Private.GroupVersion().WithKind(r.Kind)
}

// HasSubresource reports whether the route serves the subresource (e.g. "status").
func (r *Route) HasSubresource(name string) bool {
	for _, s := range r.Subresources {
		if s == name {
			return true
		}
	}
	return false
}

// Table indexes the generated routes by upstream and private GroupVersionResource and GroupVersionKind.
type Table struct {
	routes     []*Route
	byUpstream map[schema.GroupVersionResource]*Route
	byPrivate  map[schema.GroupVersionResource]*Route
	byUpGVK    map[schema.GroupVersionKind]*Route
	byPrivGVK  map[schema.GroupVersionKind]*Route
	byUpGK     map[schema.GroupKind][]*Route
}

// NewTable indexes routes. It panics if two routes share an upstream GroupVersionResource, a private
// GroupVersionResource, an upstream GroupVersionKind or a private GroupVersionKind: routes come from
// generated code, so that is a generator bug, and a lookup by any of them must name one route.
//
// The table holds the routes themselves (pointers into routes), and replaces each route's Paths with an
// equal tree whose equal subtrees are shared across routes (see interner): the generated routes repeat
// them, and the table lives as long as the process.
func NewTable(routes []Route) *Table {
	t := &Table{
		byUpstream: map[schema.GroupVersionResource]*Route{},
		byPrivate:  map[schema.GroupVersionResource]*Route{},
		byUpGVK:    map[schema.GroupVersionKind]*Route{},
		byPrivGVK:  map[schema.GroupVersionKind]*Route{},
		byUpGK:     map[schema.GroupKind][]*Route{},
	}
	in := newInterner()
	for i := range routes {
		r := &routes[i]
		if shared := in.intern(r.Paths); shared != r.Paths {
			r.Paths = shared
		}
		index(t.byUpstream, r.Upstream, r, "upstream resource")
		index(t.byPrivate, r.Private, r, "private resource")
		index(t.byUpGVK, r.UpstreamGVK(), r, "upstream kind")
		index(t.byPrivGVK, r.PrivateGVK(), r, "private kind")
		t.routes = append(t.routes, r)
		gk := r.UpstreamGVK().GroupKind()
		t.byUpGK[gk] = append(t.byUpGK[gk], r)
	}
	return t
}

// index adds r to m under key, and panics if another route holds key.
func index[K comparable](m map[K]*Route, key K, r *Route, what string) {
	if other, dup := m[key]; dup {
		panic(fmt.Sprintf("translate.NewTable: duplicate %s %v: routes %s and %s", what, key, other.Upstream, r.Upstream))
	}
	m[key] = r
}

// Routes returns every route, in generated order (by group, kind, version).
func (t *Table) Routes() []*Route { return t.routes }

// ByUpstream returns the route of an upstream resource.
func (t *Table) ByUpstream(gvr schema.GroupVersionResource) (*Route, bool) {
	r, ok := t.byUpstream[gvr]
	return r, ok
}

// ByPrivate returns the route of a private resource.
func (t *Table) ByPrivate(gvr schema.GroupVersionResource) (*Route, bool) {
	r, ok := t.byPrivate[gvr]
	return r, ok
}

// ByUpstreamKind returns the route of an upstream kind.
func (t *Table) ByUpstreamKind(gvk schema.GroupVersionKind) (*Route, bool) {
	r, ok := t.byUpGVK[gvk]
	return r, ok
}

// ByPrivateKind returns the route of a private kind (used to translate objects the backend returns, e.g.
// watch events and list items, whose kind names their type).
func (t *Table) ByPrivateKind(gvk schema.GroupVersionKind) (*Route, bool) {
	r, ok := t.byPrivGVK[gvk]
	return r, ok
}

// Versions returns the routes of every version of an upstream kind, in generated order, or nil for a kind
// without routes.
func (t *Table) Versions(gk schema.GroupKind) []*Route { return t.byUpGK[gk] }
