package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// crdScheme knows CustomResourceDefinitions, for controller-runtime clients of the CRDs.
var crdScheme = runtime.NewScheme()

func init() {
	if err := apiextensionsv1.AddToScheme(crdScheme); err != nil {
		panic(err)
	}
}

// TestCustomResourceDefinitions covers the CRDs of the mapped groups: CAPI reads its contract labels from
// them by upstream name (full GETs, metadata-only watches asked in protobuf first), and its CRD migrator
// patches an annotation and status.storedVersions. The proxy serves HyperShift's private CRD under the
// upstream name and hides the platform's own upstream CRDs; changes to a private CRD's group, names or
// schema are refused.
func TestCustomResourceDefinitions(t *testing.T) {
	ctx := context.Background()
	rp, rd := viaProxy(t), direct(t)
	const machinesCRD = "machines.cluster.x-k8s.io"
	privateMachinesCRD := "machines." + privateCore

	t.Run("GET by upstream name is the private CRD but for its names", func(t *testing.T) {
		got := rp.mustDo(t, http.StatusOK, http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+machinesCRD, "")
		stored := rd.mustDo(t, http.StatusOK, http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+privateMachinesCRD, "")
		// The private CRD carries clash-free shortNames and categories; clients see upstream's.
		want := strings.NewReplacer(`["hsma"]`, `["ma"]`, `["hypershift-cluster-api"]`, `["cluster-api"]`).Replace(string(stored))
		sameButGroups(t, "CRD", got, []byte(want))
	})

	t.Run("contract labels", func(t *testing.T) {
		cs, err := apiextensionsclient.NewForConfig(proxy.Config(env.AdminToken))
		if err != nil {
			t.Fatal(err)
		}
		got, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "kubeadmconfigs.bootstrap.cluster.x-k8s.io", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Labels["cluster.x-k8s.io/v1beta2"] != "v1beta2" || got.Spec.Group != "bootstrap.cluster.x-k8s.io" || got.Spec.Names.Kind != "KubeadmConfig" {
			t.Errorf("kubeadmconfigs CRD through the proxy: labels %v, group %s", got.Labels, got.Spec.Group)
		}
	})

	t.Run("the list shows each private CRD once, under its upstream name, and hides the platform's", func(t *testing.T) {
		cs, err := apiextensionsclient.NewForConfig(proxy.Config(env.AdminToken))
		if err != nil {
			t.Fatal(err)
		}
		list, err := cs.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for {
			for _, c := range list.Items {
				seen[c.Name]++
				if strings.Contains(c.Name, "hypershift") || strings.Contains(c.Spec.Group, "hypershift") {
					t.Errorf("the list shows %s (group %s)", c.Name, c.Spec.Group)
				}
			}
			if list.Continue == "" {
				break
			}
			if list, err = cs.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{Limit: 5, Continue: list.Continue}); err != nil {
				t.Fatal(err)
			}
		}
		private := &apiextensionsv1.CustomResourceDefinition{}
		directCRDs := directCRDClient(t)
		if err := directCRDs.Get(ctx, client.ObjectKey{Name: privateMachinesCRD}, private); err != nil {
			t.Fatal(err)
		}
		if seen[machinesCRD] != 1 {
			t.Errorf("%s listed %d times", machinesCRD, seen[machinesCRD])
		}
	})

	t.Run("metadata-only reads, as CAPI's CRD cache does them", func(t *testing.T) {
		mc, err := metadata.NewForConfig(proxy.Config(env.AdminToken))
		if err != nil {
			t.Fatal(err)
		}
		crds := mc.Resource(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
		got, err := crds.Get(ctx, "kubeadmconfigs.bootstrap.cluster.x-k8s.io", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "kubeadmconfigs.bootstrap.cluster.x-k8s.io" || got.Labels["cluster.x-k8s.io/v1beta2"] != "v1beta2" {
			t.Errorf("metadata-only GET: %s %v", got.Name, got.Labels)
		}

		// A controller-runtime cache of PartialObjectMetadata CRDs (a metadata-only informer, protobuf first).
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		informers, err := cache.New(proxy.Config(env.AdminToken), cache.Options{Scheme: crdScheme})
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = informers.Start(ctx) }()
		partial := &metav1.PartialObjectMetadata{}
		partial.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			// Until the cache has started, Get fails; then it waits for the informer to sync.
			return informers.Get(ctx, client.ObjectKey{Name: "kubeadmcontrolplanes.controlplane.cluster.x-k8s.io"}, partial) == nil, nil
		}); err != nil {
			t.Fatalf("the metadata-only cache never held the kubeadmcontrolplanes CRD: %v", err)
		}
		if partial.Labels["cluster.x-k8s.io/v1beta2"] != "v1beta2" {
			t.Errorf("cached CRD labels: %v", partial.Labels)
		}
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
		if err := informers.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		for _, c := range list.Items {
			if strings.Contains(c.Name, "hypershift") {
				t.Errorf("the cache holds %s", c.Name)
			}
		}
	})

	t.Run("CAPI's CRD migrator writes reach the private CRD", func(t *testing.T) {
		viaProxyClient, err := client.New(proxy.Config(env.AdminToken), client.Options{Scheme: crdScheme})
		if err != nil {
			t.Fatal(err)
		}
		// A watch of the CRD by name, to see the write as a MODIFIED event.
		watchCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		_, events := openWatch(watchCtx, t, rp, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?watch=1&fieldSelector=metadata.name%3D"+machinesCRD)
		if ev := nextEvent(t, events); ev.Type != "ADDED" || field(ev.Object, "metadata.name") != machinesCRD || field(ev.Object, "spec.group") != "cluster.x-k8s.io" {
			t.Fatalf("watch by name: %s %v", ev.Type, field(ev.Object, "metadata.name"))
		}

		c := &apiextensionsv1.CustomResourceDefinition{}
		if err := viaProxyClient.Get(ctx, client.ObjectKey{Name: machinesCRD}, c); err != nil {
			t.Fatal(err)
		}
		original := c.DeepCopy()
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations["crd-migration.cluster.x-k8s.io/observed-generation"] = "1"
		// A real CAPI manager started by an earlier test ran its CRD migrator already, which wrote the
		// same: make sure the patch changes the CRD, so that the watch sees it.
		c.Annotations["e2e.example.com/touched"] = string(uuid.NewUUID())
		if err := viaProxyClient.Patch(ctx, c, client.MergeFrom(original)); err != nil {
			t.Fatal(err)
		}
		original = c.DeepCopy()
		c.Status.StoredVersions = []string{"v1beta2"}
		if err := viaProxyClient.Status().Patch(ctx, c, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
			t.Fatalf("status patch with optimistic lock: %v", err)
		}
		if c.Name != machinesCRD {
			t.Errorf("the patch answered %s", c.Name)
		}
		stored := &apiextensionsv1.CustomResourceDefinition{}
		if err := directCRDClient(t).Get(ctx, client.ObjectKey{Name: privateMachinesCRD}, stored); err != nil {
			t.Fatal(err)
		}
		if stored.Annotations["crd-migration.cluster.x-k8s.io/observed-generation"] != "1" || strings.Join(stored.Status.StoredVersions, ",") != "v1beta2" {
			t.Errorf("stored: annotations %v, storedVersions %v", stored.Annotations, stored.Status.StoredVersions)
		}
		if ev := nextEvent(t, events); ev.Type != "MODIFIED" || field(ev.Object, "metadata.name") != machinesCRD {
			t.Errorf("watch event after the patch: %s %v", ev.Type, field(ev.Object, "metadata.name"))
		}

		// A read-modify-write update that changes only metadata goes through.
		if err := viaProxyClient.Get(ctx, client.ObjectKey{Name: machinesCRD}, c); err != nil {
			t.Fatal(err)
		}
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels["e2e"] = "updated"
		if err := viaProxyClient.Update(ctx, c); err != nil {
			t.Fatalf("update of metadata only: %v", err)
		}
	})

	t.Run("changes to group, names or schema are refused", func(t *testing.T) {
		viaProxyClient, err := client.New(proxy.Config(env.AdminToken), client.Options{Scheme: crdScheme})
		if err != nil {
			t.Fatal(err)
		}
		c := &apiextensionsv1.CustomResourceDefinition{}
		if err := viaProxyClient.Get(ctx, client.ObjectKey{Name: machinesCRD}, c); err != nil {
			t.Fatal(err)
		}
		for name, write := range map[string]func() error{
			"merge patch of spec.group": func() error {
				return viaProxyClient.Patch(ctx, c.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"group":"cluster.x-k8s.io"}}`)))
			},
			"json patch of the names": func() error {
				return viaProxyClient.Patch(ctx, c.DeepCopy(), client.RawPatch(types.JSONPatchType, []byte(`[{"op":"replace","path":"/spec/names/shortNames","value":["m"]}]`)))
			},
			"update of the schema": func() error {
				changed := c.DeepCopy()
				changed.Spec.Versions[0].Schema.OpenAPIV3Schema.Description = "changed"
				return viaProxyClient.Update(ctx, changed)
			},
			"delete": func() error { return viaProxyClient.Delete(ctx, c.DeepCopy()) },
			"create": func() error {
				return viaProxyClient.Create(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "widgets.cluster.x-k8s.io"},
					Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "cluster.x-k8s.io", Scope: apiextensionsv1.NamespaceScoped,
						Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
						Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true, Schema: c.Spec.Versions[0].Schema}}}})
			},
		} {
			err := write()
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "private") {
				t.Errorf("%s: %v, want 403 Forbidden explaining why", name, err)
			}
		}
		stored := &apiextensionsv1.CustomResourceDefinition{}
		if err := directCRDClient(t).Get(ctx, client.ObjectKey{Name: privateMachinesCRD}, stored); err != nil {
			t.Fatal(err)
		}
		if stored.Spec.Group != privateCore || stored.DeletionTimestamp != nil {
			t.Errorf("the private CRD changed: group %s, deleting %v", stored.Spec.Group, stored.DeletionTimestamp)
		}
	})

	t.Run("an upstream-named CRD of a mapped group without a route is hidden", func(t *testing.T) {
		// As a platform provider's CRD would be: present on the backend, never seen through the proxy.
		hidden := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "gadgets.infrastructure.cluster.x-k8s.io"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: upstreamInfra, Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Kind: "Gadget"},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}}}}
		if err := directCRDClient(t).Create(ctx, hidden); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		resp, _ := rp.do(t, http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"+hidden.Name, "")
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET of a hidden CRD: %d, want 404", resp.StatusCode)
		}
		var list apiextensionsv1.CustomResourceDefinitionList
		if err := json.Unmarshal(rp.mustDo(t, http.StatusOK, http.MethodGet, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", ""), &list); err != nil {
			t.Fatal(err)
		}
		for _, c := range list.Items {
			if c.Name == hidden.Name {
				t.Errorf("the list shows the hidden CRD")
			}
		}
	})
}

func directCRDClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(env.DirectConfig(env.AdminToken), client.Options{Scheme: crdScheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
