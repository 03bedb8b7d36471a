package translate

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Route is one kind at one version, as the generator found it upstream: its upstream and private
// GroupVersionResource, the names it is served under and its codecs. One Route exists per served version.
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
	// Object is the typed codec of the kind at this version; Paths the group-carrying JSON paths of the
	// same type, for partial bodies (patches).
	Object Kind
	Paths  *Node
	// List is the typed codec of the list kind (lists are streamed item by item on the hot path; List is
	// for tests, benchmarks and tools).
	List Kind
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
}

// NewTable indexes routes. It panics if two routes claim the same resource or kind: routes come from
// generated code, so that is a generator bug.
func NewTable(routes []Route) *Table {
	t := &Table{
		byUpstream: map[schema.GroupVersionResource]*Route{},
		byPrivate:  map[schema.GroupVersionResource]*Route{},
		byUpGVK:    map[schema.GroupVersionKind]*Route{},
		byPrivGVK:  map[schema.GroupVersionKind]*Route{},
	}
	for i := range routes {
		r := &routes[i]
		if _, dup := t.byUpstream[r.Upstream]; dup {
			panic("translate.NewTable: duplicate route " + r.Upstream.String())
		}
		t.routes = append(t.routes, r)
		t.byUpstream[r.Upstream] = r
		t.byPrivate[r.Private] = r
		t.byUpGVK[r.UpstreamGVK()] = r
		t.byPrivGVK[r.PrivateGVK()] = r
	}
	return t
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
