package jsonpatch

import (
	"encoding/json"
	"strings"
	"testing"

	evanphx "gopkg.in/evanphx/json-patch.v4"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/backendtesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/routestesting"
)

// TestResolve: a copy or move between fields that name groups differently is resolved against the
// object as the backend holds it: the value lands translated from its from's terms to its path's, one
// operation for each of the client's, guarded by the object's resourceVersion; where the apiserver would
// fail, the patch fails there too.
func TestResolve(t *testing.T) {
	route, _ := routestesting.Table().ByUpstream(routestesting.MachinesV1beta2)
	const current = `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m","resourceVersion":"7"},` +
		`"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"X","name":"x"},"note":"infrastructure.cluster.x-k8s.io"}}`
	// owned is current with owners.
	const owned = `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m","resourceVersion":"7",` +
		`"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"c","uid":"1"},{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineSet","name":"ms","uid":"2"}]},` +
		`"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"X","name":"x"},"note":"infrastructure.cluster.x-k8s.io"}}`
	for _, tc := range []struct {
		name, patch, current string
		// want is the object after the resolved patch; empty: the patch must fail.
		want string
		// ops is the number of operations the resolved patch must have.
		ops int
	}{
		{"copy a reference into a field of no group", `[{"op":"copy","from":"/spec/infrastructureRef","path":"/spec/copy","x-unknown":1}]`, current,
			`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m","resourceVersion":"7"},` +
				`"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"X","name":"x"},"note":"infrastructure.cluster.x-k8s.io",` +
				`"copy":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"X","name":"x"}}}`, 2},
		{"copy text into a group field", `[{"op":"add","path":"/spec/infrastructureRef/kind","value":"Y"},{"op":"copy","from":"/spec/note","path":"/spec/infrastructureRef/apiGroup"}]`, current,
			`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m","resourceVersion":"7"},` +
				`"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"Y","name":"x"},"note":"infrastructure.cluster.x-k8s.io"}}`, 3},
		{"move a group into an annotation", `[{"op":"add","path":"/metadata/annotations","value":{}},{"op":"move","from":"/spec/infrastructureRef/apiGroup","path":"/metadata/annotations/g"}]`, current,
			`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m","resourceVersion":"7","annotations":{"g":"infrastructure.cluster.x-k8s.io"}},` +
				`"spec":{"infrastructureRef":{"kind":"X","name":"x"},"note":"infrastructure.cluster.x-k8s.io"}}`, 3},
		{"move within spec", `[{"op":"move","from":"/spec/infrastructureRef","path":"/spec/moved"}]`, current,
			`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m","resourceVersion":"7"},` +
				`"spec":{"moved":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"X","name":"x"},"note":"infrastructure.cluster.x-k8s.io"}}`, 2},
		{"copy from a missing member copies null, as the library does", `[{"op":"copy","from":"/spec/missing","path":"/spec/infrastructureRef"}]`, current,
			`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m","resourceVersion":"7"},` +
				`"spec":{"infrastructureRef":null,"note":"infrastructure.cluster.x-k8s.io"}}`, 2},
		{"copy from nothing fails", `[{"op":"copy","from":"/spec/missing/x","path":"/spec/infrastructureRef"}]`, current, "", 1},
		{"move under itself fails", `[{"op":"move","from":"/spec","path":"/spec/differential"}]`, current, "", 1},
		{"an earlier failure fails", `[{"op":"remove","path":"/spec/missing"},{"op":"copy","from":"/spec","path":"/spec/differential"}]`, current, "", 2},
		{"no object fails", `[{"op":"copy","from":"/spec","path":"/spec/differential"}]`, "", "", 1},
		{"copy from a negative index into an annotation", `[{"op":"add","path":"/metadata/annotations","value":{}},{"op":"copy","from":"/metadata/ownerReferences/-1/apiVersion","path":"/metadata/annotations/a"}]`, owned,
			`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m","resourceVersion":"7","annotations":{"a":"cluster.x-k8s.io/v1beta2"},` +
				`"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"c","uid":"1"},{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineSet","name":"ms","uid":"2"}]},` +
				`"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"X","name":"x"},"note":"infrastructure.cluster.x-k8s.io"}}`, 3},
		{"an apiVersion written unserved is copied as the client named it", `[{"op":"add","path":"/metadata/annotations","value":{}},` +
			`{"op":"replace","path":"/apiVersion","value":"cluster.hypershift.openshift.io/v1beta2"},{"op":"copy","from":"/apiVersion","path":"/metadata/annotations/a"},` +
			`{"op":"replace","path":"/apiVersion","value":"cluster.x-k8s.io/v1beta2"}]`, owned,
			`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m","resourceVersion":"7","annotations":{"a":"cluster.hypershift.openshift.io/v1beta2"},` +
				`"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"c","uid":"1"},{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineSet","name":"ms","uid":"2"}]},` +
				`"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"X","name":"x"},"note":"infrastructure.cluster.x-k8s.io"}}`, 5},
		{"a private group copied to the apiVersion is unserved", `[{"op":"add","path":"/metadata/annotations","value":{"a":"cluster.hypershift.openshift.io/v1beta2"}},` +
			`{"op":"copy","from":"/metadata/annotations/a","path":"/apiVersion"}]`, owned,
			`{"apiVersion":"cluster.hypershift.openshift.io.invalid/v1beta2","kind":"Machine","metadata":{"name":"m","resourceVersion":"7","annotations":{"a":"cluster.hypershift.openshift.io/v1beta2"},` +
				`"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"c","uid":"1"},{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineSet","name":"ms","uid":"2"}]},` +
				`"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"X","name":"x"},"note":"infrastructure.cluster.x-k8s.io"}}`, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cur []byte
			if tc.current != "" {
				cur = []byte(tc.current)
			}
			out, err := Resolve([]byte(tc.patch), route.Paths, cur)
			if err != nil {
				t.Fatal(err)
			}
			var ops []map[string]any
			if err := json.Unmarshal(out, &ops); err != nil {
				t.Fatal(err)
			}
			if len(ops) != tc.ops {
				t.Errorf("%d operations, want %d: %s", len(ops), tc.ops, out)
			}
			if strings.Contains(tc.patch, "x-unknown") && !strings.Contains(string(out), `"x-unknown":1`) {
				t.Errorf("the operation lost its other members: %s", out)
			}
			p, err := evanphx.DecodePatch(out)
			if err != nil {
				t.Fatal(err)
			}
			target := current
			if tc.current != "" {
				target = tc.current
			}
			got, err := p.Apply([]byte(target))
			if tc.want == "" {
				if err == nil {
					t.Errorf("the resolved patch %s applies: %s", out, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("the resolved patch %s: %v", out, err)
			}
			backendtesting.EqualJSON(t, got, tc.want)
			// Applied to the object changed since, it fails. (A replace of the whole object sets the
			// resourceVersion it read, which the apiserver answers with 409 Conflict.)
			if strings.Contains(string(out), `"path":""`) {
				return
			}
			if _, err := p.Apply([]byte(strings.Replace(target, `"resourceVersion":"7"`, `"resourceVersion":"8"`, 1))); err == nil {
				t.Errorf("the resolved patch %s applies to a newer object", out)
			}
		})
	}
}
