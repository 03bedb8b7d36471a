package apiservice

import (
	"strings"
	"testing"

	"github.com/openshift/hypershift-capi-proxy/proxy/groupnamed"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/routestesting"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// privateAPIService is the APIService kube-apiserver's autoregistration controller keeps for the private
// CRDs of cluster.hypershift.openshift.io at v1beta2, with a condition message naming the group.
const privateAPIService = `{"kind":"APIService","apiVersion":"apiregistration.k8s.io/v1","metadata":{"name":"v1beta2.cluster.hypershift.openshift.io",` +
	`"uid":"u","resourceVersion":"7","labels":{"kube-aggregator.kubernetes.io/automanaged":"true"},` +
	`"managedFields":[{"manager":"kube-apiserver","operation":"Update","apiVersion":"apiregistration.k8s.io/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:group":{}}}}]},` +
	`"spec":{"group":"cluster.hypershift.openshift.io","version":"v1beta2","groupPriorityMinimum":1000,"versionPriority":100},` +
	`"status":{"conditions":[{"type":"Available","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z","reason":"Local","message":"Local APIServices are always available"},` +
	`{"type":"Other","status":"False","reason":"X","message":"no /apis/cluster.hypershift.openshift.io/v1beta2 in cluster.hypershift.openshift.ioxyz"}]}}`

const upstreamView = `{"kind":"APIService","apiVersion":"apiregistration.k8s.io/v1","metadata":{"name":"v1beta2.cluster.x-k8s.io",` +
	`"uid":"u","resourceVersion":"7","labels":{"kube-aggregator.kubernetes.io/automanaged":"true"},` +
	`"managedFields":[{"manager":"kube-apiserver","operation":"Update","apiVersion":"apiregistration.k8s.io/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:group":{}}}}]},` +
	`"spec":{"group":"cluster.x-k8s.io","version":"v1beta2","groupPriorityMinimum":1000,"versionPriority":100},` +
	`"status":{"conditions":[{"type":"Available","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z","reason":"Local","message":"Local APIServices are always available"},` +
	`{"type":"Other","status":"False","reason":"X","message":"no /apis/cluster.x-k8s.io/v1beta2 in cluster.hypershift.openshift.ioxyz"}]}}`

func TestUpstream(t *testing.T) {
	n := New(routestesting.Table())
	for _, tc := range []struct{ name, in, want string }{
		{"a private APIService", privateAPIService, upstreamView},
		{"a PartialObjectMetadata", `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"v1beta1.cluster.hypershift.openshift.io"}}`,
			`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"v1beta1.cluster.x-k8s.io"}}`},
		{"a list item without status", `{"metadata":{"name":"v1beta2.infrastructure.cluster.hypershift.openshift.io"},"spec":{"group":"infrastructure.cluster.hypershift.openshift.io","version":"v1beta2"},"status":{}}`,
			`{"metadata":{"name":"v1beta2.infrastructure.cluster.x-k8s.io"},"spec":{"group":"infrastructure.cluster.x-k8s.io","version":"v1beta2"},"status":{}}`},
		{"conditions that are not a list", `{"metadata":{"name":"v1beta1.cluster.hypershift.openshift.io"},"status":{"conditions":null}}`,
			`{"metadata":{"name":"v1beta1.cluster.x-k8s.io"},"status":{"conditions":null}}`},
		{"the platform's own APIService of a routed group version is hidden",
			`{"kind":"APIService","metadata":{"name":"v1beta2.cluster.x-k8s.io"},"spec":{"group":"cluster.x-k8s.io","version":"v1beta2"}}`, ""},
		{"the platform's APIService of an unrouted version is hidden", `{"metadata":{"name":"v1alpha4.cluster.x-k8s.io"}}`, ""},
		{"a private group version without a route is hidden", `{"metadata":{"name":"v1beta1.infrastructure.cluster.hypershift.openshift.io"}}`, ""},
		{"another group's APIService is kept", `{"metadata":{"name":"v1.apps"},"spec":{"group":"apps","version":"v1"}}`,
			`{"metadata":{"name":"v1.apps"},"spec":{"group":"apps","version":"v1"}}`},
		{"the core group's APIService is kept", `{"metadata":{"name":"v1."},"spec":{"version":"v1"}}`, `{"metadata":{"name":"v1."},"spec":{"version":"v1"}}`},
		{"a Table as kubectl get apiservices asks",
			`{"kind":"Table","apiVersion":"meta.k8s.io/v1","columnDefinitions":[{"name":"Name","type":"string","format":"name"},{"name":"Service","type":"string","format":""},` +
				`{"name":"Available","type":"string","format":""},{"name":"Age","type":"string","format":""}],"rows":[` +
				`{"cells":["v1beta2.cluster.hypershift.openshift.io","Local","True","1d"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"v1beta2.cluster.hypershift.openshift.io"}}},` +
				`{"cells":["v1beta2.cluster.x-k8s.io","Local","True","2d"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"v1beta2.cluster.x-k8s.io"}}},` +
				`{"cells":["v1.apps","Local","True","3d"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"v1.apps"}}}]}`,
			`{"kind":"Table","apiVersion":"meta.k8s.io/v1","columnDefinitions":[{"name":"Name","type":"string","format":"name"},{"name":"Service","type":"string","format":""},` +
				`{"name":"Available","type":"string","format":""},{"name":"Age","type":"string","format":""}],"rows":[` +
				`{"cells":["v1beta2.cluster.x-k8s.io","Local","True","1d"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"v1beta2.cluster.x-k8s.io"}}},` +
				`{"cells":["v1.apps","Local","True","3d"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"v1.apps"}}}]}`},
		{"a Status", `{"kind":"Status","apiVersion":"v1","message":"apiservices.apiregistration.k8s.io \"v1beta2.cluster.hypershift.openshift.io\" not found","code":404}`,
			`{"kind":"Status","apiVersion":"v1","message":"apiservices.apiregistration.k8s.io \"v1beta2.cluster.x-k8s.io\" not found","code":404}`},
	} {
		if out, err := n.Upstream([]byte(tc.in)); err != nil || string(out) != tc.want {
			t.Errorf("%s: %v\n got %s\nwant %s", tc.name, err, out, tc.want)
		}
	}
}

// TestNew covers which group versions are mapped: the upstream versions a route serves.
func TestNew(t *testing.T) {
	routes := routestesting.Routes()
	for i := range routes {
		if routes[i].Upstream == routestesting.MachinesV1beta1 {
			// As CAPA's v1beta1 kinds: kept for stored objects, not served.
			routes[i].Unserved = true
		}
	}
	n := New(translate.NewTable(routes))
	for name, want := range map[string]groupnamed.Target{
		"v1beta2.cluster.x-k8s.io":                groupnamed.Mapped,
		"v1beta2.infrastructure.cluster.x-k8s.io": groupnamed.Mapped,
		"v1beta1.cluster.x-k8s.io":                groupnamed.Hidden,
		"v1beta1.cluster.hypershift.openshift.io": groupnamed.Private,
	} {
		if got, _ := n.Lookup(name); got != want {
			t.Errorf("Lookup(%q) = %v, want %v", name, got, want)
		}
	}
	if out, err := n.Upstream([]byte(`{"metadata":{"name":"v1beta1.cluster.hypershift.openshift.io"}}`)); err != nil || out != nil {
		t.Errorf("the private APIService of an unserved version: %s %v, want it hidden", out, err)
	}
}

// BenchmarkUpstream translates one object of a list of APIServices: a private one (renamed), and one of
// another group (passed on as it is), as a list or watch of apiservices does item by item.
func BenchmarkUpstream(b *testing.B) {
	n := New(routestesting.Table())
	for name, obj := range map[string]string{
		"private": privateAPIService,
		"other":   strings.ReplaceAll(privateAPIService, "cluster.hypershift.openshift.io", "apps.example.com"),
	} {
		b.Run(name, func(b *testing.B) {
			data := []byte(obj)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := n.Upstream(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
