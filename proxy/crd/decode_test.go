package crd

import (
	"bytes"
	"net/http"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/fakeroutes"
)

// protobufCRD encodes a CRD as client-go sends it in protobuf.
func protobufCRD(t *testing.T, name, group string) []byte {
	t.Helper()
	codecs := serializer.NewCodecFactory(scheme)
	info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	c := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       apiextensionsv1.CustomResourceDefinitionSpec{Group: group},
	}
	var buf bytes.Buffer
	if err := info.Serializer.Encode(c, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func cborCRD(t *testing.T, name, group string) []byte {
	t.Helper()
	data, err := cbordirect.Marshal(map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": name}, "spec": map[string]any{"group": group}})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestCheckCreate(t *testing.T) {
	n := New(fakeroutes.Table())
	const (
		forbidden   = http.StatusForbidden
		badRequest  = http.StatusBadRequest
		unsupported = http.StatusUnsupportedMediaType
	)
	jsonCRD := func(name, group string) string {
		return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"` + name + `"},"spec":{"group":"` + group + `"}}`
	}
	for _, tc := range []struct {
		name, contentType, body string
		code                    int // 0: accepted
	}{
		{"another group", body.JSON, jsonCRD("widgets.example.com", "example.com"), 0},
		{"no Content-Type is JSON", "", jsonCRD("widgets.example.com", "example.com"), 0},
		{"no Content-Type is JSON, refused", "", jsonCRD("widgets.cluster.x-k8s.io", "cluster.x-k8s.io"), forbidden},
		{"a routed upstream name", body.JSON, jsonCRD("machines.cluster.x-k8s.io", "cluster.x-k8s.io"), forbidden},
		{"an upstream group without a route", body.JSON, jsonCRD("widgets.cluster.x-k8s.io", "cluster.x-k8s.io"), forbidden},
		{"a private name", body.JSON, jsonCRD("machines.cluster.hypershift.openshift.io", "cluster.hypershift.openshift.io"), forbidden},
		{"a private group", body.JSON, jsonCRD("widgets.infrastructure.cluster.hypershift.openshift.io", "infrastructure.cluster.hypershift.openshift.io"), forbidden},
		{"a mapped group under another name", body.JSON, jsonCRD("widgets.example.com", "cluster.x-k8s.io"), forbidden},
		{"a private group under another name", body.JSON, jsonCRD("widgets.example.com", "cluster.hypershift.openshift.io"), forbidden},
		{"a mapped name with another group", body.JSON, jsonCRD("widgets.cluster.x-k8s.io", "example.com"), forbidden},
		// The apiserver's decoder matches member names exactly: "Metadata" is not metadata.
		{"a differently cased member is not the name", body.JSON,
			`{"metadata":{"name":"widgets.cluster.x-k8s.io"},"Metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com"}}`, forbidden},
		{"a differently cased member is not the group", body.JSON,
			`{"metadata":{"name":"widgets.example.com"},"spec":{"group":"cluster.x-k8s.io","Group":"example.com"}}`, forbidden},
		// A repeated member is decoded over the earlier one: the last name wins, objects merge.
		{"the last of repeated names wins", body.JSON,
			`{"metadata":{"name":"widgets.example.com","name":"widgets.cluster.x-k8s.io"},"spec":{"group":"example.com"}}`, forbidden},
		{"repeated objects merge", body.JSON,
			`{"spec":{"group":"cluster.x-k8s.io"},"metadata":{"name":"widgets.example.com"},"spec":{"scope":"Cluster"}}`, forbidden},
		{"the last of repeated groups wins, accepted", body.JSON,
			`{"metadata":{"name":"widgets.example.com"},"spec":{"group":"cluster.x-k8s.io"},"spec":{"group":"example.com"}}`, 0},
		{"an escaped group", body.JSON,
			`{"metadata":{"name":"widgets.example.com"},"spec":{"group":"cluster.x\u002dk8s.io"}}`, forbidden},
		{"YAML", body.YAML, "metadata:\n  name: widgets.example.com\nspec:\n  group: cluster.x-k8s.io\n", forbidden},
		{"YAML of another group", "application/yaml; charset=utf-8", "metadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n", 0},
		{"protobuf", body.Protobuf, string(protobufCRD(t, "widgets.cluster.x-k8s.io", "cluster.x-k8s.io")), forbidden},
		{"protobuf of a private name", body.Protobuf, string(protobufCRD(t, "machines.cluster.hypershift.openshift.io", "example.com")), forbidden},
		{"protobuf of another group", body.Protobuf, string(protobufCRD(t, "widgets.example.com", "example.com")), 0},
		{"CBOR", body.CBOR, string(cborCRD(t, "widgets.example.com", "infrastructure.cluster.x-k8s.io")), forbidden},
		{"CBOR of another group", body.CBOR, string(cborCRD(t, "widgets.example.com", "example.com")), 0},
		{"malformed JSON", body.JSON, `{"metadata":`, badRequest},
		{"a name that is not a string", body.JSON, `{"metadata":{"name":1}}`, badRequest},
		{"malformed protobuf", body.Protobuf, "k8s\x00garbage", badRequest},
		{"malformed CBOR", body.CBOR, "\xff", badRequest},
		{"a kind the apiserver does not take", body.Protobuf, "k8s\x00\x0a\x0c\x0a\x02v1\x12\x06Secret", badRequest},
		{"another media type", "text/plain", jsonCRD("widgets.cluster.x-k8s.io", "cluster.x-k8s.io"), unsupported},
		{"a Content-Type that does not parse", "application/json;;", jsonCRD("widgets.example.com", "example.com"), unsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := n.CheckCreate(tc.contentType, []byte(tc.body))
			if tc.code == 0 {
				if err != nil {
					t.Errorf("CheckCreate: %v, want it accepted", err)
				}
				return
			}
			if code := apierrors.ReasonForError(err); err == nil || errCode(err) != tc.code {
				t.Errorf("CheckCreate: %v (%s), want %d", err, code, tc.code)
			}
		})
	}
}

func errCode(err error) int {
	if s, ok := err.(apierrors.APIStatus); ok {
		return int(s.Status().Code)
	}
	return 0
}

// TestWriteDecoding covers how the checks of patches and updates read their bodies: as the apiserver
// does, with exact member names and the last of repeated members winning.
func TestWriteDecoding(t *testing.T) {
	n := New(fakeroutes.Table())
	const name = "machines.cluster.x-k8s.io"
	for _, tc := range []struct {
		name, mediaType, patch string
		forbidden              bool
	}{
		{"json patch: Path is not path", body.JSONPatch, `[{"op":"replace","path":"/spec/group","Path":"/metadata/labels/a","value":"x"}]`, true},
		{"json patch: From is not from", body.JSONPatch, `[{"op":"move","from":"/spec/scope","From":"/metadata/labels/b","path":"/metadata/labels/a"}]`, true},
		{"json patch: the last path wins", body.JSONPatch, `[{"op":"replace","path":"/metadata/labels/a","path":"/spec/group","value":"x"}]`, true},
		{"json patch: the last path wins, accepted", body.JSONPatch, `[{"op":"add","path":"/spec/group","path":"/metadata/labels/a","value":"x"}]`, false},
		{"json patch: Op is not op", body.JSONPatch, `[{"Op":"test","op":"replace","path":"/spec/group","value":"x"}]`, true},
		{"merge patch: Spec is not spec, accepted", body.MergePatch, `{"Spec":{"group":"x"},"metadata":{"labels":{"a":"b"}}}`, false},
		{"merge patch: a repeated spec", body.MergePatch, `{"spec":{"group":"x"},"spec":null}`, true},
		{"strategic merge patch of spec", body.StrategicMergePatch, `{"metadata":{},"spec":{"scope":"Cluster"}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := n.Patch(name, "", tc.mediaType, []byte(tc.patch))
			if tc.forbidden != apierrors.IsForbidden(err) || !tc.forbidden && err != nil {
				t.Errorf("Patch = %s, %v; want forbidden %v", out, err, tc.forbidden)
			}
		})
	}

	stored := []byte(privateCRD)
	spec := `{"group":"cluster.x-k8s.io","names":{"plural":"machines","singular":"machine","shortNames":["ma"],"kind":"Machine","listKind":"MachineList","categories":["cluster-api"]},"scope":"Namespaced","versions":[{"name":"v1beta2"}]}`
	changed := `{"group":"cluster.x-k8s.io","names":{"plural":"machines","singular":"machine","kind":"Machine","listKind":"MachineList"},"scope":"Cluster","versions":[{"name":"v1beta2"}]}`
	for _, tc := range []struct {
		name, body string
		forbidden  bool
	}{
		{"the stored spec", `{"metadata":{"name":"machines.cluster.x-k8s.io"},"spec":` + spec + `}`, false},
		{"defaults are the apiserver's", `{"metadata":{"name":"machines.cluster.x-k8s.io"},"spec":` + spec[:len(spec)-1] + `,"conversion":{"strategy":"None"}}}`, false},
		{"Spec is not spec", `{"metadata":{"name":"machines.cluster.x-k8s.io"},"spec":` + changed + `,"Spec":` + spec + `}`, true},
		{"the last spec wins", `{"metadata":{"name":"machines.cluster.x-k8s.io"},"spec":` + spec + `,"spec":` + changed + `}`, true},
		// The first spec's conversion stays: the apiserver decodes the second spec over the first.
		{"repeated specs merge", `{"metadata":{"name":"machines.cluster.x-k8s.io"},"spec":{"conversion":{"strategy":"Webhook"}},"spec":` + spec + `}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := n.Update(name, "", stored, []byte(tc.body))
			if tc.forbidden != apierrors.IsForbidden(err) || !tc.forbidden && err != nil {
				t.Errorf("Update: %v; want forbidden %v", err, tc.forbidden)
			}
		})
	}
}

func TestDeleteCollection(t *testing.T) {
	n := New(fakeroutes.Table())
	for _, tc := range []struct {
		name, list string
		want       []string
		forbidden  bool
	}{
		{"hidden CRDs are left out",
			`{"kind":"CustomResourceDefinitionList","items":[{"metadata":{"name":"widgets.example.com"}},{"metadata":{"name":"machines.cluster.x-k8s.io"}},` +
				`{"metadata":{"name":"gadgets.infrastructure.cluster.x-k8s.io"}},{"metadata":{"name":"widgets.cluster.hypershift.openshift.io"}},{"metadata":{"name":"pods.example.org"}}]}`,
			[]string{"widgets.example.com", "pods.example.org"}, false},
		{"a private CRD is refused",
			`{"kind":"CustomResourceDefinitionList","items":[{"metadata":{"name":"widgets.example.com"}},{"metadata":{"name":"awsmachines.infrastructure.cluster.hypershift.openshift.io"}}]}`,
			nil, true},
		{"a metadata list", `{"kind":"PartialObjectMetadataList","items":[{"metadata":{"name":"widgets.example.com"}}]}`, []string{"widgets.example.com"}, false},
		{"an empty list", `{"kind":"CustomResourceDefinitionList","items":[]}`, nil, false},
		{"a Table with objects",
			`{"kind":"Table","columnDefinitions":[{"name":"Name","format":"name"}],"rows":[{"cells":["x"],"object":{"metadata":{"name":"widgets.example.com"}}},{"cells":["machines.cluster.x-k8s.io"],"object":{"metadata":{"name":"machines.cluster.x-k8s.io"}}}]}`,
			[]string{"widgets.example.com"}, false},
		{"a Table without objects",
			`{"kind":"Table","columnDefinitions":[{"name":"Created","format":"date"},{"name":"Name","format":"name"}],"rows":[{"cells":["2026","machines.cluster.hypershift.openshift.io"]}]}`,
			nil, true},
		{"Items is not items", `{"kind":"CustomResourceDefinitionList","Items":[{"metadata":{"name":"widgets.example.com"}}],"items":[]}`, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := n.DeleteCollection([]byte(tc.list))
			if tc.forbidden {
				if !apierrors.IsForbidden(err) {
					t.Errorf("DeleteCollection = %v, %v; want Forbidden", got, err)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("DeleteCollection = %v, %v; want %v", got, err, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("DeleteCollection = %v; want %v", got, tc.want)
				}
			}
		})
	}
	if _, err := n.DeleteCollection([]byte(`{"items":[{}]}`)); err == nil {
		t.Error("an item without a name: want an error")
	}
	if _, err := n.DeleteCollection([]byte(`{"items":`)); err == nil {
		t.Error("malformed list: want an error")
	}
}
