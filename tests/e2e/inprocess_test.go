package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	endpointsdiscovery "k8s.io/apiserver/pkg/endpoints/discovery"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conversion"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openshift/hypershift-capi-proxy/install/crds"
)

// TestInProcessConversion stands for an older backend: the private MachinePool CRD is replaced by one that
// serves and stores only v1beta1 (no webhook), and a v1beta2 controller-runtime client works with
// MachinePools through the proxy anyway: discovery lists v1beta2, and get, list, watch, create, update,
// status, merge and JSON patches and delete are converted in the proxy with upstream's conversions. It
// shows what is stored (v1beta1 with the conversion data naming upstream groups), what managedFields hold
// in that mode (the backend's v1beta1 entries, passed through), that server-side apply is refused with a
// clear 415, and that a v1beta1 client sees the same object.
func TestInProcessConversion(t *testing.T) {
	ctx := context.Background()
	_, direct := clients(t)
	file := filepath.Join(env.Root, "apis", "private", "crds", "cluster.hypershift.openshift.io_machinepools.yaml")
	list, err := crds.Read(file)
	if err != nil {
		t.Fatal(err)
	}
	older := list[0].DeepCopy()
	for _, v := range older.Spec.Versions {
		if v.Name == "v1beta1" {
			v.Served, v.Storage, v.Deprecated, v.DeprecationWarning = true, true, false, nil
			older.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{v}
		}
	}
	older.Spec.Conversion = nil
	replaceCRD(t, direct, older)
	t.Cleanup(func() {
		replaceCRD(t, direct, nil)
		if err := proxy.InstallCRDs(context.Background(), file); err != nil {
			t.Errorf("reinstalling the MachinePool CRD: %v", err)
		}
	})

	c, _ := versionsClient(t)
	ns := namespace(t, c)
	mp := &clusterv1.MachinePool{
		ObjectMeta: metav1.ObjectMeta{Name: "mp1", Namespace: ns, Labels: map[string]string{clusterNameLabel: "c1"}},
		Spec: clusterv1.MachinePoolSpec{
			ClusterName: "c1", Replicas: ptr.To[int32](2), FailureDomains: []string{"us-east-1a"},
			Template: clusterv1.MachineTemplateSpec{Spec: clusterv1.MachineSpec{
				ClusterName:       "c1",
				Bootstrap:         clusterv1.Bootstrap{ConfigRef: ref(upstreamBoot, "KubeadmConfig", "mp1")},
				InfrastructureRef: ref(upstreamInfra, "AWSMachinePool", "mp1"),
				Version:           "v1.34.2",
				MinReadySeconds:   ptr.To[int32](0),
			}},
		},
	}
	created := mp.DeepCopy()
	// The proxy may still hold the view of what the backend served before the CRD changed: it reads
	// discovery again when the backend answers 404 for the resource.
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		err := c.Create(ctx, mp)
		if err == nil {
			return true, nil
		}
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			t.Logf("create, while the proxy catches up: %v", err)
			mp = created.DeepCopy()
			return false, nil
		}
		return false, err
	})
	if err != nil {
		t.Fatalf("creating a v1beta2 MachinePool through the proxy: %v", err)
	}

	t.Run("stored in v1beta1", func(t *testing.T) {
		stored := &unstructured.Unstructured{}
		stored.SetAPIVersion(privateCore + "/v1beta1")
		stored.SetKind("MachinePool")
		if err := direct.Get(ctx, client.ObjectKeyFromObject(mp), stored); err != nil {
			t.Fatal(err)
		}
		if got := fieldAt(stored.Object, []string{"spec", "template", "spec", "infrastructureRef", "apiVersion"}); got != privateInfra+"/v1beta2" {
			t.Errorf("stored infrastructureRef.apiVersion = %v", got)
		}
		data := stored.GetAnnotations()[conversion.DataAnnotation]
		if !strings.Contains(data, `"apiGroup":"infrastructure.cluster.x-k8s.io"`) || strings.Contains(data, "hypershift.openshift.io") {
			t.Errorf("stored conversion data must name upstream groups: %q", data)
		}
		for _, mf := range stored.GetManagedFields() {
			if mf.APIVersion != privateCore+"/v1beta1" {
				t.Errorf("stored managedFields entry of %s", mf.APIVersion)
			}
		}
	})

	t.Run("get", func(t *testing.T) {
		got := &clusterv1.MachinePool{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(mp), got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(created.Spec, got.Spec); diff != "" {
			t.Errorf("spec through the proxy (-created +got):\n%s", diff)
		}
		if _, ok := got.Annotations[conversion.DataAnnotation]; ok {
			t.Errorf("the v1beta2 object carries conversion data: %v", got.Annotations)
		}
		// managedFields: the backend's entries, in its version, passed through.
		if len(got.ManagedFields) == 0 {
			t.Fatal("no managedFields")
		}
		for _, mf := range got.ManagedFields {
			if mf.APIVersion != clusterv1beta1.GroupVersion.String() || mf.Operation != metav1.ManagedFieldsOperationUpdate {
				t.Errorf("managedFields entry %s %s %s, want an Update of %s", mf.Manager, mf.Operation, mf.APIVersion, clusterv1beta1.GroupVersion)
			}
		}
	})

	t.Run("status", func(t *testing.T) {
		got := &clusterv1.MachinePool{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(mp), got); err != nil {
			t.Fatal(err)
		}
		got.Status = clusterv1.MachinePoolStatus{Phase: "Provisioning", Replicas: ptr.To[int32](2), ReadyReplicas: ptr.To[int32](0),
			Initialization: clusterv1.MachinePoolInitializationStatus{InfrastructureProvisioned: ptr.To(true), BootstrapDataSecretCreated: ptr.To(false)},
			Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Waiting", Message: "",
				LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}}}
		// What upstream's conversions make of the status, stored in v1beta1: the same, but for the empty
		// deprecated v1beta1 status that v1beta1's fields without omitempty leave.
		want := upstreamRoundTrip(t, got).(*clusterv1.MachinePool).Status
		if err := c.Status().Update(ctx, got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got.Status); diff != "" {
			t.Errorf("status the update answered (-upstream +proxy):\n%s", diff)
		}
		again := &clusterv1.MachinePool{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(mp), again); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, again.Status); diff != "" {
			t.Errorf("status after a round trip through v1beta1 (-upstream +proxy):\n%s", diff)
		}
		// false, not unset: only the conversion data can tell, so it was stored with the status.
		if p := again.Status.Initialization.BootstrapDataSecretCreated; p == nil || *p {
			t.Errorf("bootstrapDataSecretCreated = %v, want false", p)
		}
	})

	wc, err := client.NewWithWatch(proxy.Config(env.AdminToken), client.Options{Scheme: versionsScheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(ctx, &clusterv1.MachinePoolList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatalf("watching v1beta2 MachinePools: %v", err)
	}
	defer w.Stop()

	t.Run("merge patch", func(t *testing.T) {
		got := &clusterv1.MachinePool{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(mp), got); err != nil {
			t.Fatal(err)
		}
		before := got.DeepCopy()
		got.Spec.Replicas = ptr.To[int32](3)
		got.Labels["patched"] = "merge"
		if err := c.Patch(ctx, got, client.MergeFrom(before)); err != nil {
			t.Fatal(err)
		}
		if *got.Spec.Replicas != 3 || got.Labels["patched"] != "merge" || got.Spec.Template.Spec.MinReadySeconds == nil {
			t.Errorf("patched MachinePool: %+v %v", got.Spec, got.Labels)
		}
	})

	t.Run("watch", func(t *testing.T) {
		timeout := time.After(30 * time.Second)
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatal("the watch ended")
				}
				if ev.Type == watch.Error {
					t.Fatalf("watch error: %v", ev.Object)
				}
				got, ok := ev.Object.(*clusterv1.MachinePool)
				if !ok {
					t.Fatalf("event object %T", ev.Object)
				}
				if ev.Type == watch.Modified && got.Labels["patched"] == "merge" {
					if *got.Spec.Replicas != 3 || got.Spec.Template.Spec.InfrastructureRef != created.Spec.Template.Spec.InfrastructureRef {
						t.Errorf("watched MachinePool: %+v", got.Spec)
					}
					return
				}
			case <-timeout:
				t.Fatal("no MODIFIED event for the merge patch")
			}
		}
	})

	t.Run("json patch and update", func(t *testing.T) {
		got := &clusterv1.MachinePool{ObjectMeta: metav1.ObjectMeta{Name: mp.Name, Namespace: ns}}
		patch := []byte(`[{"op":"test","path":"/spec/replicas","value":3},{"op":"replace","path":"/spec/replicas","value":4}]`)
		if err := c.Patch(ctx, got, client.RawPatch(types.JSONPatchType, patch)); err != nil {
			t.Fatal(err)
		}
		if *got.Spec.Replicas != 4 {
			t.Errorf("replicas after the JSON patch: %d", *got.Spec.Replicas)
		}
		failing := []byte(`[{"op":"test","path":"/spec/replicas","value":99}]`)
		if err := c.Patch(ctx, got, client.RawPatch(types.JSONPatchType, failing)); !apierrors.IsInvalid(err) && !isCode(err, 422) {
			t.Errorf("a failing JSON patch test: %v, want 422", err)
		}
		got.Annotations = map[string]string{"updated": "yes"}
		if err := c.Update(ctx, got); err != nil {
			t.Fatal(err)
		}
		again := &clusterv1.MachinePool{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(mp), again); err != nil {
			t.Fatal(err)
		}
		want := created.Spec.DeepCopy()
		want.Replicas = ptr.To[int32](4)
		if diff := cmp.Diff(*want, again.Spec); diff != "" || again.Annotations["updated"] != "yes" {
			t.Errorf("after patch and update (-want +got):\n%s%v", diff, again.Annotations)
		}
	})

	t.Run("list", func(t *testing.T) {
		l := &clusterv1.MachinePoolList{}
		if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(l.Items) != 1 || l.Items[0].Spec.Template.Spec.InfrastructureRef != created.Spec.Template.Spec.InfrastructureRef {
			t.Errorf("list: %+v", l.Items)
		}
	})

	t.Run("server-side apply is refused", func(t *testing.T) {
		apply := []byte(`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachinePool","metadata":{"name":"mp1","namespace":"` + ns + `"},"spec":{"replicas":5}}`)
		err := c.Patch(ctx, &clusterv1.MachinePool{ObjectMeta: metav1.ObjectMeta{Name: mp.Name, Namespace: ns}},
			client.RawPatch(types.ApplyPatchType, apply), client.FieldOwner("e2e"), client.ForceOwnership)
		if !apierrors.IsUnsupportedMediaType(err) || !strings.Contains(err.Error(), "server-side apply") ||
			!strings.Contains(err.Error(), "managedFields") {
			t.Errorf("server-side apply: %v, want a 415 that says why", err)
		}
	})

	t.Run("a v1beta1 client sees the same object", func(t *testing.T) {
		old := &clusterv1beta1.MachinePool{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(mp), old); err != nil {
			t.Fatal(err)
		}
		if *old.Spec.Replicas != 4 || old.Spec.Template.Spec.InfrastructureRef.APIVersion != upstreamInfra+"/v1beta2" {
			t.Errorf("v1beta1 MachinePool: %+v", old.Spec)
		}
	})

	t.Run("Table", func(t *testing.T) {
		// kubectl get: the backend's Table (plain application/json, like a list) comes with the rows'
		// objects converted; a client preferring the plain list by q gets the list.
		path := "/apis/cluster.x-k8s.io/v1beta2/namespaces/" + ns + "/machinepools?includeObject=Object"
		for accept, want := range map[string]string{
			"application/json;as=Table;v=v1;g=meta.k8s.io,application/json":       "Table",
			"application/json;as=Table;v=v1;g=meta.k8s.io;q=0.5,application/json": "MachinePoolList",
		} {
			data := viaProxy(t).mustDo(t, http.StatusOK, http.MethodGet, path, "", "Accept: "+accept)
			var got struct {
				Kind  string
				Items []struct{ APIVersion string }
				Rows  []struct{ Object struct{ APIVersion string } }
			}
			if err := json.Unmarshal(data, &got); err != nil || got.Kind != want {
				t.Errorf("Accept %q: a %s, want a %s: %.300s", accept, got.Kind, want, data)
				continue
			}
			var versions []string
			for _, i := range got.Items {
				versions = append(versions, i.APIVersion)
			}
			for _, r := range got.Rows {
				versions = append(versions, r.Object.APIVersion)
			}
			if len(versions) != 1 || versions[0] != clusterv1.GroupVersion.String() {
				t.Errorf("Accept %q: objects at %v", accept, versions)
			}
		}
	})

	t.Run("discovery", func(t *testing.T) {
		dc, err := discovery.NewDiscoveryClientForConfig(proxy.Config(env.AdminToken))
		if err != nil {
			t.Fatal(err)
		}
		resources, err := dc.ServerResourcesForGroupVersion(clusterv1.GroupVersion.String())
		if err != nil {
			t.Fatal(err)
		}
		if !hasResource(resources.APIResources, "machinepools") || !hasResource(resources.APIResources, "machinepools/status") {
			t.Errorf("legacy discovery of %s lacks machinepools: %v", clusterv1.GroupVersion, names(resources.APIResources))
		}
		// The backend stores v1beta1: every version shows that storage version's hash, in the upstream group.
		want := endpointsdiscovery.StorageVersionHash(clusterv1.GroupVersion.Group, "v1beta1", "MachinePool")
		for _, gv := range []string{clusterv1.GroupVersion.String(), clusterv1beta1.GroupVersion.String()} {
			l, err := dc.ServerResourcesForGroupVersion(gv)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range l.APIResources {
				if r.Name == "machinepools" && r.StorageVersionHash != want {
					t.Errorf("%s machinepools: storageVersionHash %q, want %q", gv, r.StorageVersionHash, want)
				}
			}
		}
		raw, err := dc.RESTClient().Get().AbsPath("/apis").SetHeader("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		agg := &apidiscoveryv2.APIGroupDiscoveryList{}
		if err := json.Unmarshal(raw, agg); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, g := range agg.Items {
			for _, v := range g.Versions {
				for _, r := range v.Resources {
					if g.Name == clusterv1.GroupVersion.Group && v.Version == "v1beta2" && r.Resource == "machinepools" {
						found = r.ResponseKind != nil && r.ResponseKind.Version == "v1beta2"
					}
				}
			}
		}
		if !found {
			t.Error("aggregated discovery lacks cluster.x-k8s.io/v1beta2 machinepools")
		}
	})

	t.Run("delete", func(t *testing.T) {
		if err := c.Delete(ctx, &clusterv1.MachinePool{ObjectMeta: metav1.ObjectMeta{Name: mp.Name, Namespace: ns}}); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(mp), &clusterv1.MachinePool{}); !apierrors.IsNotFound(err) {
			t.Errorf("after delete: %v", err)
		}
	})
}

