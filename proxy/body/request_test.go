package body

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openshift/hypershift-capi-proxy/proxy/body/jsonpatch"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/backendtesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/routestesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// cborOf encodes a JSON object in CBOR, as client-go does with ClientsPreferCBOR.
func cborOf(t *testing.T, j string) string {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(j)); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := cborSerializer.Encode(u, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestObjectToPrivate: create and update bodies are decoded as the apiserver decodes their media type,
// rewritten at the group paths only, and forwarded as they are when nothing needs translating or they
// cannot be parsed.
func TestObjectToPrivate(t *testing.T) {
	tr := New(routestesting.Table())
	route, _ := tr.table.ByUpstream(routestesting.MachinesV1beta2)
	pathsOf := func(apiVersion, kind string) (*translate.Node, error) {
		if r, ok := tr.RouteOf(apiVersion, kind); ok {
			return r.Paths, nil
		}
		return route.Paths, nil
	}
	const owner = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","name":"c","uid":"u"}]}}`
	const ownerPrivate = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Cluster","name":"c","uid":"u"}]}}`
	for _, tc := range []struct {
		name, contentType, in string
		paths                 PathsOf
		want, wantType        string
	}{
		{"JSON keeps every other byte", "application/json",
			`{ "kind":"Machine","apiVersion":"cluster.x-k8s.io/v1beta2","spec":{"enabled":false,"n":0,"s":"","x":null,"o":{},` +
				`"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io"}}}`, pathsOf,
			`{ "kind":"Machine","apiVersion":"cluster.hypershift.openshift.io/v1beta2","spec":{"enabled":false,"n":0,"s":"","x":null,"o":{},` +
				`"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io"}}}`, "application/json"},
		{"no Content-Type is JSON", "", owner, metadataOnly, ownerPrivate, "application/json"},
		{"a private group as the object's apiVersion is unserved, elsewhere data", "application/json",
			`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2"},{"apiVersion":"cluster.x-k8s.io/v1beta2"}]}}`, pathsOf,
			`{"apiVersion":"cluster.hypershift.openshift.io.invalid/v1beta2","kind":"Machine","metadata":{"ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2"},{"apiVersion":"cluster.hypershift.openshift.io/v1beta2"}]}}`, "application/json"},
		{"a private group as a YAML object's apiVersion", "application/yaml",
			"apiVersion: cluster.hypershift.openshift.io/v1beta2\nkind: Machine\n", pathsOf,
			`{"apiVersion":"cluster.hypershift.openshift.io.invalid/v1beta2","kind":"Machine"}`, "application/json"},
		{"escaped group", "application/json",
			`{"metadata":{"ownerReferences":[{"apiVersion":"cluster.x\u002dk8s.io/v1beta2"}]}}`, metadataOnly,
			`{"metadata":{"ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2"}]}}`, "application/json"},
		{"escaped key", "application/json",
			`{"metadata":{"owner\u0052eferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2"}]}}`, metadataOnly,
			`{"metadata":{"owner\u0052eferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2"}]}}`, "application/json"},
		{"keys are exact", "application/json",
			`{"Metadata":{"ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2"}]},"metadata":{"OwnerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2"}]}}`, metadataOnly,
			`{"Metadata":{"ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2"}]},"metadata":{"OwnerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2"}]}}`, "application/json"},
		{"YAML becomes JSON", "application/yaml",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  ownerReferences:\n  - apiVersion: \"cluster.x\\x2dk8s.io/v1beta2\"\n    kind: Cluster\n    name: c\n    uid: u\n",
			metadataOnly, ownerPrivate, "application/json"},
		{"YAML naming no group stays YAML", "application/yaml", "apiVersion: v1\nkind: ConfigMap\n", metadataOnly,
			"apiVersion: v1\nkind: ConfigMap\n", "application/yaml"},
		{"CBOR stays CBOR", "application/cbor", cborOf(t, owner), metadataOnly, ownerPrivate, "application/cbor"},
		{"CBOR naming no group stays CBOR", "application/cbor", cborOf(t, `{"apiVersion":"v1","kind":"ConfigMap"}`), metadataOnly,
			cborOf(t, `{"apiVersion":"v1","kind":"ConfigMap"}`), "application/cbor"},
		{"the body's own kind chooses the paths", "application/json",
			`{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta2","kind":"AWSMachine","spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io"}}}`, pathsOf,
			`{"apiVersion":"infrastructure.cluster.hypershift.openshift.io/v1beta2","kind":"AWSMachine","spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io"}}}`, "application/json"},
		{"malformed JSON is forwarded", "application/json", `{"apiVersion":"cluster.x-k8s.io/v1beta2"`, pathsOf,
			`{"apiVersion":"cluster.x-k8s.io/v1beta2"`, "application/json"},
		{"trailing data is forwarded", "application/json", `{"apiVersion":"cluster.x-k8s.io/v1beta2"}{}`, pathsOf,
			`{"apiVersion":"cluster.x-k8s.io/v1beta2"}{}`, "application/json"},
		{"malformed YAML is forwarded", "application/yaml", "a: [\n", pathsOf, "a: [\n", "application/yaml"},
		{"unknown media type is forwarded", "text/plain", owner, metadataOnly, owner, "text/plain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, outType, err := ObjectToPrivate(tc.contentType, []byte(tc.in), tc.paths)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.wantType == CBOR && tc.want[0] == '{':
				j, err := CBORToJSON(out)
				if err != nil {
					t.Fatal(err)
				}
				backendtesting.EqualJSON(t, j, tc.want)
			case tc.wantType == "application/json" && tc.contentType != "application/json":
				backendtesting.EqualJSON(t, out, tc.want)
			case string(out) != tc.want:
				t.Errorf("got\n%s\nwant\n%s", out, tc.want)
			}
			if outType != tc.wantType && !(tc.contentType == "" && outType == "application/json") {
				t.Errorf("Content-Type %q, want %q", outType, tc.wantType)
			}
		})
	}

	// Protobuf naming a group the proxy cannot decode is refused, never forwarded untranslated.
	_, _, err := ObjectToPrivate(Protobuf, []byte("k8s\x00\x0acluster.x-k8s.io/v1beta2"), metadataOnly)
	if !apierrors.IsUnsupportedMediaType(err) {
		t.Errorf("protobuf: %v, want 415", err)
	}
}

