package body_test

import (
	"encoding/json"
	"testing"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

// The fuzz targets run the generated converters (each route's typed codec) and the path-directed
// rewrites on arbitrary bytes: they must fail cleanly, never panic, and produce JSON when they succeed.

var (
	table      = translate.NewTable(routes.Routes)
	translator = body.New(table)
)

const (
	privateMachine  = `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m","ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineSet","name":"ms","uid":"u"}],"annotations":{"cluster.x-k8s.io/cloned-from-groupkind":"AWSMachineTemplate.infrastructure.cluster.hypershift.openshift.io"}},"spec":{"clusterName":"c","infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"AWSMachine","name":"a"}}}`
	upstreamCluster = `{"apiVersion":"cluster.x-k8s.io/v1beta1","kind":"Cluster","metadata":{"name":"c"},"spec":{"infrastructureRef":{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta1","kind":"AWSCluster","name":"c"},"topology":{"class":"cc","version":"v1.30.0","variables":[{"name":"v","value":{"apiVersion":"cluster.x-k8s.io/v1beta1"}}]}}}`
)

func route(i uint) *translate.Route {
	rs := table.Routes()
	return rs[int(i%uint(len(rs)))]
}

// FuzzUpstream translates what the backend sends: any object, by its own apiVersion and kind.
func FuzzUpstream(f *testing.F) {
	for _, seed := range []string{
		privateMachine,
		`{"kind":"Status","apiVersion":"v1","message":"machines.cluster.hypershift.openshift.io \"m\" not found","details":{"group":"cluster.hypershift.openshift.io"}}`,
		`{"apiVersion":"meta.k8s.io/v1","kind":"Table","rows":[{"object":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","metadata":{}}}]}`,
		`{"apiVersion":"v1","kind":"Secret","metadata":{"ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta1"}]}}`,
		`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","spec":"cluster.hypershift.openshift.io"}`,
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","rules":[{"apiGroups":["cluster.hypershift.openshift.io","apiextensions.k8s.io"],"resources":["*"],"resourceNames":["machines.cluster.hypershift.openshift.io"]}]}`,
		`{"apiVersion":"v1","kind":"ResourceQuota","spec":{"hard":{"count/machines.cluster.hypershift.openshift.io":"1"}},"status":{"used":{"count/machines.cluster.hypershift.openshift.io":"0"}}}`,
		`{"apiVersion":1}`, `[]`, `null`, `cluster.hypershift.openshift.io`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := translator.Upstream(data)
		if err == nil && !json.Valid(out) && json.Valid(data) {
			t.Errorf("Upstream(%q) = %q: invalid JSON", data, out)
		}
	})
}

// FuzzPrivate translates the body of a create or update of route i.
func FuzzPrivate(f *testing.F) {
	for i, r := range table.Routes() {
		f.Add(uint(i), []byte(`{"apiVersion":"`+r.Upstream.GroupVersion().String()+`","kind":"`+r.Kind+`","metadata":{"name":"x"},"spec":{}}`))
	}
	f.Add(uint(0), []byte(upstreamCluster))
	f.Add(uint(0), []byte(`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","spec":{"infrastructureRef":[]}}`))
	f.Add(uint(0), []byte(`{"metadata":{"name":1}}`))
	f.Add(uint(0), []byte(``))
	f.Fuzz(func(t *testing.T, i uint, data []byte) {
		out, _, err := translator.Private(route(i), data)
		if err == nil && !json.Valid(out) {
			t.Errorf("Private(%s, %q) = %q: invalid JSON", route(i).Upstream, data, out)
		}
	})
}

// FuzzPatch translates a patch body of route i, in each patch type.
func FuzzPatch(f *testing.F) {
	types := []string{body.MergePatch, body.StrategicMergePatch, body.JSONPatch, body.ApplyPatchYAML}
	f.Add(uint(0), uint8(0), []byte(`{"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io"}}}`))
	f.Add(uint(0), uint8(2), []byte(`[{"op":"replace","path":"/spec/infrastructureRef/apiGroup","value":"infrastructure.cluster.x-k8s.io"},{"op":"add","path":"/metadata/ownerReferences/-","value":{"apiVersion":"cluster.x-k8s.io/v1beta2"}}]`))
	f.Add(uint(0), uint8(2), []byte(`[{"op":"add","path":"/spec/bootstrap/configRef","value":{"apiVersion":"bootstrap.cluster.x-k8s.io/v1beta1","kind":"KubeadmConfig"}}, 1, {"value":"cluster.x-k8s.io"}]`))
	f.Add(uint(0), uint8(3), []byte("apiVersion: cluster.x-k8s.io/v1beta2\nkind: Machine\nspec:\n  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io}\n"))
	f.Add(uint(0), uint8(3), []byte("a: [cluster.x-k8s.io\n"))
	f.Fuzz(func(t *testing.T, i uint, typ uint8, data []byte) {
		r := route(i)
		mediaType := types[int(typ)%len(types)]
		out, err := body.Patch(translate.ToPrivate, r.Paths, mediaType, data)
		if err == nil && mediaType != body.ApplyPatchYAML && json.Valid(data) && !json.Valid(out) {
			t.Errorf("Patch(%s, %s, %q) = %q: invalid JSON", r.Upstream, mediaType, data, out)
		}
	})
}
