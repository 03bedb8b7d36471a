package translate

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestNewTableRejectsDuplicates(t *testing.T) {
	route := func(upGroup, privGroup, resource, kind string) Route {
		return Route{
			Upstream: schema.GroupVersionResource{Group: upGroup, Version: "v1beta2", Resource: resource},
			Private:  schema.GroupVersionResource{Group: privGroup, Version: "v1beta2", Resource: resource},
			Kind:     kind,
		}
	}
	machine := route("cluster.x-k8s.io", "cluster.hypershift.openshift.io", "machines", "Machine")
	for _, tc := range []struct {
		name   string
		second Route
		want   string
	}{
		{"upstream resource", route("cluster.x-k8s.io", "other.hypershift.openshift.io", "machines", "Other"), "duplicate upstream resource"},
		{"private resource", route("other.x-k8s.io", "cluster.hypershift.openshift.io", "machines", "Other"), "duplicate private resource"},
		{"upstream kind", route("cluster.x-k8s.io", "other.hypershift.openshift.io", "others", "Machine"), "duplicate upstream kind"},
		{"private kind", route("other.x-k8s.io", "cluster.hypershift.openshift.io", "others", "Machine"), "duplicate private kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, tc.want) {
					t.Errorf("NewTable panicked with %q, want %q", msg, tc.want)
				}
			}()
			NewTable([]Route{machine, tc.second})
		})
	}

	other := route("other.x-k8s.io", "other.hypershift.openshift.io", "others", "Other")
	table := NewTable([]Route{machine, other})
	if r, ok := table.ByPrivateKind(other.PrivateGVK()); !ok || r.Kind != "Other" {
		t.Errorf("ByPrivateKind(%v) = %v, %v", other.PrivateGVK(), r, ok)
	}
}
