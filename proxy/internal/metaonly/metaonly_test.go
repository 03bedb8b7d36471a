package metaonly

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestNameAndLabels(t *testing.T) {
	in := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            "machines.cluster.hypershift.openshift.io",
			UID:             "0f6c1d8e-3b1c-4b55-9a53-2e1f3a1d9b7e",
			ResourceVersion: "4711",
			Generation:      3,
			Labels:          map[string]string{"cluster.x-k8s.io/v1beta2": "v1beta2"},
			Annotations:     map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"spec":{}}`},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}},
			Finalizers:      []string{"customresourcecleanup.apiextensions.k8s.io"},
		},
	}
	want := &metav1.PartialObjectMetadata{
		TypeMeta: in.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:            in.Name,
			UID:             in.UID,
			ResourceVersion: in.ResourceVersion,
			Labels:          in.Labels,
		},
	}
	transform := NameAndLabels()
	got, err := transform(in)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("transformed (-want +got):\n%s", diff)
	}
	again, err := transform(got)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, again); diff != "" {
		t.Errorf("transformed twice (-want +got):\n%s", diff)
	}

	// Anything else, such as a tombstone, passes as it is.
	tombstone := cache.DeletedFinalStateUnknown{Key: in.Name, Obj: in}
	if got, err := transform(tombstone); err != nil || !cmp.Equal(got, tombstone) {
		t.Errorf("tombstone: %v, %v", got, err)
	}
}
