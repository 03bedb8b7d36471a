package translate

import (
	"encoding/json"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDirectionValues(t *testing.T) {
	for _, tc := range []struct {
		fn       func(string) string
		in, want string
	}{
		{ToPrivate.APIVersion, "cluster.x-k8s.io/v1beta2", "cluster.hypershift.openshift.io/v1beta2"},
		{ToPrivate.APIVersion, "infrastructure.cluster.x-k8s.io/v1beta1", "infrastructure.cluster.hypershift.openshift.io/v1beta1"},
		{ToPrivate.APIVersion, "v1", "v1"},
		{ToPrivate.APIVersion, "", ""},
		{ToPrivate.APIVersion, "apps/v1", "apps/v1"},
		{ToPrivate.APIVersion, "x.cluster.x-k8s.io/v1", "x.cluster.x-k8s.io/v1"},
		{ToUpstream.APIVersion, "infrastructure.cluster.hypershift.openshift.io/v1beta2", "infrastructure.cluster.x-k8s.io/v1beta2"},
		{ToUpstream.APIVersion, "cluster.x-k8s.io/v1beta2", "cluster.x-k8s.io/v1beta2"},
		{ToPrivate.Group, "controlplane.cluster.x-k8s.io", "controlplane.cluster.hypershift.openshift.io"},
		{ToPrivate.Group, "", ""},
		{ToPrivate.GroupKind, "AWSMachineTemplate.infrastructure.cluster.x-k8s.io", "AWSMachineTemplate.infrastructure.cluster.hypershift.openshift.io"},
		{ToUpstream.GroupKind, "Foo.example.com", "Foo.example.com"},
		{ToUpstream.GroupKind, "Secret", "Secret"},
	} {
		if got := tc.fn(tc.in); got != tc.want {
			t.Errorf("%q -> %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestObjectMetaLeavesInputAndKeysAlone(t *testing.T) {
	in := metav1.ObjectMeta{
		Labels:          map[string]string{"cluster.x-k8s.io/cluster-name": "c1"},
		Annotations:     map[string]string{"cluster.x-k8s.io/cloned-from-groupkind": "M.infrastructure.cluster.x-k8s.io", "cluster.x-k8s.io/paused": ""},
		Finalizers:      []string{"cluster.cluster.x-k8s.io"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "cluster.x-k8s.io/v1beta2", Kind: "Cluster"}, {APIVersion: "v1", Kind: "Secret"}},
		ManagedFields:   []metav1.ManagedFieldsEntry{{APIVersion: "cluster.x-k8s.io/v1beta2"}},
	}
	var out metav1.ObjectMeta
	ToPrivate.ObjectMeta(&in, &out)
	if in.OwnerReferences[0].APIVersion != "cluster.x-k8s.io/v1beta2" || in.Annotations["cluster.x-k8s.io/cloned-from-groupkind"] != "M.infrastructure.cluster.x-k8s.io" {
		t.Fatalf("input was modified: %+v", in)
	}
	if out.OwnerReferences[0].APIVersion != "cluster.hypershift.openshift.io/v1beta2" || out.OwnerReferences[1].APIVersion != "v1" ||
		out.ManagedFields[0].APIVersion != "cluster.hypershift.openshift.io/v1beta2" ||
		out.Annotations["cluster.x-k8s.io/cloned-from-groupkind"] != "M.infrastructure.cluster.hypershift.openshift.io" {
		t.Fatalf("not translated: %+v", out)
	}
	if !reflect.DeepEqual(out.Labels, in.Labels) || !reflect.DeepEqual(out.Finalizers, in.Finalizers) || out.Annotations["cluster.x-k8s.io/paused"] != "" {
		t.Fatalf("keys or finalizers changed: %+v", out)
	}
}

func TestPathsJSONAndPointer(t *testing.T) {
	n := Paths("apiVersion=apiVersion", "metadata=objectMeta", "spec.infrastructureRef.apiGroup=group",
		"spec.workers[].ref.apiVersion=apiVersion", "spec.byName{}.apiGroup=group")
	var doc any
	if err := json.Unmarshal([]byte(`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine",
		"metadata":{"labels":{"cluster.x-k8s.io/cluster-name":"c"},"ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2"}]},
		"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","name":"cluster.x-k8s.io"},
		"workers":[{"ref":{"apiVersion":"bootstrap.cluster.x-k8s.io/v1beta2"}}],"byName":{"a":{"apiGroup":"ipam.cluster.x-k8s.io"}},
		"other":{"apiGroup":"cluster.x-k8s.io"}}}`), &doc); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(ToPrivate.JSON(n, doc))
	want := `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine",` +
		`"metadata":{"labels":{"cluster.x-k8s.io/cluster-name":"c"},"ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2"}]},` +
		`"spec":{"byName":{"a":{"apiGroup":"ipam.cluster.hypershift.openshift.io"}},` +
		`"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","name":"cluster.x-k8s.io"},` +
		`"other":{"apiGroup":"cluster.x-k8s.io"},` +
		`"workers":[{"ref":{"apiVersion":"bootstrap.cluster.hypershift.openshift.io/v1beta2"}}]}}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}

	for pointer, want := range map[string]ValueKind{
		"/spec/infrastructureRef/apiGroup":                              GroupValue,
		"/spec/workers/3/ref/apiVersion":                                APIVersionValue,
		"/spec/workers/-/ref/apiVersion":                                APIVersionValue,
		"/metadata/ownerReferences/0/apiVersion":                        APIVersionValue,
		"/metadata/annotations/cluster.x-k8s.io~1cloned-from-groupkind": GroupKindValue,
		"/spec/byName/anything/apiGroup":                                GroupValue,
	} {
		if got := n.Pointer(pointer); got == nil || got.Value != want {
			t.Errorf("Pointer(%q) = %+v, want value kind %d", pointer, got, want)
		}
	}
	for _, pointer := range []string{"/spec/other/apiGroup", "/metadata/labels/x", "spec", "/nope"} {
		if got := n.Pointer(pointer); got != nil && got.Value != NoValue {
			t.Errorf("Pointer(%q) = %+v, want nothing", pointer, got)
		}
	}
}
