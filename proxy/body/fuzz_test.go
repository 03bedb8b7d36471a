package body_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "sigs.k8s.io/json"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/groupnames"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"

	// Every route with its typed codecs (Object, List), also of the kinds that convert by apiVersion alone.
	_ "github.com/openshift/hypershift-capi-proxy/zz_generated/routes/codecs"
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
		// As a list item translated in one pass, followed by more of the list: what Scan delimits,
		// translated as AppendUpstreamOfValid translates it, or not in one pass.
		for _, gr := range []schema.GroupResource{{Group: "cluster.hypershift.openshift.io", Resource: "machines"}, {Group: "rbac.authorization.k8s.io", Resource: "roles"}} {
			got, n, err := translator.AppendUpstreamOfItem(gr)([]byte("[x,"), append(data[:len(data):len(data)], ",{}]"...))
			if err != nil {
				continue
			}
			end, scanErr := translate.Scan(data, 0)
			if scanErr != nil || n != end {
				t.Fatalf("AppendUpstreamOfItem(%q) = %d; Scan: %d, %v", data, n, end, scanErr)
			}
			want, err := translator.AppendUpstreamOfValid(gr)([]byte("[x,"), data[:end])
			if err != nil || string(got) != string(want) {
				t.Fatalf("AppendUpstreamOfItem(%q) = %q; AppendUpstreamOfValid: %q, %v", data, got, want, err)
			}
		}
	})
}

// FuzzPrivate translates the body of a create or update of route i with the path-directed rewrite the
// proxy uses (body.ObjectToPrivate), and holds it to the typed converter: where the typed converter decodes
// the body, the rewrite's output decoded into the private Go type is the typed converter's output (every
// group value agrees), and the rewrite's output translated back along the same paths is the body itself,
// byte for byte (every other byte is kept).
func FuzzPrivate(f *testing.F) {
	for i, r := range table.Routes() {
		f.Add(uint(i), []byte(`{"apiVersion":"`+r.Upstream.GroupVersion().String()+`","kind":"`+r.Kind+`","metadata":{"name":"x"},"spec":{}}`))
	}
	f.Add(uint(0), []byte(upstreamCluster))
	f.Add(uint(0), []byte(`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","spec":{"infrastructureRef":[]}}`))
	f.Add(uint(0), []byte(`{"metadata":{"name":1}}`))
	f.Add(uint(0), []byte(``))
	f.Fuzz(func(t *testing.T, i uint, data []byte) {
		r := route(i)
		out, _, err := body.ObjectToPrivate(body.JSON, data, func(_, _ string) (*translate.Node, error) { return r.Paths, nil })
		if err != nil {
			t.Fatalf("ObjectToPrivate(%s, %q): %v", r.Upstream, data, err)
		}
		typed, _, err := r.Object.ToPrivate(data)
		if err != nil || !json.Valid(data) {
			return // not an object of this kind: the backend answers
		}
		_, private := r.Object.New()
		if err := kjson.UnmarshalCaseSensitivePreserveInts(out, private); err != nil {
			t.Fatalf("the rewrite of %q is not a %s: %v", data, r.Kind, err)
		}
		normalized, err := json.Marshal(private)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(normalized, typed) {
			t.Errorf("route %s, body %q:\nrewrite %s\n  typed %s", r.Upstream, data, normalized, typed)
		}
		if groupnames.Mentions(translate.ToUpstream, data) || bytes.IndexByte(data, '\\') >= 0 {
			return // translating back would change what the body said itself, or its escapes
		}
		back, err := translate.ToUpstream.Rewrite(r.Paths, out)
		if err != nil || !bytes.Equal(back, data) {
			t.Errorf("route %s: %q rewritten to %q and back to %q (%v)", r.Upstream, data, out, back, err)
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
