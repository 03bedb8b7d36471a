package crdcache_test

import (
	"context"
	"testing"
	"time"

	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/openshift/hypershift-capi-proxy/proxy/crdcache"
)

func crd(name string, labels map[string]string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
	}
}

// TestCache lists, then follows the watch: a CRD created later is found without another list.
func TestCache(t *testing.T) {
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	client := metadatafake.NewSimpleMetadataClient(scheme, crd("hostedcontrolplanes.hypershift.openshift.io", map[string]string{"cluster.x-k8s.io/v1beta2": "v1beta1"}))
	c := crdcache.NewForClient(client)
	if c.Ready(nil) == nil {
		t.Error("ready before the first list")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.Start(ctx)
	if !c.WaitForSync(ctx) {
		t.Fatal("not synced")
	}
	if err := c.Ready(nil); err != nil {
		t.Error(err)
	}
	got, ok := c.Get("hostedcontrolplanes.hypershift.openshift.io")
	if !ok || got.GetLabels()["cluster.x-k8s.io/v1beta2"] != "v1beta1" {
		t.Fatalf("Get = %v, %v", got, ok)
	}
	if _, ok := c.Get("missing.example.com"); ok {
		t.Error("found a CRD that does not exist")
	}
	later := crd("externalinfraclusters.hypershift.openshift.io", map[string]string{"cluster.x-k8s.io/v1beta1": "v1beta1"})
	if _, err := client.Resource(crdcache.Resource).(metadatafake.MetadataClient).CreateFake(later, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, ok := c.Get(later.Name)
		return ok, nil
	})
	if err != nil {
		t.Fatal("a CRD created after the list never reached the cache")
	}
}

// TestCacheDenied: an identity the backend refuses the list is ready (nothing to wait for), and finds no
// CRD.
func TestCacheDenied(t *testing.T) {
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	client := metadatafake.NewSimpleMetadataClient(scheme)
	client.PrependReactor("list", "customresourcedefinitions", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, "", errors.New("alice may not"))
	})
	c := crdcache.NewForClient(client)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.Start(ctx)
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return c.Ready(nil) == nil, nil
	})
	if err != nil {
		t.Fatal("an identity refused the list never became ready")
	}
	if _, ok := c.Get("hostedcontrolplanes.hypershift.openshift.io"); ok {
		t.Error("found a CRD")
	}
}
