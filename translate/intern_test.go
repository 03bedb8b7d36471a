package translate_test

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

// nodes returns every distinct Node (by address) reachable from roots.
func nodes(roots ...*translate.Node) map[*translate.Node]bool {
	seen := map[*translate.Node]bool{}
	var walk func(*translate.Node)
	walk = func(n *translate.Node) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		for _, c := range n.Fields {
			walk(c)
		}
		walk(n.Items)
		walk(n.Values)
	}
	for _, r := range roots {
		walk(r)
	}
	return seen
}

func route(resource string, paths ...string) translate.Route {
	return translate.Route{
		Upstream: schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: resource},
		Private:  schema.GroupVersionResource{Group: "cluster.hypershift.openshift.io", Version: "v1beta2", Resource: resource},
		Kind:     resource,
		Paths:    translate.Paths(paths...),
	}
}

func TestNewTableSharesEqualSubtrees(t *testing.T) {
	specs := [][]string{
		{"apiVersion=apiVersion", "metadata=objectMeta", "spec.infrastructureRef.apiGroup=group"},
		{"apiVersion=apiVersion", "metadata=objectMeta", "spec.infrastructureRef.apiGroup=group", "spec.bootstrap.configRef.apiGroup=group"},
		{"apiVersion=apiVersion", "metadata=objectMeta", "spec.infrastructureRef.apiVersion=apiVersion"},
	}
	rs := []translate.Route{route("a", specs[0]...), route("b", specs[1]...), route("c", specs[2]...)}
	table := translate.NewTable(rs)
	got := table.Routes()

	// Each tree is still the tree its specs build.
	for i, r := range got {
		if want := translate.Paths(specs[i]...); !reflect.DeepEqual(r.Paths, want) {
			t.Errorf("route %s: the shared tree differs from the one its specs build", r.Kind)
		}
	}
	// Equal subtrees are one Node; different ones are not.
	a, b, c := got[0].Paths, got[1].Paths, got[2].Paths
	if a.Fields["metadata"] != b.Fields["metadata"] || a.Fields["metadata"] != c.Fields["metadata"] {
		t.Error("the routes' metadata trees are not shared")
	}
	if a.Fields["apiVersion"] != c.Fields["apiVersion"] {
		t.Error("the routes' apiVersion leaves are not shared")
	}
	if a.Fields["spec"].Fields["infrastructureRef"] != b.Fields["spec"].Fields["infrastructureRef"] {
		t.Error("the equal infrastructureRef trees of a and b are not shared")
	}
	if a.Fields["spec"] == b.Fields["spec"] {
		t.Error("a's and b's spec trees differ (b has bootstrap) but are one Node")
	}
	if a.Fields["spec"].Fields["infrastructureRef"] == c.Fields["spec"].Fields["infrastructureRef"] {
		t.Error("infrastructureRef.apiGroup (a group) and infrastructureRef.apiVersion (an apiVersion) are one Node")
	}

	// A second table of the same routes changes nothing.
	before := map[string]*translate.Node{}
	for _, r := range got {
		before[r.Kind] = r.Paths
	}
	for _, r := range translate.NewTable(rs).Routes() {
		if r.Paths != before[r.Kind] {
			t.Errorf("route %s: a second NewTable replaced its tree", r.Kind)
		}
	}
}

// The generated routes repeat whole subtrees; the table holds each once.
func TestNewTableSharesGeneratedSubtrees(t *testing.T) {
	copied := make([]translate.Route, len(routes.Routes))
	var separate []*translate.Node
	for i, r := range routes.Routes {
		copied[i] = r
		// Trees as the generated code builds them, one per route (the package's own may be shared by now).
		copied[i].Paths = deepCopy(r.Paths)
		separate = append(separate, copied[i].Paths)
	}
	before := len(nodes(separate...))
	var shared []*translate.Node
	for _, r := range translate.NewTable(copied).Routes() {
		shared = append(shared, r.Paths)
	}
	after := len(nodes(shared...))
	t.Logf("%d routes: %d Nodes in separate trees, %d shared", len(copied), before, after)
	if after*3 > before {
		t.Errorf("sharing left %d of %d Nodes; the generated trees repeat more than that", after, before)
	}
}

// deepCopy returns a deep copy of n with no Node shared.
func deepCopy(n *translate.Node) *translate.Node {
	if n == nil {
		return nil
	}
	c := *n
	if n.Fields != nil {
		c.Fields = make(map[string]*translate.Node, len(n.Fields))
		for k, v := range n.Fields {
			c.Fields[k] = deepCopy(v)
		}
	}
	c.Items = deepCopy(n.Items)
	c.Values = deepCopy(n.Values)
	return &c
}
