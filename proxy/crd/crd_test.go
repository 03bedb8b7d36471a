package crd

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/routestesting"
)

const privateCRD = `{"kind":"CustomResourceDefinition","apiVersion":"apiextensions.k8s.io/v1","metadata":{"name":"machines.cluster.hypershift.openshift.io","uid":"u","labels":{"cluster.x-k8s.io/v1beta2":"v1beta2"}},` +
	`"spec":{"group":"cluster.hypershift.openshift.io","names":{"plural":"machines","singular":"machine","shortNames":["hsma"],"kind":"Machine","listKind":"MachineList","categories":["hypershift-cluster-api"]},"scope":"Namespaced","versions":[{"name":"v1beta2"}]},` +
	`"status":{"acceptedNames":{"plural":"machines","shortNames":["hsma"],"kind":"Machine","categories":["hypershift-cluster-api"]},"storedVersions":["v1beta2"]}}` + "\n"

const upstreamCRD = `{"kind":"CustomResourceDefinition","apiVersion":"apiextensions.k8s.io/v1","metadata":{"name":"machines.cluster.x-k8s.io","uid":"u","labels":{"cluster.x-k8s.io/v1beta2":"v1beta2"}},` +
	`"spec":{"group":"cluster.x-k8s.io","names":{"plural":"machines","singular":"machine","shortNames":["ma"],"kind":"Machine","listKind":"MachineList","categories":["cluster-api"]},"scope":"Namespaced","versions":[{"name":"v1beta2"}]},` +
	`"status":{"acceptedNames":{"plural":"machines","shortNames":["ma"],"kind":"Machine","categories":["cluster-api"]},"storedVersions":["v1beta2"]}}` + "\n"

