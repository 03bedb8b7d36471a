package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	privclusterv1 "github.com/openshift/hypershift-capi-proxy/apis/private/core/v1beta2"
)

const (
	privateCore      = "cluster.hypershift.openshift.io"
	privateInfra     = "infrastructure.cluster.hypershift.openshift.io"
	privateBoot      = "bootstrap.cluster.hypershift.openshift.io"
	upstreamInfra    = "infrastructure.cluster.x-k8s.io"
	upstreamBoot     = "bootstrap.cluster.x-k8s.io"
	clusterNameLabel = "cluster.x-k8s.io/cluster-name"
	machineFinalizer = "machine.cluster.x-k8s.io"
)

// clients returns a controller-runtime client on the upstream CAPI types that talks only to the proxy,
// and one on the private types that talks directly to the apiserver.
func clients(t *testing.T) (client.WithWatch, client.Client) {
	t.Helper()
	viaProxy, err := client.NewWithWatch(proxy.Config(env.AdminToken), client.Options{Scheme: upstreamScheme})
	if err != nil {
		t.Fatal(err)
	}
	direct, err := client.New(env.DirectConfig(env.AdminToken), client.Options{Scheme: privateScheme})
	if err != nil {
		t.Fatal(err)
	}
	return viaProxy, direct
}

func namespace(t *testing.T, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating a namespace through the proxy: %v", err)
	}
	return ns.Name
}

func ref(group, kind, name string) clusterv1.ContractVersionedObjectReference {
	return clusterv1.ContractVersionedObjectReference{APIGroup: group, Kind: kind, Name: name}
}

func machineSpec(cluster, name string) clusterv1.MachineSpec {
	return clusterv1.MachineSpec{
		ClusterName:       cluster,
		Bootstrap:         clusterv1.Bootstrap{ConfigRef: ref(upstreamBoot, "KubeadmConfig", name)},
		InfrastructureRef: ref(upstreamInfra, "DockerMachine", name),
	}
}

func owner(obj client.Object, kind string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: kind, Name: obj.GetName(), UID: obj.GetUID()}
}

