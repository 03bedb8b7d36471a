package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	privclusterv1 "github.com/openshift/hypershift-capi-proxy/apis/private/core/v1beta2"
)

// TestPatchesScaleAndDeleteCollection covers the writes that name a group in a partial body (json-patch
// values and paths, merge patches), the scale subresource (autoscaling/v1 Scale, no CAPI group) and
// deletecollection with label selectors whose keys look like a group.
func TestPatchesScaleAndDeleteCollection(t *testing.T) {
	ctx := context.Background()
	c, directClient := clients(t)
	ns := namespace(t, c)
	cluster := mustCreateCluster(t, c, ns)
	labels1 := map[string]string{clusterNameLabel: "c1"}
	md := &clusterv1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "md1", Namespace: ns, Labels: labels1},
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: "c1", Replicas: ptr.To[int32](1),
			Selector: metav1.LabelSelector{MatchLabels: labels1},
			Template: clusterv1.MachineTemplateSpec{
				ObjectMeta: clusterv1.ObjectMeta{Labels: labels1},
				Spec:       machineSpec("c1", "md1"),
			},
		},
	}
	mustCreate(t, c, md)
	storedMD := func(t *testing.T) *privclusterv1.MachineDeployment {
		t.Helper()
		stored := &privclusterv1.MachineDeployment{}
		if err := directClient.Get(ctx, client.ObjectKeyFromObject(md), stored); err != nil {
			t.Fatal(err)
		}
		return stored
	}

	t.Run("json patch whose values and paths carry a group", func(t *testing.T) {
		// A "test" of a group-carrying value only passes if the proxy translates its value as well.
		patch := strings.ReplaceAll(`[
			{"op":"test","path":"/spec/template/spec/infrastructureRef/apiGroup","value":"infrastructure.cluster.x-k8s.io"},
			{"op":"replace","path":"/spec/template/spec/infrastructureRef/apiGroup","value":"infrastructure.cluster.x-k8s.io"},
			{"op":"replace","path":"/spec/template/spec/bootstrap/configRef","value":{"apiGroup":"bootstrap.cluster.x-k8s.io","kind":"KubeadmConfigTemplate","name":"md1-v2"}},
			{"op":"add","path":"/metadata/ownerReferences","value":[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","name":"c1","uid":"UID"}]},
			{"op":"add","path":"/metadata/annotations","value":{"cluster.x-k8s.io/cloned-from-groupkind":"DockerMachineTemplate.infrastructure.cluster.x-k8s.io"}},
			{"op":"add","path":"/metadata/labels/cluster.x-k8s.io~1set-name","value":"cluster.x-k8s.io"}]`, "UID", string(cluster.UID))
		if err := c.Patch(ctx, md, client.RawPatch(types.JSONPatchType, []byte(patch))); err != nil {
			t.Fatal(err)
		}
		if md.Spec.Template.Spec.Bootstrap.ConfigRef.APIGroup != upstreamBoot || md.OwnerReferences[0].APIVersion != "cluster.x-k8s.io/v1beta2" {
			t.Errorf("patched MachineDeployment came back as %+v %+v", md.Spec.Template.Spec.Bootstrap, md.OwnerReferences)
		}
		stored := storedMD(t)
		if stored.Spec.Template.Spec.Bootstrap.ConfigRef.APIGroup != privateBoot || stored.Spec.Template.Spec.InfrastructureRef.APIGroup != privateInfra ||
			stored.OwnerReferences[0].APIVersion != privateCore+"/v1beta2" ||
			stored.Annotations["cluster.x-k8s.io/cloned-from-groupkind"] != "DockerMachineTemplate."+privateInfra ||
			stored.Labels["cluster.x-k8s.io/set-name"] != "cluster.x-k8s.io" {
			t.Errorf("stored after json patch: %+v %+v %v %v", stored.Spec.Template.Spec, stored.OwnerReferences, stored.Annotations, stored.Labels)
		}
		// A failing test answers 422 naming the upstream path, as the apiserver does.
		failing := `[{"op":"test","path":"/spec/template/spec/infrastructureRef/apiGroup","value":"bootstrap.cluster.x-k8s.io"}]`
		err := c.Patch(ctx, md, client.RawPatch(types.JSONPatchType, []byte(failing)))
		if err == nil || strings.Contains(err.Error(), "hypershift") {
			t.Errorf("failing test op: %v", err)
		}
	})

	t.Run("merge patch", func(t *testing.T) {
		patch := `{"metadata":{"ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","name":"c1","uid":"` + string(cluster.UID) + `","controller":true}]},` +
			`"spec":{"template":{"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"DockerMachineTemplate","name":"md1-v3"}}}}}`
		if err := c.Patch(ctx, md, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Fatal(err)
		}
		stored := storedMD(t)
		if r := stored.Spec.Template.Spec.InfrastructureRef; r.APIGroup != privateInfra || r.Name != "md1-v3" || stored.OwnerReferences[0].APIVersion != privateCore+"/v1beta2" {
			t.Errorf("stored after merge patch: %+v %+v", r, stored.OwnerReferences)
		}
	})

	t.Run("strategic merge patch is refused as the apiserver refuses it", func(t *testing.T) {
		path := "/namespaces/" + ns + "/machinedeployments/md1"
		body := `{"metadata":{"labels":{"x":"y"}}}`
		respProxy, viaProxyBody := viaProxy(t).do(t, http.MethodPatch, "/apis/cluster.x-k8s.io/v1beta2"+path, body, "Content-Type: application/strategic-merge-patch+json")
		respDirect, directBody := direct(t).do(t, http.MethodPatch, "/apis/"+privateCore+"/v1beta2"+path, body, "Content-Type: application/strategic-merge-patch+json")
		if respProxy.StatusCode != http.StatusUnsupportedMediaType || respDirect.StatusCode != respProxy.StatusCode {
			t.Fatalf("%d through the proxy, %d directly", respProxy.StatusCode, respDirect.StatusCode)
		}
		sameButGroups(t, "415 Status", viaProxyBody, directBody)
	})

	t.Run("scale subresource", func(t *testing.T) {
		path := "/namespaces/" + ns + "/machinedeployments/md1/scale"
		sameButGroups(t, "GET scale",
			viaProxy(t).mustDo(t, http.StatusOK, http.MethodGet, "/apis/cluster.x-k8s.io/v1beta2"+path, ""),
			direct(t).mustDo(t, http.StatusOK, http.MethodGet, "/apis/"+privateCore+"/v1beta2"+path, ""))

		scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 3}}
		if err := c.SubResource("scale").Update(ctx, md, client.WithSubResourceBody(scale)); err != nil {
			t.Fatal(err)
		}
		if scale.Spec.Replicas != 3 {
			t.Errorf("scale update answered %+v", scale)
		}
		patched := &autoscalingv1.Scale{}
		if err := c.SubResource("scale").Patch(ctx, md, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":4}}`)), client.WithSubResourceBody(patched)); err != nil {
			t.Fatal(err)
		}
		if patched.Spec.Replicas != 4 {
			t.Errorf("scale patch answered %+v", patched)
		}
		if got := storedMD(t).Spec.Replicas; got == nil || *got != 4 {
			t.Errorf("stored replicas %v, want 4", got)
		}
	})

	t.Run("deletecollection with label selectors whose keys contain cluster.x-k8s.io", func(t *testing.T) {
		for i, l := range []map[string]string{
			{clusterNameLabel: "c1", "cluster.x-k8s.io/set-name": "a"},
			{clusterNameLabel: "c1"},
			{clusterNameLabel: "c2", "cluster.x-k8s.io/set-name": "a"},
		} {
			mustCreate(t, c, &clusterv1.Machine{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("dc%d", i), Namespace: ns, Labels: l},
				Spec:       machineSpec("c1", fmt.Sprintf("dc%d", i)),
			})
		}
		selector, err := labels.Parse("cluster.x-k8s.io/cluster-name in (c1),cluster.x-k8s.io/set-name")
		if err != nil {
			t.Fatal(err)
		}
		// Raw, to see the answer: the list of what was deleted.
		path := "/apis/cluster.x-k8s.io/v1beta2/namespaces/" + ns + "/machines?labelSelector=" + strings.ReplaceAll(selector.String(), " ", "%20")
		deleted := jsonObject(t, viaProxy(t).mustDo(t, http.StatusOK, http.MethodDelete, path, ""))
		if deleted["apiVersion"] != "cluster.x-k8s.io/v1beta2" || deleted["kind"] != "MachineList" ||
			len(deleted["items"].([]any)) != 1 || field(deleted, "items.0.metadata.name") != "dc0" ||
			field(deleted, "items.0.spec.infrastructureRef.apiGroup") != upstreamInfra {
			t.Errorf("deletecollection answered %v", deleted)
		}
		left := &privclusterv1.MachineList{}
		if err := directClient.List(ctx, left, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, m := range left.Items {
			names = append(names, m.Name)
		}
		if strings.Join(names, ",") != "dc1,dc2" {
			t.Errorf("left after deletecollection: %v", names)
		}
		// And through controller-runtime, by set-based selector.
		if err := c.DeleteAllOf(ctx, &clusterv1.Machine{}, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(labels.Set{clusterNameLabel: "c2"})}); err != nil {
			t.Fatal(err)
		}
		if err := directClient.List(ctx, left, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(left.Items) != 1 || left.Items[0].Name != "dc1" {
			t.Errorf("left after the second deletecollection: %d items", len(left.Items))
		}
	})
}