// metadataOnly is the pathsOf of any object without a route.
func metadataOnly(_, _ string) (*translate.Node, error) { return objectPaths, nil }

// objectNeeded marks a case of TestPatchToPrivate that must be resolved against the object.
const objectNeeded = -1

// TestPatchToPrivate: patches are read as the apiserver reads them, keys exactly, and a JSON patch that
// would store a value in the other group's terms needs the object (jsonpatch.Resolve).
func TestPatchToPrivate(t *testing.T) {
	route, _ := routestesting.Table().ByUpstream(routestesting.MachinesV1beta2)
	for _, tc := range []struct {
		name, contentType, in string
		want, wantType        string
		code                  int
	}{
		{"merge patch with an escape", MergePatch, `{"apiVersion":"cluster.x\u002dk8s.io/v1beta2"}`,
			`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2"}`, MergePatch, 0},
		{"JSON patch path decides, not Path", JSONPatch,
			`[{"op":"add","Path":"/metadata/ownerReferences/0/apiVersion","path":"/spec/x","value":"cluster.x-k8s.io/v1beta2"}]`,
			`[{"op":"add","Path":"/metadata/ownerReferences/0/apiVersion","path":"/spec/x","value":"cluster.x-k8s.io/v1beta2"}]`, JSONPatch, 0},
		{"JSON patch last path wins", JSONPatch,
			`[{"op":"add","path":"/spec/x","path":"/metadata/ownerReferences/0/apiVersion","value":"cluster.x-k8s.io/v1beta2"}]`,
			`[{"op":"add","path":"/spec/x","path":"/metadata/ownerReferences/0/apiVersion","value":"cluster.hypershift.openshift.io/v1beta2"}]`, JSONPatch, 0},
		{"JSON patch escaped path", JSONPatch,
			`[{"op":"replace","path":"\/metadata\/ownerReferences\/0\/apiVersion","value":"cluster.x-k8s.io/v1beta2"}]`,
			`[{"op":"replace","path":"\/metadata\/ownerReferences\/0\/apiVersion","value":"cluster.hypershift.openshift.io/v1beta2"}]`, JSONPatch, 0},
		{"JSON patch Value is not value", JSONPatch,
			`[{"op":"add","path":"/metadata/ownerReferences/0/apiVersion","Value":"cluster.x-k8s.io/v1beta2","value":"cluster.x-k8s.io/v1beta2"}]`,
			`[{"op":"add","path":"/metadata/ownerReferences/0/apiVersion","Value":"cluster.x-k8s.io/v1beta2","value":"cluster.hypershift.openshift.io/v1beta2"}]`, JSONPatch, 0},
		{"JSON patch copy between references of one shape", JSONPatch,
			`[{"op":"copy","from":"/spec/infrastructureRef","path":"/spec/bootstrap/configRef"},{"op":"move","from":"/metadata/ownerReferences/1","path":"/metadata/ownerReferences/0"}]`,
			`[{"op":"copy","from":"/spec/infrastructureRef","path":"/spec/bootstrap/configRef"},{"op":"move","from":"/metadata/ownerReferences/1","path":"/metadata/ownerReferences/0"}]`, JSONPatch, 0},
		{"JSON patch copy into an apiVersion", JSONPatch,
			`[{"op":"copy","from":"/metadata/annotations/a","path":"/metadata/ownerReferences/0/apiVersion"}]`, "", "", objectNeeded},
		{"JSON patch move out of an apiGroup", JSONPatch,
			`[{"op":"move","from":"/spec/infrastructureRef/apiGroup","path":"/spec/x"}]`, "", "", objectNeeded},
		{"JSON patch copy with an escaped from", JSONPatch,
			`[{"op":"copy","from":"\/metadata\/annotations\/a","path":"/metadata/ownerReferences/0/apiVersion"}]`, "", "", objectNeeded},
		{"JSON patch malformed is forwarded", JSONPatch, `[{"op":"add"`, `[{"op":"add"`, JSONPatch, 0},
		{"apply patch YAML", ApplyPatchYAML, "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Machine\n",
			`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine"}`, ApplyPatchYAML, 0},
		{"apply patch CBOR", ApplyPatchCBOR, cborOf(t, `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine"}`),
			`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine"}`, ApplyPatchCBOR, 0},
		{"merge patch of the apiVersion to a private group", MergePatch, `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","metadata":{"ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2"}]}}`,
			`{"apiVersion":"cluster.hypershift.openshift.io.invalid/v1beta2","metadata":{"ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2"}]}}`, MergePatch, 0},
		{"JSON patch of the apiVersion to a private group", JSONPatch,
			`[{"op":"test","path":"/apiVersion","value":"cluster.hypershift.openshift.io/v1beta2"},{"op":"replace","path":"/metadata/ownerReferences/0/apiVersion","value":"cluster.hypershift.openshift.io/v1beta2"}]`,
			`[{"op":"test","path":"/apiVersion","value":"cluster.hypershift.openshift.io.invalid/v1beta2"},{"op":"replace","path":"/metadata/ownerReferences/0/apiVersion","value":"cluster.hypershift.openshift.io/v1beta2"}]`, JSONPatch, 0},
		{"JSON patch at a negative index", JSONPatch,
			`[{"op":"replace","path":"/metadata/ownerReferences/-1/apiVersion","value":"cluster.x-k8s.io/v1beta2"}]`,
			`[{"op":"replace","path":"/metadata/ownerReferences/-1/apiVersion","value":"cluster.hypershift.openshift.io/v1beta2"}]`, JSONPatch, 0},
		{"JSON patch tests at every index form", JSONPatch,
			`[{"op":"test","path":"/metadata/ownerReferences/+0/apiVersion","value":"cluster.x-k8s.io/v1beta2"},{"op":"test","path":"/metadata/ownerReferences/00","value":{"apiVersion":"cluster.x-k8s.io/v1beta2"}},{"op":"test","path":"/metadata/ownerReferences/-0/apiVersion","value":"cluster.x-k8s.io/v1beta2"}]`,
			`[{"op":"test","path":"/metadata/ownerReferences/+0/apiVersion","value":"cluster.hypershift.openshift.io/v1beta2"},{"op":"test","path":"/metadata/ownerReferences/00","value":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2"}},{"op":"test","path":"/metadata/ownerReferences/-0/apiVersion","value":"cluster.hypershift.openshift.io/v1beta2"}]`, JSONPatch, 0},
		{"JSON patch path without a leading slash", JSONPatch,
			`[{"op":"replace","path":"metadata/metadata/ownerReferences/0/apiVersion","value":"cluster.x-k8s.io/v1beta2"}]`,
			`[{"op":"replace","path":"metadata/metadata/ownerReferences/0/apiVersion","value":"cluster.hypershift.openshift.io/v1beta2"}]`, JSONPatch, 0},
		{"JSON patch test of the apiVersion the object has", JSONPatch,
			`[{"op":"test","path":"/apiVersion","value":"cluster.x-k8s.io/v1beta2"},{"op":"test","path":"/metadata/labels/l","value":"v"},{"op":"test","path":"/metadata/ownerReferences/0/apiVersion","value":"cluster.x-k8s.io/v1beta2"},{"op":"add","path":"/metadata/labels/m","value":"w"}]`,
			`[{"op":"test","path":"/apiVersion","value":"cluster.hypershift.openshift.io/v1beta2"},{"op":"test","path":"/metadata/labels/l","value":"v"},{"op":"test","path":"/metadata/ownerReferences/0/apiVersion","value":"cluster.hypershift.openshift.io/v1beta2"},{"op":"add","path":"/metadata/labels/m","value":"w"}]`, JSONPatch, 0},
		{"JSON patch of the apiVersion to a private group, however spelled", JSONPatch,
			`[{"op":"add","path":"x/apiVersion","value":"cluster.hypershift.openshift.io/v1beta2"},{"op":"replace","path":"","value":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine"}}]`,
			`[{"op":"add","path":"x/apiVersion","value":"cluster.hypershift.openshift.io.invalid/v1beta2"},{"op":"replace","path":"","value":{"apiVersion":"cluster.hypershift.openshift.io.invalid/v1beta2","kind":"Machine"}}]`, JSONPatch, 0},
		{"JSON patch test of a private group where a group is", JSONPatch,
			`[{"op":"test","path":"/metadata/ownerReferences/-1","value":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Cluster"}},{"op":"test","path":"/metadata/annotations/a","value":"cluster.hypershift.openshift.io/v1beta2"},{"op":"add","path":"/metadata/annotations/b","value":"cluster.hypershift.openshift.io/v1beta2"}]`,
			`[{"op":"test","path":"/metadata/ownerReferences/-1","value":{"apiVersion":"cluster.hypershift.openshift.io.invalid/v1beta2","kind":"Cluster"}},{"op":"test","path":"/metadata/annotations/a","value":"cluster.hypershift.openshift.io/v1beta2"},{"op":"add","path":"/metadata/annotations/b","value":"cluster.hypershift.openshift.io/v1beta2"}]`, JSONPatch, 0},
		{"JSON patch copy from a negative index into an annotation", JSONPatch,
			`[{"op":"copy","from":"/metadata/ownerReferences/-1/apiVersion","path":"/metadata/annotations/a"}]`, "", "", objectNeeded},
		{"JSON patch copy of a private apiVersion it wrote", JSONPatch,
			`[{"op":"replace","path":"/apiVersion","value":"cluster.hypershift.openshift.io/v1beta2"},{"op":"copy","from":"/apiVersion","path":"/metadata/ownerReferences/0/apiVersion"}]`, "", "", objectNeeded},
		{"apply patch YAML in a private group", ApplyPatchYAML, "apiVersion: cluster.hypershift.openshift.io/v1beta2\nkind: Machine\n",
			`{"apiVersion":"cluster.hypershift.openshift.io.invalid/v1beta2","kind":"Machine"}`, ApplyPatchYAML, 0},
		{"apply patch CBOR naming no group", ApplyPatchCBOR, cborOf(t, `{"kind":"Machine"}`),
			cborOf(t, `{"kind":"Machine"}`), ApplyPatchCBOR, 0},
		{"no Content-Type is forwarded", "", `{"apiVersion":"cluster.x-k8s.io/v1beta2"}`, `{"apiVersion":"cluster.x-k8s.io/v1beta2"}`, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, outType, err := PatchToPrivate(tc.contentType, []byte(tc.in), route.Paths)
			if tc.code == objectNeeded {
				if !errors.Is(err, jsonpatch.ErrObjectNeeded) {
					t.Fatalf("err %v, want ErrObjectNeeded", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.wantType == ApplyPatchCBOR && tc.want[0] == '{':
				j, err := CBORToJSON(out)
				if err != nil {
					t.Fatal(err)
				}
				backendtesting.EqualJSON(t, j, tc.want)
			case tc.wantType != tc.contentType:
				backendtesting.EqualJSON(t, out, tc.want)
			case string(out) != tc.want:
				t.Errorf("got\n%s\nwant\n%s", out, tc.want)
			}
			if outType != tc.wantType {
				t.Errorf("Content-Type %q, want %q", outType, tc.wantType)
			}
		})
	}
}

// TestQuotes: the texts of a body that kube-apiserver quotes in its errors, as sent and as the client sent
// them.
func TestQuotes(t *testing.T) {
	client := `{"apiVersion":"cluster.x-k8s.io/v1beta2","metadata":{"name":"a-long-enough-name"}}`
	sent := `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","metadata":{"name":"a-long-enough-name"}}`
	got := Quotes(JSON, []byte(client), JSON, []byte(sent))
	want := []status.Quote{
		{Sent: sent, Client: client},
		{Sent: `{"apiVersion":"cluster.hypersh ...`, Client: `{"apiVersion":"cluster.x-k8s.i ...`},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("JSON: got %q, want %q", got, want)
	}

	yamlClient := "apiVersion: cluster.hypershift.openshift.io/v1beta2\n"
	sent = `{"apiVersion":"cluster.hypershift.openshift.io.invalid/v1beta2"}`
	got = Quotes(YAML, []byte(yamlClient), JSON, []byte(sent))
	want = []status.Quote{
		{Sent: sent, Client: `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2"}`},
		{Sent: `{"apiVersion":"cluster.hypersh ...`, Client: hex.EncodeToString([]byte(yamlClient[:30])) + " ..."},
		{Sent: "cluster.hypershift.openshift.io.invalid", Client: "cluster.hypershift.openshift.io"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("YAML: got %q, want %q", got, want)
	}

	if got := Quotes(JSON, []byte(client), JSON, []byte(client)); got != nil {
		t.Errorf("a body forwarded as it came: %q", got)
	}
}