// TestCAPIObjectsThroughTheProxy creates a Cluster, a MachineDeployment, a MachineSet and Machines
// through the proxy, reads, lists, patches, updates status and deletes them, and proves from the
// apiserver directly that everything is stored in the private groups with every reference rewritten,
// while label keys and finalizers that look like a group are untouched.
func TestCAPIObjectsThroughTheProxy(t *testing.T) {
	ctx := context.Background()
	c, direct := clients(t)
	ns := namespace(t, c)

	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: ns},
		Spec: clusterv1.ClusterSpec{
			InfrastructureRef: ref(upstreamInfra, "DockerCluster", "c1"),
			ControlPlaneRef:   ref("controlplane.cluster.x-k8s.io", "KubeadmControlPlane", "c1"),
		},
	}
	mustCreate(t, c, cluster)
	if cluster.UID == "" || cluster.APIVersion != "" && cluster.APIVersion != clusterv1.GroupVersion.String() {
		t.Fatalf("created Cluster came back as %q uid %q", cluster.APIVersion, cluster.UID)
	}

	md := &clusterv1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "md1", Namespace: ns, Labels: map[string]string{clusterNameLabel: "c1"},
			OwnerReferences: []metav1.OwnerReference{owner(cluster, "Cluster")}},
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: "c1", Replicas: ptr.To[int32](2),
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{clusterNameLabel: "c1"}},
			Template: clusterv1.MachineTemplateSpec{
				ObjectMeta: clusterv1.ObjectMeta{Labels: map[string]string{clusterNameLabel: "c1"}},
				Spec:       machineSpec("c1", "md1"),
			},
		},
	}
	mustCreate(t, c, md)
	ms := &clusterv1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: "ms1", Namespace: ns, Labels: map[string]string{clusterNameLabel: "c1"},
			OwnerReferences: []metav1.OwnerReference{owner(md, "MachineDeployment")}},
		Spec: clusterv1.MachineSetSpec{
			ClusterName: "c1", Replicas: ptr.To[int32](3),
			Selector: md.Spec.Selector, Template: md.Spec.Template,
		},
	}
	mustCreate(t, c, ms)
	var machines []*clusterv1.Machine
	for i := 0; i < 3; i++ {
		m := &clusterv1.Machine{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("m%d", i), Namespace: ns,
				Labels:          map[string]string{clusterNameLabel: "c1"},
				Finalizers:      []string{machineFinalizer},
				OwnerReferences: []metav1.OwnerReference{owner(ms, "MachineSet")}},
			Spec: machineSpec("c1", fmt.Sprintf("m%d", i)),
		}
		mustCreate(t, c, m)
		machines = append(machines, m)
	}

	t.Run("get", func(t *testing.T) {
		got := &clusterv1.Machine{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(machines[0]), got); err != nil {
			t.Fatal(err)
		}
		if got.Spec.InfrastructureRef.APIGroup != upstreamInfra || got.Spec.Bootstrap.ConfigRef.APIGroup != upstreamBoot {
			t.Errorf("references not translated back: %+v", got.Spec)
		}
		if got.OwnerReferences[0].APIVersion != clusterv1.GroupVersion.String() {
			t.Errorf("ownerReference = %q, want upstream", got.OwnerReferences[0].APIVersion)
		}
	})

	t.Run("stored in the private groups", func(t *testing.T) {
		m := &privclusterv1.Machine{}
		if err := direct.Get(ctx, client.ObjectKeyFromObject(machines[0]), m); err != nil {
			t.Fatalf("reading the private Machine directly: %v", err)
		}
		if m.Spec.InfrastructureRef.APIGroup != privateInfra || m.Spec.Bootstrap.ConfigRef.APIGroup != privateBoot {
			t.Errorf("stored references: %+v", m.Spec)
		}
		if got := m.OwnerReferences[0].APIVersion; got != privateCore+"/v1beta2" {
			t.Errorf("stored ownerReference apiVersion = %q", got)
		}
		if m.Labels[clusterNameLabel] != "c1" || len(m.Finalizers) != 1 || m.Finalizers[0] != machineFinalizer {
			t.Errorf("label keys or finalizers changed: %v %v", m.Labels, m.Finalizers)
		}
		for _, mf := range m.ManagedFields {
			if !strings.HasPrefix(mf.APIVersion, privateCore+"/") {
				t.Errorf("managedFields apiVersion %q", mf.APIVersion)
			}
		}
		storedMD := &privclusterv1.MachineDeployment{}
		if err := direct.Get(ctx, client.ObjectKeyFromObject(md), storedMD); err != nil {
			t.Fatal(err)
		}
		if storedMD.Spec.Template.Spec.InfrastructureRef.APIGroup != privateInfra || storedMD.OwnerReferences[0].APIVersion != privateCore+"/v1beta2" {
			t.Errorf("stored MachineDeployment: %+v %+v", storedMD.Spec.Template.Spec, storedMD.OwnerReferences)
		}
		storedCluster := &privclusterv1.Cluster{}
		if err := direct.Get(ctx, client.ObjectKeyFromObject(cluster), storedCluster); err != nil {
			t.Fatal(err)
		}
		if storedCluster.Spec.ControlPlaneRef.APIGroup != "controlplane.cluster.hypershift.openshift.io" {
			t.Errorf("stored Cluster controlPlaneRef: %+v", storedCluster.Spec.ControlPlaneRef)
		}
	})

	t.Run("list with pagination", func(t *testing.T) {
		var names []string
		list := &clusterv1.MachineList{}
		opts := []client.ListOption{client.InNamespace(ns), client.Limit(2)}
		if err := c.List(ctx, list, opts...); err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 2 || list.Continue == "" {
			t.Fatalf("first page: %d items, continue %q", len(list.Items), list.Continue)
		}
		for _, m := range list.Items {
			names = append(names, m.Name)
		}
		if err := c.List(ctx, list, append(opts, client.Continue(list.Continue))...); err != nil {
			t.Fatal(err)
		}
		for _, m := range list.Items {
			names = append(names, m.Name)
			if m.Spec.InfrastructureRef.APIGroup != upstreamInfra {
				t.Errorf("list item %s: %+v", m.Name, m.Spec.InfrastructureRef)
			}
		}
		if strings.Join(names, ",") != "m0,m1,m2" {
			t.Errorf("pages gave %v", names)
		}
	})

	t.Run("merge patch", func(t *testing.T) {
		before := md.DeepCopy()
		md.Labels["e2e"] = "patched"
		md.Spec.Template.Spec.InfrastructureRef = ref(upstreamInfra, "DockerMachineTemplate", "md1-v2")
		if err := c.Patch(ctx, md, client.MergeFrom(before)); err != nil {
			t.Fatal(err)
		}
		if md.Spec.Template.Spec.InfrastructureRef.APIGroup != upstreamInfra || md.Labels["e2e"] != "patched" {
			t.Errorf("patched MachineDeployment came back as %+v", md.Spec.Template.Spec.InfrastructureRef)
		}
		stored := &privclusterv1.MachineDeployment{}
		if err := direct.Get(ctx, client.ObjectKeyFromObject(md), stored); err != nil {
			t.Fatal(err)
		}
		if r := stored.Spec.Template.Spec.InfrastructureRef; r.APIGroup != privateInfra || r.Name != "md1-v2" {
			t.Errorf("stored after merge patch: %+v", r)
		}
	})

	t.Run("json patch", func(t *testing.T) {
		patch := []byte(`[{"op":"replace","path":"/spec/infrastructureRef","value":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"DockerMachine","name":"m1-v2"}},
			{"op":"add","path":"/metadata/ownerReferences/-","value":{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","name":"c1","uid":"` + string(cluster.UID) + `"}}]`)
		m := machines[1]
		if err := c.Patch(ctx, m, client.RawPatch(types.JSONPatchType, patch)); err != nil {
			t.Fatal(err)
		}
		if m.Spec.InfrastructureRef.APIGroup != upstreamInfra || m.Spec.InfrastructureRef.Name != "m1-v2" {
			t.Errorf("patched Machine came back as %+v", m.Spec.InfrastructureRef)
		}
		stored := &privclusterv1.Machine{}
		if err := direct.Get(ctx, client.ObjectKeyFromObject(m), stored); err != nil {
			t.Fatal(err)
		}
		if stored.Spec.InfrastructureRef.APIGroup != privateInfra || stored.OwnerReferences[1].APIVersion != privateCore+"/v1beta2" {
			t.Errorf("stored after json patch: %+v %+v", stored.Spec.InfrastructureRef, stored.OwnerReferences)
		}
	})

	t.Run("update and status", func(t *testing.T) {
		m := machines[2]
		m.Spec.ProviderID = "docker:///m2"
		if err := c.Update(ctx, m); err != nil {
			t.Fatal(err)
		}
		m.Status.Phase = string(clusterv1.MachinePhaseProvisioning)
		m.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
		if err := c.Status().Update(ctx, m); err != nil {
			t.Fatalf("status update: %v", err)
		}
		stored := &privclusterv1.Machine{}
		if err := direct.Get(ctx, client.ObjectKeyFromObject(m), stored); err != nil {
			t.Fatal(err)
		}
		if stored.Status.Phase != "Provisioning" || stored.Spec.ProviderID != "docker:///m2" || stored.Spec.InfrastructureRef.APIGroup != privateInfra {
			t.Errorf("stored after update/status: phase %q providerID %q ref %+v", stored.Status.Phase, stored.Spec.ProviderID, stored.Spec.InfrastructureRef)
		}
	})

	t.Run("watch", func(t *testing.T) {
		w, err := c.Watch(ctx, &clusterv1.MachineList{}, client.InNamespace(ns), client.MatchingLabels{"e2e-watch": "yes"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		m := &clusterv1.Machine{
			ObjectMeta: metav1.ObjectMeta{Name: "watched", Namespace: ns, Labels: map[string]string{"e2e-watch": "yes"}},
			Spec:       machineSpec("c1", "watched"),
		}
		mustCreate(t, c, m)
		before := m.DeepCopy()
		m.Labels["step"] = "2"
		if err := c.Patch(ctx, m, client.MergeFrom(before)); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, m); err != nil {
			t.Fatal(err)
		}
		for _, want := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted} {
			select {
			case ev := <-w.ResultChan():
				got, ok := ev.Object.(*clusterv1.Machine)
				if ev.Type != want || !ok {
					t.Fatalf("event %s %T, want %s of a Machine: %+v", ev.Type, ev.Object, want, ev.Object)
				}
				if got.Spec.InfrastructureRef.APIGroup != upstreamInfra {
					t.Errorf("%s event: reference %+v", ev.Type, got.Spec.InfrastructureRef)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("no %s event within 20s", want)
			}
		}
	})

	t.Run("ownerReferences on a Secret and garbage collection", func(t *testing.T) {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "c1-kubeconfig", Namespace: ns,
			OwnerReferences: []metav1.OwnerReference{owner(cluster, "Cluster")}}}
		mustCreate(t, c, secret)
		if secret.OwnerReferences[0].APIVersion != clusterv1.GroupVersion.String() {
			t.Errorf("Secret ownerReference came back as %q", secret.OwnerReferences[0].APIVersion)
		}
		stored := &corev1.Secret{}
		if err := direct.Get(ctx, client.ObjectKeyFromObject(secret), stored); err != nil {
			t.Fatal(err)
		}
		if stored.OwnerReferences[0].APIVersion != privateCore+"/v1beta2" {
			t.Fatalf("stored Secret ownerReference = %q: the garbage collector would not find its owner", stored.OwnerReferences[0].APIVersion)
		}
		// The garbage collector must keep it while the private Cluster lives...
		time.Sleep(3 * time.Second)
		if err := direct.Get(ctx, client.ObjectKeyFromObject(secret), stored); err != nil {
			t.Fatalf("the Secret owned by a live Cluster was collected: %v", err)
		}
	})

	t.Run("kubectl", func(t *testing.T) {
		out := kubectl(t, "get", "machines", "-n", ns, "-o", "name")
		if !strings.Contains(out, "machine.cluster.x-k8s.io/m0") {
			t.Errorf("kubectl get machines: %s", out)
		}
		manifest := fmt.Sprintf(`apiVersion: cluster.x-k8s.io/v1beta2
kind: Machine
metadata:
  name: from-kubectl
  namespace: %s
  labels:
    cluster.x-k8s.io/cluster-name: c1
spec:
  clusterName: c1
  bootstrap:
    dataSecretName: c1-kubeconfig
  infrastructureRef:
    apiGroup: infrastructure.cluster.x-k8s.io
    kind: DockerMachine
    name: from-kubectl
`, ns)
		file := filepath.Join(t.TempDir(), "machine.yaml")
		if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
			t.Fatal(err)
		}
		kubectl(t, "create", "-f", file)
		var got map[string]any
		if err := json.Unmarshal([]byte(kubectl(t, "get", "machine", "from-kubectl", "-n", ns, "-o", "json")), &got); err != nil {
			t.Fatal(err)
		}
		spec := got["spec"].(map[string]any)
		if got["apiVersion"] != "cluster.x-k8s.io/v1beta2" || spec["infrastructureRef"].(map[string]any)["apiGroup"] != upstreamInfra {
			t.Errorf("kubectl get -o json: %v", got)
		}
		stored := &privclusterv1.Machine{}
		if err := direct.Get(ctx, client.ObjectKey{Namespace: ns, Name: "from-kubectl"}, stored); err != nil {
			t.Fatal(err)
		}
		if stored.Spec.InfrastructureRef.APIGroup != privateInfra {
			t.Errorf("kubectl-created Machine stored with %+v", stored.Spec.InfrastructureRef)
		}
	})

	t.Run("delete and deletecollection", func(t *testing.T) {
		for _, m := range machines {
			cur := &clusterv1.Machine{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(m), cur); err != nil {
				t.Fatal(err)
			}
			before := cur.DeepCopy()
			cur.Finalizers = nil
			if err := c.Patch(ctx, cur, client.MergeFrom(before)); err != nil {
				t.Fatalf("removing the finalizer: %v", err)
			}
		}
		if err := c.DeleteAllOf(ctx, &clusterv1.Machine{}, client.InNamespace(ns), client.MatchingLabels{clusterNameLabel: "c1"}); err != nil {
			t.Fatalf("deletecollection: %v", err)
		}
		waitGone(t, direct, &privclusterv1.MachineList{}, ns)
		if err := c.Delete(ctx, cluster, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cluster), &clusterv1.Cluster{}); !apierrors.IsNotFound(err) {
			t.Errorf("get after delete: %v, want NotFound", err)
		}
		// ... and collect it (and the MachineDeployment) once the Cluster is gone.
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			err := direct.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c1-kubeconfig"}, &corev1.Secret{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Errorf("the Secret owned by the deleted Cluster was not garbage collected: %v", err)
		}
	})
}