func TestUpstream(t *testing.T) {
	n := New(routestesting.Table())
	for _, tc := range []struct{ name, in, want string }{
		{"a private CRD", privateCRD, upstreamCRD},
		{"a list item without kind and without shortNames upstream",
			`{"metadata":{"name":"awsmachines.infrastructure.cluster.hypershift.openshift.io"},"spec":{"group":"infrastructure.cluster.hypershift.openshift.io","names":{"shortNames":["hsawsm"],"categories":["hypershift-cluster-api"]}}}`,
			`{"metadata":{"name":"awsmachines.infrastructure.cluster.x-k8s.io"},"spec":{"group":"infrastructure.cluster.x-k8s.io","names":{"categories":["cluster-api"]}}}`},
		{"a PartialObjectMetadata",
			`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"machines.cluster.hypershift.openshift.io","labels":{"a":"b"}}}`,
			`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"machines.cluster.x-k8s.io","labels":{"a":"b"}}}`},
		{"the platform's own CRD is hidden",
			`{"kind":"CustomResourceDefinition","metadata":{"name":"machines.cluster.x-k8s.io"},"spec":{"group":"cluster.x-k8s.io"}}`, ""},
		{"a private group's CRD without a route is hidden",
			`{"kind":"CustomResourceDefinition","metadata":{"name":"widgets.cluster.hypershift.openshift.io"},"spec":{"group":"cluster.hypershift.openshift.io"}}`, ""},
		{"another group's CRD is kept", `{"metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com"}}`,
			`{"metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com"}}`},
		{"a Status",
			`{"kind":"Status","apiVersion":"v1","message":"customresourcedefinitions.apiextensions.k8s.io \"machines.cluster.hypershift.openshift.io\" not found","code":404}`,
			`{"kind":"Status","apiVersion":"v1","message":"customresourcedefinitions.apiextensions.k8s.io \"machines.cluster.x-k8s.io\" not found","code":404}`},
		{"a Table",
			`{"kind":"Table","apiVersion":"meta.k8s.io/v1","columnDefinitions":[{"name":"Name","format":"name"},{"name":"Created At","format":"date"}],"rows":[` +
				`{"cells":["machines.cluster.hypershift.openshift.io","2026"],"object":{"kind":"PartialObjectMetadata","metadata":{"name":"machines.cluster.hypershift.openshift.io"}}},` +
				`{"cells":["machines.cluster.x-k8s.io","2025"],"object":{"kind":"PartialObjectMetadata","metadata":{"name":"machines.cluster.x-k8s.io"}}},` +
				`{"cells":["pods.example.com","2025"]}]}`,
			`{"kind":"Table","apiVersion":"meta.k8s.io/v1","columnDefinitions":[{"name":"Name","format":"name"},{"name":"Created At","format":"date"}],"rows":[` +
				`{"cells":["machines.cluster.x-k8s.io","2026"],"object":{"kind":"PartialObjectMetadata","metadata":{"name":"machines.cluster.x-k8s.io"}}},` +
				`{"cells":["pods.example.com","2025"]}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := n.Upstream([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Errorf("\n got %s\nwant %s", out, tc.want)
			}
		})
	}
	if _, err := n.Upstream([]byte(`{"metadata":`)); err == nil {
		t.Error("malformed JSON: want an error")
	}
}

func TestWrites(t *testing.T) {
	n := New(routestesting.Table())
	const name = "machines.cluster.x-k8s.io"

	// A read-modify-write of the upstream view comes back as the private CRD.
	out, err := n.Update(name, "", []byte(privateCRD), []byte(upstreamCRD))
	if err != nil || string(out) != privateCRD {
		t.Errorf("Update of the unchanged view: %v\n got %s\nwant %s", err, out, privateCRD)
	}
	changed := []byte(`{"metadata":{"name":"machines.cluster.x-k8s.io"},"spec":{"group":"cluster.x-k8s.io","scope":"Cluster"}}`)
	if _, err := n.Update(name, "", []byte(privateCRD), changed); !apierrors.IsForbidden(err) {
		t.Errorf("Update of the spec: %v, want Forbidden", err)
	}
	if _, err := n.Update(name, "status", []byte(privateCRD), changed); err != nil {
		t.Errorf("Update of the status subresource: %v", err)
	}

	for _, tc := range []struct {
		name, subresource, mediaType, in, want string
		forbidden                              bool
	}{
		{"merge patch of an annotation", "", body.MergePatch, `{"metadata":{"annotations":{"a":"1"}}}`, `{"metadata":{"annotations":{"a":"1"}}}`, false},
		{"status patch with optimistic lock", "status", body.MergePatch, `{"metadata":{"resourceVersion":"7"},"status":{"storedVersions":["v1beta2"]}}`,
			`{"metadata":{"resourceVersion":"7"},"status":{"storedVersions":["v1beta2"]}}`, false},
		{"apply patch naming the CRD", "", body.ApplyPatchYAML, "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: machines.cluster.x-k8s.io\n  labels: {a: b}\n",
			`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"labels":{"a":"b"},"name":"machines.cluster.hypershift.openshift.io"}}`, false},
		{"json patch of a label", "", body.JSONPatch, `[{"op":"add","path":"/metadata/labels/a","value":"b"}]`, `[{"op":"add","path":"/metadata/labels/a","value":"b"}]`, false},
		{"json patch of spec in status", "status", body.JSONPatch, `[{"op":"add","path":"/spec/group","value":"x"}]`, `[{"op":"add","path":"/spec/group","value":"x"}]`, false},
		{"merge patch of spec", "", body.MergePatch, `{"spec":{"group":"x"}}`, "", true},
		{"apply patch with spec", "", body.ApplyPatchYAML, "spec:\n  group: x\n", "", true},
		{"json patch of spec", "", body.JSONPatch, `[{"op":"replace","path":"/spec/names/plural","value":"x"}]`, "", true},
		{"json patch moving spec away", "", body.JSONPatch, `[{"op":"move","from":"/spec/scope","path":"/metadata/annotations/x"}]`, "", true},
		{"json patch of the name", "", body.JSONPatch, `[{"op":"replace","path":"/metadata/name","value":"x"}]`, "", true},
		// The apiserver's JSON patch library drops what precedes a pointer's first "/".
		{"json patch of spec without a leading slash", "", body.JSONPatch, `[{"op":"replace","path":"x/spec/names/plural","value":"x"}]`, "", true},
		{"json patch moving spec away without a leading slash", "", body.JSONPatch, `[{"op":"move","from":"spec/spec","path":"/metadata/annotations/x"}]`, "", true},
		{"json patch of the name without a leading slash", "", body.JSONPatch, `[{"op":"replace","path":"metadata/metadata/name","value":"x"}]`, "", true},
		{"json patch of the whole object", "", body.JSONPatch, `[{"op":"replace","path":"","value":{}}]`, "", true},
		{"json patch of a path that addresses nothing", "", body.JSONPatch, `[{"op":"add","path":"spec","value":{}}]`, `[{"op":"add","path":"spec","value":{}}]`, false},
		{"unknown patch type", "", "application/cbor", `{}`, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := n.Patch(name, tc.subresource, tc.mediaType, []byte(tc.in))
			if tc.forbidden {
				if !apierrors.IsForbidden(err) {
					t.Errorf("Patch = %s, %v; want Forbidden", out, err)
				}
				return
			}
			if err != nil || string(out) != tc.want {
				t.Errorf("Patch = %s, %v; want %s", out, err, tc.want)
			}
		})
	}
	if _, err := n.Patch(name, "", body.MergePatch, []byte(`{`)); !apierrors.IsBadRequest(err) {
		t.Errorf("malformed merge patch: %v, want BadRequest", err)
	}
}