// upstreamRoundTrip converts a hub object to its v1beta1 spoke and back with upstream's conversions.
func upstreamRoundTrip(t *testing.T, hub client.Object) client.Object {
	t.Helper()
	src := hub.DeepCopyObject().(client.Object)
	src.GetObjectKind().SetGroupVersionKind(gvkOf(t, hub))
	spokes := map[string]func() client.Object{
		"MachinePool": func() client.Object { return &clusterv1beta1.MachinePool{} },
	}
	spoke := spokes[gvkOf(t, hub).Kind]()
	r := spokeRoute(t, spoke)
	if err := r.FromHub(context.Background(), src, spoke); err != nil {
		t.Fatal(err)
	}
	back := reflect.New(reflect.TypeOf(hub).Elem()).Interface().(client.Object)
	if err := r.ToHub(context.Background(), spoke, back); err != nil {
		t.Fatal(err)
	}
	return back
}

// replaceCRD deletes the CRD of crd's name (MachinePools by default) and waits until it is gone, then
// installs crd (nil: nothing) directly, as an older installation would have.
func replaceCRD(t *testing.T, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	ctx := context.Background()
	name := "machinepools." + privateCore
	if crd != nil {
		name = crd.Name
	}
	existing := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Delete(ctx, existing); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(existing), existing)
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("CRD %s not deleted: %v", name, err)
	}
	if crd != nil {
		if err := crds.Apply(ctx, c, []*apiextensionsv1.CustomResourceDefinition{crd}, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
}

func hasResource(rs []metav1.APIResource, name string) bool {
	for _, r := range rs {
		if r.Name == name {
			return true
		}
	}
	return false
}

func names(rs []metav1.APIResource) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

func isCode(err error, code int32) bool {
	var s apierrors.APIStatus
	return errors.As(err, &s) && s.Status().Code == code
}
