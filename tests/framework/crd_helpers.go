package framework

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NewCRD is a minimal valid CRD named <plural>.<group>: namespaced, one served and stored version v1
// with an object schema, kind the plural capitalized.
func NewCRD(name string) *apiextensionsv1.CustomResourceDefinition {
	plural, group, _ := strings.Cut(name, ".")
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: strings.ToUpper(plural[:1]) + plural[1:]},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}}},
	}
}

// CreateUntilEndInput are objects to create for one test.
type CreateUntilEndInput struct {
	// Client creates them: straight on the backend (Env.AdminClient), or through a proxy.
	Client client.Client
	// Objects are created in order.
	Objects []client.Object
}

// CreateUntilEnd creates the objects and deletes them when the test ends (one already gone is no
// failure). A create that fails stops the test.
func CreateUntilEnd(ctx context.Context, t testing.TB, in CreateUntilEndInput) {
	t.Helper()
	for _, obj := range in.Objects {
		if err := in.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := in.Client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s: %v", obj.GetName(), err)
			}
		})
	}
}

// CreateCRDsInput are CRDs (NewCRD) to create for one test.
type CreateCRDsInput struct {
	// Client creates them, straight on the backend.
	Client client.Client
	// Names are the CRDs' names, <plural>.<group>.
	Names []string
	// Labels are set on each.
	Labels map[string]string
}

// CreateCRDs creates NewCRD(name) labelled Labels for every name, and deletes them when the test ends
// (CreateUntilEnd). It does not wait for them to be Established.
func CreateCRDs(ctx context.Context, t testing.TB, in CreateCRDsInput) {
	t.Helper()
	var objs []client.Object
	for _, name := range in.Names {
		c := NewCRD(name)
		c.Labels = in.Labels
		objs = append(objs, c)
	}
	CreateUntilEnd(ctx, t, CreateUntilEndInput{Client: in.Client, Objects: objs})
}

// LabelUntilEndInput is a label to set on existing cluster-scoped objects for one test.
type LabelUntilEndInput struct {
	// Client patches them, straight on the backend.
	Client client.Client
	// NewObject makes an empty object of the kind named name (&apiextensionsv1.CustomResourceDefinition{...}).
	NewObject func(name string) client.Object
	// Key and Value are the label's.
	Key, Value string
	// Names are the objects'.
	Names []string
}

// LabelUntilEnd sets the label on every object with a JSON merge patch, and removes it (a patch to
// null) when the test ends. A patch that fails stops the test.
func LabelUntilEnd(ctx context.Context, t testing.TB, in LabelUntilEndInput) {
	t.Helper()
	for _, name := range in.Names {
		set := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+in.Key+`":"`+in.Value+`"}}}`))
		if err := in.Client.Patch(ctx, in.NewObject(name), set); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			unset := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+in.Key+`":null}}}`))
			if err := in.Client.Patch(ctx, in.NewObject(name), unset); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("removing the label of %s: %v", name, err)
			}
		})
	}
}

// ExpectCRDsInput is what the backend must hold of some CRDs.
type ExpectCRDsInput struct {
	// Reader reads the CRDs straight from the backend.
	Reader client.Reader
	// Intact CRDs exist and are not being deleted.
	Intact []string
	// Deleted CRDs are gone, or being deleted (a deletionTimestamp: finalizers may hold them a while).
	Deleted []string
	// Absent CRDs do not exist (were never created).
	Absent []string
}

// ExpectCRDs fails the test (t.Errorf) for every CRD that is not as wanted.
func ExpectCRDs(ctx context.Context, t testing.TB, in ExpectCRDsInput) {
	t.Helper()
	for _, name := range in.Intact {
		c := &apiextensionsv1.CustomResourceDefinition{}
		if err := in.Reader.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
			t.Errorf("CRD %s: %v", name, err)
		} else if c.DeletionTimestamp != nil {
			t.Errorf("CRD %s is being deleted", name)
		}
	}
	for _, name := range in.Deleted {
		c := &apiextensionsv1.CustomResourceDefinition{}
		if err := in.Reader.Get(ctx, client.ObjectKey{Name: name}, c); err == nil && c.DeletionTimestamp == nil {
			t.Errorf("CRD %s was not deleted", name)
		} else if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("CRD %s: %v", name, err)
		}
	}
	for _, name := range in.Absent {
		if err := in.Reader.Get(ctx, client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
			t.Errorf("CRD %s: %v, want it never created", name, err)
		}
	}
}