// TestPlatformCAPIUntouched proves that the platform's own CAPI objects (the upstream group, served by
// an older CAPI's CRDs) are neither visible through the proxy nor changed by it.
func TestPlatformCAPIUntouched(t *testing.T) {
	ctx := context.Background()
	c, _ := clients(t)
	ns := namespace(t, c)
	platform, err := client.New(env.DirectConfig(env.AdminToken), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	theirs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",
		"metadata": map[string]any{"name": "platform-machine", "namespace": ns},
		"spec": map[string]any{"clusterName": "platform", "bootstrap": map[string]any{"dataSecretName": "x"},
			"infrastructureRef": map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "AWSMachine", "name": "p"}},
	}}
	if err := platform.Create(ctx, theirs); err != nil {
		t.Fatalf("creating a platform Machine directly: %v", err)
	}
	list := &clusterv1.MachineList{}
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("the proxy shows the platform's Machines: %v", list.Items)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "platform-machine"}, &clusterv1.Machine{}); !apierrors.IsNotFound(err) {
		t.Errorf("get of the platform's Machine through the proxy: %v, want NotFound", err)
	}
	after := &unstructured.Unstructured{}
	after.SetGroupVersionKind(theirs.GroupVersionKind())
	if err := platform.Get(ctx, client.ObjectKeyFromObject(theirs), after); err != nil {
		t.Fatal(err)
	}
	if after.GetResourceVersion() != theirs.GetResourceVersion() {
		t.Errorf("the platform's Machine changed: resourceVersion %s -> %s", theirs.GetResourceVersion(), after.GetResourceVersion())
	}
}

func mustCreate(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s through the proxy: %v", obj, obj.GetName(), err)
	}
}

func waitGone(t *testing.T, c client.Client, list client.ObjectList, ns string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{clusterNameLabel: "c1"}); err != nil {
			return false, err
		}
		return len(list.(*privclusterv1.MachineList).Items) == 0, nil
	})
	if err != nil {
		t.Fatalf("objects still present: %v", err)
	}
}

// kubectl runs the kubectl built beside the apiserver against the proxy, as the admin user.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	return kubectlVia(t, proxy, args...)
}
