package body

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/backendtesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/jsonx"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/routestesting"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

func TestUpstream(t *testing.T) {
	tr := New(routestesting.Table())
	for _, tc := range []struct{ name, in, want string }{
		{"routed kind",
			`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m",` +
				`"ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineSet","name":"ms","uid":"u"}],` +
				`"labels":{"cluster.x-k8s.io/cluster-name":"c"},"finalizers":["machine.cluster.x-k8s.io"]},` +
				`"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"AWSMachine","name":"a"}}}`,
			`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"m",` +
				`"ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineSet","name":"ms","uid":"u"}],` +
				`"labels":{"cluster.x-k8s.io/cluster-name":"c"},"finalizers":["machine.cluster.x-k8s.io"]},` +
				`"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"AWSMachine","name":"a"}}}`},
		{"routed kind with fields its type lacks keeps them",
			`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m"},"newField":{"x":1},` +
				`"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io"}}}`,
			`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"m"},"newField":{"x":1},` +
				`"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io"}}}`},
		{"secret owned by a cluster",
			`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Cluster","name":"c","uid":"u"}],` +
				`"managedFields":[{"manager":"m","apiVersion":"v1"}]},"data":{"k":"Y2x1c3Rlci5oeXBlcnNoaWZ0Lm9wZW5zaGlmdC5pbw=="},"stringData":{"x":"cluster.hypershift.openshift.io"}}`,
			`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","name":"c","uid":"u"}],` +
				`"managedFields":[{"manager":"m","apiVersion":"v1"}]},"data":{"k":"Y2x1c3Rlci5oeXBlcnNoaWZ0Lm9wZW5zaGlmdC5pbw=="},"stringData":{"x":"cluster.hypershift.openshift.io"}}`},
		{"partial object metadata",
			`{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":{"name":"m","managedFields":[{"manager":"capi","apiVersion":"cluster.hypershift.openshift.io/v1beta2"}]}}`,
			`{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":{"name":"m","managedFields":[{"manager":"capi","apiVersion":"cluster.x-k8s.io/v1beta2"}]}}`},
		{"table",
			`{"apiVersion":"meta.k8s.io/v1","kind":"Table","columnDefinitions":[],"rows":[{"cells":["m"],"object":{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata",` +
				`"metadata":{"name":"m","ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineSet","name":"ms","uid":"u"}]}}}]}`,
			`{"apiVersion":"meta.k8s.io/v1","kind":"Table","columnDefinitions":[],"rows":[{"cells":["m"],"object":{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata",` +
				`"metadata":{"name":"m","ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineSet","name":"ms","uid":"u"}]}}}]}`},
		{"status",
			`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"machines.cluster.hypershift.openshift.io \"m\" not found","details":{"group":"cluster.hypershift.openshift.io","kind":"machines"},"code":404}`,
			`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"machines.cluster.x-k8s.io \"m\" not found","details":{"group":"cluster.x-k8s.io","kind":"machines"},"code":404}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tr.Upstream([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			backendtesting.EqualJSON(t, out, tc.want)
		})
	}
}

func TestUpstreamUntouched(t *testing.T) {
	tr := New(routestesting.Table())
	// Nothing names a private group: the bytes are returned as they are, even if not valid JSON.
	for _, in := range []string{
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},  "data":{}}`,
		`not json at all`,
	} {
		out, err := tr.Upstream([]byte(in))
		if err != nil || string(out) != in {
			t.Errorf("Upstream(%s) = %s, %v; want the input", in, out, err)
		}
	}
}

func TestUpstreamMalformed(t *testing.T) {
	tr := New(routestesting.Table())
	for _, in := range []string{
		`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine",`,
		`["cluster.hypershift.openshift.io"]`,
		`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine"} trailing`,
	} {
		if out, err := tr.Upstream([]byte(in)); err == nil {
			t.Errorf("Upstream(%s) = %s; want an error", in, out)
		}
	}
}

// TestTypeMeta: the body's own apiVersion and kind are read as the apiserver reads them.
func TestTypeMeta(t *testing.T) {
	for _, tc := range []struct{ in, apiVersion, kind string }{
		{`{"apiVersion":"cluster.x-k8s.io/v1beta1","kind":"Machine"}`, "cluster.x-k8s.io/v1beta1", "Machine"},
		{`{"kind":"Machine","apiVersion":"cluster.x\u002dk8s.io/v1beta2"}`, "cluster.x-k8s.io/v1beta2", "Machine"},
		{`{"apiVersion":"cluster.x-k8s.io/v1beta1","kind":"Machine","apiVersion":"cluster.x-k8s.io/v1beta2"}`, "cluster.x-k8s.io/v1beta2", "Machine"},
		{`{"APIVersion":"cluster.x-k8s.io/v1beta1","Kind":"Machine"}`, "", ""},
		{`{"apiVersion":1}`, "", ""}, {`[]`, "", ""}, {``, "", ""}, {`{"apiVersion":`, "", ""},
	} {
		if apiVersion, kind := typeMeta([]byte(tc.in)); apiVersion != tc.apiVersion || kind != tc.kind {
			t.Errorf("typeMeta(%s) = %q, %q; want %q, %q", tc.in, apiVersion, kind, tc.apiVersion, tc.kind)
		}
	}
}

func TestUnknownFields(t *testing.T) {
	unknown := []error{errors.New(`unknown field "spec.foo"`), errors.New(`duplicate field "spec.bar"`)}

	_, err := UnknownFields("Strict", unknown)
	if !apierrors.IsBadRequest(err) {
		t.Fatalf("Strict: err = %v, want BadRequest", err)
	}
	if want := `strict decoding error: unknown field "spec.foo", duplicate field "spec.bar"`; err.Error() != want {
		t.Errorf("Strict: %q, want %q", err.Error(), want)
	}
	for _, directive := range []string{"Warn", "", "warn?"} {
		warnings, err := UnknownFields(directive, unknown)
		if err != nil || !reflect.DeepEqual(warnings, []string{`unknown field "spec.foo"`, `duplicate field "spec.bar"`}) {
			t.Errorf("%q: %v, %v", directive, warnings, err)
		}
	}
	if warnings, err := UnknownFields("Ignore", unknown); warnings != nil || err != nil {
		t.Errorf("Ignore: %v, %v", warnings, err)
	}
	if warnings, err := UnknownFields("Strict", nil); warnings != nil || err != nil {
		t.Errorf("Strict without unknown fields: %v, %v", warnings, err)
	}
}

func TestPatch(t *testing.T) {
	route, _ := routestesting.Table().ByUpstream(routestesting.MachinesV1beta2)
	v1beta1, _ := routestesting.Table().ByUpstream(routestesting.MachinesV1beta1)
	for _, tc := range []struct {
		name, mediaType string
		n               *translate.Node
		in, want        string
	}{
		{"merge patch", MergePatch, route.Paths,
			`{"metadata":{"labels":{"cluster.x-k8s.io/cluster-name":"c"},"ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineSet","name":"ms","uid":"u"}]},` +
				`"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","name":"a"},"replicas":1.50}}`,
			`{"metadata":{"labels":{"cluster.x-k8s.io/cluster-name":"c"},"ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineSet","name":"ms","uid":"u"}]},` +
				`"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","name":"a"},"replicas":1.50}}`},
		{"merge patch that deletes", MergePatch, route.Paths,
			`{"spec":{"infrastructureRef":null},"metadata":{"annotations":{"cluster.x-k8s.io/paused":null}}}`,
			`{"spec":{"infrastructureRef":null},"metadata":{"annotations":{"cluster.x-k8s.io/paused":null}}}`},
		{"json patch", JSONPatch, route.Paths,
			`[{"op":"replace","path":"/spec/infrastructureRef","value":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"AWSMachine","name":"a"}},` +
				`{"op":"test","path":"/spec/infrastructureRef/apiGroup","value":"infrastructure.cluster.x-k8s.io"},` +
				`{"op":"add","path":"/metadata/ownerReferences/-","value":{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineSet","name":"ms","uid":"u"}},` +
				`{"op":"add","path":"/metadata/labels/cluster.x-k8s.io~1cluster-name","value":"cluster.x-k8s.io"},` +
				`{"op":"copy","from":"/spec/infrastructureRef","path":"/spec/bootstrap/configRef"},` +
				`{"op":"remove","path":"/spec/bootstrap"}]`,
			`[{"op":"replace","path":"/spec/infrastructureRef","value":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"AWSMachine","name":"a"}},` +
				`{"op":"test","path":"/spec/infrastructureRef/apiGroup","value":"infrastructure.cluster.hypershift.openshift.io"},` +
				`{"op":"add","path":"/metadata/ownerReferences/-","value":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineSet","name":"ms","uid":"u"}},` +
				`{"op":"add","path":"/metadata/labels/cluster.x-k8s.io~1cluster-name","value":"cluster.x-k8s.io"},` +
				`{"op":"copy","from":"/spec/infrastructureRef","path":"/spec/bootstrap/configRef"},` +
				`{"op":"remove","path":"/spec/bootstrap"}]`},
		{"json patch of the whole document", JSONPatch, v1beta1.Paths,
			`[{"op":"replace","path":"","value":{"apiVersion":"cluster.x-k8s.io/v1beta1","kind":"Machine","spec":{"infrastructureRef":{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta1"}}}}]`,
			`[{"op":"replace","path":"","value":{"apiVersion":"cluster.hypershift.openshift.io/v1beta1","kind":"Machine","spec":{"infrastructureRef":{"apiVersion":"infrastructure.cluster.hypershift.openshift.io/v1beta1"}}}}]`},
		{"apply patch in YAML", ApplyPatchYAML, route.Paths,
			"apiVersion: cluster.x-k8s.io/v1beta2\nkind: Machine\nmetadata:\n  name: m\n  labels:\n    cluster.x-k8s.io/cluster-name: c\nspec:\n  infrastructureRef:\n    apiGroup: infrastructure.cluster.x-k8s.io\n",
			`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m","labels":{"cluster.x-k8s.io/cluster-name":"c"}},"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io"}}}`},
		{"strategic merge patch of a secret's owners", StrategicMergePatch, &translate.Node{Fields: map[string]*translate.Node{"metadata": translate.ObjectMetaPaths}},
			`{"metadata":{"ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","name":"c","uid":"u"}],"$setElementOrder/ownerReferences":[{"uid":"u"}]}}`,
			`{"metadata":{"ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Cluster","name":"c","uid":"u"}],"$setElementOrder/ownerReferences":[{"uid":"u"}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Patch(translate.ToPrivate, tc.n, tc.mediaType, []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			backendtesting.EqualJSON(t, out, tc.want)
		})
	}
}

func TestPatchNumbersKept(t *testing.T) {
	route, _ := routestesting.Table().ByUpstream(routestesting.MachinesV1beta2)
	in := `{"apiVersion":"cluster.x-k8s.io/v1beta2","spec":{"big":12345678901234567890,"f":1.0}}`
	out, err := Patch(translate.ToPrivate, route.Paths, MergePatch, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","spec":{"big":12345678901234567890,"f":1.0}}`; string(out) != want {
		t.Errorf("got %s, want %s", out, want)
	}
}

func TestPatchMalformed(t *testing.T) {
	route, _ := routestesting.Table().ByUpstream(routestesting.MachinesV1beta2)
	for _, tc := range []struct{ name, mediaType, in string }{
		{"merge patch", MergePatch, `{"apiVersion":"cluster.x-k8s.io/v1beta2"`},
		{"json patch not an array", JSONPatch, `{"op":"add","path":"/a","value":"cluster.x-k8s.io"}`},
		{"json patch op not an object", JSONPatch, `["cluster.x-k8s.io"]`},
		{"json patch malformed", JSONPatch, `[{"op":"add","path":"/a","value":"cluster.x-k8s.io"}`},
		{"apply patch", ApplyPatchYAML, "apiVersion: cluster.x-k8s.io/v1beta2\n  bad: [\n"},
		{"unknown type", "application/apply-patch+cbor", `cluster.x-k8s.io`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if out, err := Patch(translate.ToPrivate, route.Paths, tc.mediaType, []byte(tc.in)); err == nil {
				t.Errorf("Patch = %s; want an error", out)
			}
		})
	}
}

func TestUpstreamKeepsEveryOtherByte(t *testing.T) {
	tr := New(routestesting.Table())
	for _, tc := range []struct{ name, in, want string }{
		{"routed kind: order, zero values, null and numbers",
			`{"kind":"Machine","apiVersion":"cluster.hypershift.openshift.io/v1beta2","metadata":{"name":"m","generation":1},` +
				`"spec":{"providerID":"","replicas":0,"ratio":1.50,"nodeDeletionTimeout":null,"infrastructureRef":{"name":"a","apiGroup":"infrastructure.cluster.hypershift.openshift.io"}},"status":{}}`,
			`{"kind":"Machine","apiVersion":"cluster.x-k8s.io/v1beta2","metadata":{"name":"m","generation":1},` +
				`"spec":{"providerID":"","replicas":0,"ratio":1.50,"nodeDeletionTimeout":null,"infrastructureRef":{"name":"a","apiGroup":"infrastructure.cluster.x-k8s.io"}},"status":{}}`},
		{"table with whole objects",
			`{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"7"},"columnDefinitions":[{"name":"Name","type":"string"}],` +
				`"rows":[{"cells":["m"],"object":{"kind":"Machine","apiVersion":"cluster.hypershift.openshift.io/v1beta2","metadata":{"name":"m"},` +
				`"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io"}}}},{"cells":["n"],"object":null}]}`,
			`{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"7"},"columnDefinitions":[{"name":"Name","type":"string"}],` +
				`"rows":[{"cells":["m"],"object":{"kind":"Machine","apiVersion":"cluster.x-k8s.io/v1beta2","metadata":{"name":"m"},` +
				`"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io"}}}},{"cells":["n"],"object":null}]}`},
		{"a whole list",
			`{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"7"},"items":[` +
				`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"m","managedFields":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2"}]}}]}` + "\n",
			`{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"7"},"items":[` +
				`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"m","managedFields":[{"apiVersion":"cluster.x-k8s.io/v1beta2"}]}}]}` + "\n"},
		{"core event",
			`{"kind":"Event","apiVersion":"v1","metadata":{"name":"e"},"involvedObject":{"kind":"Machine","apiVersion":"cluster.hypershift.openshift.io/v1beta2","name":"m"},"reason":"Created cluster.hypershift.openshift.io"}`,
			`{"kind":"Event","apiVersion":"v1","metadata":{"name":"e"},"involvedObject":{"kind":"Machine","apiVersion":"cluster.x-k8s.io/v1beta2","name":"m"},"reason":"Created cluster.hypershift.openshift.io"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tr.Upstream([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Errorf("\n got %s\nwant %s", out, tc.want)
			}
		})
	}
}

func TestUpstreamOfListItems(t *testing.T) {
	tr := New(routestesting.Table())
	// Items of a list of a built-in resource carry no kind: the resource decides.
	in := `{"metadata":{"name":"e"},"regarding":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine"},"related":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2"}}`
	want := `{"metadata":{"name":"e"},"regarding":{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine"},"related":{"apiVersion":"cluster.x-k8s.io/v1beta2"}}`
	out, err := tr.UpstreamOf(schema.GroupResource{Group: "events.k8s.io", Resource: "events"})([]byte(in))
	if err != nil || string(out) != want {
		t.Errorf("got %s, %v; want %s", out, err, want)
	}
	out, err = tr.UpstreamOf(schema.GroupResource{Resource: "secrets"})([]byte(in))
	if err != nil || string(out) != in {
		t.Errorf("a Secret item: got %s, %v; want it unchanged", out, err)
	}
	for _, item := range []string{in, `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m"},"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io"}}}`, `{"apiVersion":"v1","kind":"Status","message":"machines.cluster.hypershift.openshift.io \"m\" not found"}`} {
		want, err := tr.UpstreamOfValid(schema.GroupResource{Group: "events.k8s.io", Resource: "events"})([]byte(item))
		if err != nil {
			t.Fatal(err)
		}
		got, err := tr.AppendUpstreamOfValid(schema.GroupResource{Group: "events.k8s.io", Resource: "events"})([]byte("prefix"), []byte(item))
		if err != nil || string(got) != "prefix"+string(want) {
			t.Errorf("AppendUpstreamOfValid: got %s, %v; want prefix%s", got, err, want)
		}
	}
	// Read in one pass when apiVersion and kind lead, but as a decoder reads them (the last of duplicates
	// wins) when they are repeated.
	machines := schema.GroupResource{Group: "cluster.hypershift.openshift.io", Resource: "machines"}
	for _, tc := range []struct{ in, want string }{
		{`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io"}}}`,
			`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io"}}}`},
		{`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io"}},"kind":"Secret"}`,
			`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io"}},"kind":"Secret"}`},
	} {
		got, err := tr.AppendUpstreamOfValid(machines)(nil, []byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("got %s, %v; want %s", got, err, tc.want)
		}
	}
	if got := RequestPaths(schema.GroupResource{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}).Pointer("/spec/resourceAttributes/group"); got == nil || got.Value != translate.GroupValue {
		t.Errorf("RequestPaths(selfsubjectaccessreviews) lacks spec.resourceAttributes.group")
	}
}

func TestFieldSelector(t *testing.T) {
	events := schema.GroupResource{Resource: "events"}
	for _, tc := range []struct {
		gr       schema.GroupResource
		in, want string
	}{
		{events, "involvedObject.apiVersion=cluster.x-k8s.io/v1beta2,involvedObject.name=m1", "involvedObject.apiVersion=cluster.hypershift.openshift.io/v1beta2,involvedObject.name=m1"},
		{events, "involvedObject.apiVersion!=apps/v1", "involvedObject.apiVersion!=apps/v1"},
		{events, "involvedObject.name=cluster.x-k8s.io", "involvedObject.name=cluster.x-k8s.io"},
		{schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "regarding.apiVersion=cluster.x-k8s.io/v1beta2", "regarding.apiVersion=cluster.hypershift.openshift.io/v1beta2"},
		{schema.GroupResource{Resource: "pods"}, "involvedObject.apiVersion=cluster.x-k8s.io/v1beta2", "involvedObject.apiVersion=cluster.x-k8s.io/v1beta2"},
		{events, "", ""},
	} {
		got, err := FieldSelector(translate.ToPrivate, tc.gr, tc.in)
		if err != nil || got != tc.want {
			t.Errorf("FieldSelector(%s, %q) = %q, %v; want %q", tc.gr, tc.in, got, err, tc.want)
		}
	}
	if _, err := FieldSelector(translate.ToPrivate, events, "a=b=c"); !apierrors.IsBadRequest(err) {
		t.Errorf("a malformed selector: %v, want BadRequest", err)
	}
}

// TestTableCells: printed cells naming a private group (a ResourceQuota's columns) read in upstream terms;
// other cells, and cells of other types, are left as they are.
func TestTableCells(t *testing.T) {
	tr := New(routestesting.Table())
	in := `{"kind":"Table","apiVersion":"meta.k8s.io/v1","rows":[{"cells":["q","count/machines.cluster.hypershift.openshift.io: 0/1",3,null,"xcluster.hypershift.openshift.io"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"q"}}}]}`
	want := `{"kind":"Table","apiVersion":"meta.k8s.io/v1","rows":[{"cells":["q","count/machines.cluster.x-k8s.io: 0/1",3,null,"xcluster.hypershift.openshift.io"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"q"}}}]}`
	out, err := tr.Upstream([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

// TestAppendTableRow: a row's object and cells are translated, every other byte kept (other members,
// whitespace, the order of members), and a key is read as decoded; a row that is not an object, or whose
// object cannot be translated, fails with dst as it was.
func TestAppendTableRow(t *testing.T) {
	tr := New(routestesting.Table())
	private, upstream := routestesting.PrivateCluster, routestesting.Cluster
	object := func(group string) string {
		return `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"m","labels":{"` + upstream + `/cluster-name":"c"},` +
			`"ownerReferences":[{"apiVersion":"` + group + `/v1beta2","kind":"MachineSet","name":"ms","uid":"u"}]}}`
	}
	for _, tc := range []struct{ name, in, want string }{
		{"object and cells",
			`{"cells":["m","quota: count/machines.` + private + `",3],"object":` + object(private) + `}`,
			`{"cells":["m","quota: count/machines.` + upstream + `",3],"object":` + object(upstream) + `}`},
		{"other members and whitespace kept",
			` { "conditions" : [{"type":"` + private + `"}] , "obj\u0065ct" : ` + object(private) + ` , "cells":["m"] } `,
			` { "conditions" : [{"type":"` + private + `"}] , "obj\u0065ct" : ` + object(upstream) + ` , "cells":["m"] } `},
		{"every object member", `{"object":` + object(private) + `,"object":` + object(private) + `}`,
			`{"object":` + object(upstream) + `,"object":` + object(upstream) + `}`},
		{"a null object", `{"cells":[],"object":null}`, `{"cells":[],"object":null}`},
		{"nothing to translate", `{"cells":["m"],"object":` + object(upstream) + `}`, `{"cells":["m"],"object":` + object(upstream) + `}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tr.AppendTableRow([]byte("prefix"), []byte(tc.in))
			if err != nil || string(got) != "prefix"+tc.want {
				t.Errorf("got %s, %v\nwant prefix%s", got, err, tc.want)
			}
		})
	}
	for _, bad := range []string{`["m"]`, `"row"`, ``, `{"object":"` + private + `"}`} {
		if got, err := tr.AppendTableRow([]byte("prefix"), []byte(bad)); err == nil || string(got) != "prefix" {
			t.Errorf("%s: got %q, %v, want an error and dst as it was", bad, got, err)
		}
	}
}

// FuzzTableRow holds a Table row's translation in place (AppendTableRow) to the same translation done
// member by member with a JSON decoder (how rows were translated before they were streamed): on a row
// that is valid JSON both fail or both succeed, and their results decode to the same value.
func FuzzTableRow(f *testing.F) {
	machine := `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m","ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2"}]},` +
		`"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"AWSMachine","name":"a"}}}`
	for _, seed := range []string{
		`{"cells":["m","count/machines.cluster.hypershift.openshift.io"],"object":` + machine + `}`,
		` { "obj\u0065ct" : {"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":{"ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2"}]}} , "cells":[1] } `,
		`{"object":null,"object":"cluster.hypershift.openshift.io"}`, `["cluster.hypershift.openshift.io"]`, `{}`,
	} {
		f.Add([]byte(seed))
	}
	tr := New(routestesting.Table())
	byMembers := func(row []byte) ([]byte, error) {
		return jsonx.Members(row, func(key string, raw json.RawMessage) (json.RawMessage, error) {
			switch {
			case key == "cells":
				return cells(raw)
			case key == "object" && string(raw) != "null":
				return tr.Upstream(raw)
			}
			return raw, nil
		})
	}
	f.Fuzz(func(t *testing.T, row []byte) {
		if !json.Valid(row) {
			return
		}
		got, err := tr.AppendTableRow(nil, row)
		want, wantErr := byMembers(row)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%q: AppendTableRow: %q, %v; by members: %q, %v", row, got, err, want, wantErr)
		}
		if err != nil {
			return
		}
		g, gErr := jsonx.Decode(got)
		w, wErr := jsonx.Decode(want)
		if gErr != nil || wErr != nil || !reflect.DeepEqual(g, w) {
			t.Fatalf("%q: AppendTableRow: %q (%v); by members: %q (%v)", row, got, gErr, want, wErr)
		}
	})
}
