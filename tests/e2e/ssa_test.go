package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	privclusterv1 "github.com/openshift/hypershift-capi-proxy/apis/private/core/v1beta2"
)

// ipAddressYAML is an IPAddress manifest of a version of the ipam group (upstream through the proxy,
// private directly), as server-side apply sends it. Its v1beta1 and v1beta2 schemas agree on these
// fields, so that two managers can apply it at two versions while the private CRDs convert with None.
func ipAddressYAML(group, version, ns, address string) string {
	return fmt.Sprintf(`apiVersion: %s/%s
kind: IPAddress
metadata:
  name: a1
  namespace: %s
spec:
  address: %s
  prefix: 24
  claimRef: {name: claim}
  poolRef: {apiGroup: %s, kind: InClusterIPPool, name: pool}
`, group, version, ns, address, group)
}

// TestServerSideApply runs the same server-side apply sequence through the proxy on the upstream group
// and directly on the private group: two field managers at two versions, a conflict, then a forced apply.
// The proxy's answers, conflicts included, must be the apiserver's but for the group, and managedFields
// must name the upstream group through the proxy and the private group in storage.
func TestServerSideApply(t *testing.T) {
	ctx := context.Background()
	c, directClient := clients(t)
	nsProxy, nsDirect := namespace(t, c), namespace(t, c)
	rp, rd := viaProxy(t), direct(t)

	type result struct {
		code int
		body []byte
	}
	run := func(rc *rawClient, group, ns string) []result {
		var out []result
		for _, step := range []struct {
			version, manager, address string
			force                     bool
		}{
			{"v1beta1", "old-manager", "10.0.0.1", false},
			{"v1beta2", "new-manager", "10.0.0.2", false}, // conflicts on spec.address
			{"v1beta2", "new-manager", "10.0.0.2", true},
		} {
			path := fmt.Sprintf("/apis/%s/%s/namespaces/%s/ipaddresses/a1?fieldManager=%s&force=%v", group, step.version, ns, step.manager, step.force)
			resp, body := rc.do(t, http.MethodPatch, path, ipAddressYAML(group, step.version, ns, step.address),
				"Content-Type: application/apply-patch+yaml", "Accept: application/json")
			out = append(out, result{resp.StatusCode, body})
		}
		return out
	}
	viaProxyResults := run(rp, upstreamIPAM, nsProxy)
	directResults := run(rd, privateIPAM, nsDirect)

	for i, want := range []int{http.StatusCreated, http.StatusConflict, http.StatusOK} {
		if got := viaProxyResults[i].code; got != want || directResults[i].code != want {
			t.Fatalf("step %d: %d through the proxy, %d directly, want %d: %s", i, got, directResults[i].code, want, viaProxyResults[i].body)
		}
	}
	t.Run("the conflict is the apiserver's", func(t *testing.T) {
		sameButGroups(t, "conflict Status", viaProxyResults[1].body, directResults[1].body)
		msg := string(viaProxyResults[1].body)
		if !strings.Contains(msg, `conflict with \"old-manager\"`) || !strings.Contains(msg, `.spec.address`) {
			t.Errorf("conflict message: %s", msg)
		}
	})

	t.Run("managedFields name the upstream group through the proxy and the private one in storage", func(t *testing.T) {
		path := "/namespaces/" + nsProxy + "/ipaddresses/a1"
		got := jsonObject(t, rp.mustDo(t, http.StatusOK, http.MethodGet, "/apis/"+upstreamIPAM+"/v1beta2"+path, ""))
		stored := jsonObject(t, rd.mustDo(t, http.StatusOK, http.MethodGet, "/apis/"+privateIPAM+"/v1beta2"+path, ""))
		want := map[string]string{"old-manager": "/v1beta1", "new-manager": "/v1beta2"}
		for i, mf := range field(got, "metadata.managedFields").([]any) {
			manager, _ := field(mf, "manager").(string)
			if version, ok := want[manager]; ok {
				if field(mf, "apiVersion") != upstreamIPAM+version || field(mf, "operation") != "Apply" {
					t.Errorf("managedFields entry of %s through the proxy: %v", manager, mf)
				}
				if field(stored, fmt.Sprintf("metadata.managedFields.%d.apiVersion", i)) != privateIPAM+version {
					t.Errorf("stored managedFields entry of %s: %v", manager, field(stored, "metadata.managedFields"))
				}
				delete(want, manager)
			}
		}
		if len(want) > 0 || field(got, "spec.address") != "10.0.0.2" || field(got, "spec.poolRef.apiGroup") != upstreamIPAM {
			t.Errorf("managers missing %v; object %v", want, got["spec"])
		}
		if field(stored, "spec.poolRef.apiGroup") != privateIPAM {
			t.Errorf("stored poolRef: %v", field(stored, "spec.poolRef"))
		}
	})

	t.Run("a controller's forced apply of an unstructured object", func(t *testing.T) {
		// As CAPI's internal/util/ssa does: ApplyConfigurationFromUnstructured, ForceOwnership.
		cluster := mustCreateCluster(t, c, nsProxy)
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
			"metadata": map[string]any{"name": "m1", "namespace": nsProxy,
				"ownerReferences": []any{map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "name": "c1", "uid": string(cluster.UID)}}},
			"spec": map[string]any{"clusterName": "c1", "providerID": "docker:///three",
				"bootstrap":         map[string]any{"configRef": map[string]any{"apiGroup": upstreamBoot, "kind": "KubeadmConfig", "name": "m1"}},
				"infrastructureRef": map[string]any{"apiGroup": upstreamInfra, "kind": "DockerMachine", "name": "m1"}},
		}}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.ForceOwnership, client.FieldOwner("capi-machineset")); err != nil {
			t.Fatal(err)
		}
		stored := &privclusterv1.Machine{}
		if err := directClient.Get(ctx, client.ObjectKey{Namespace: nsProxy, Name: "m1"}, stored); err != nil {
			t.Fatal(err)
		}
		if stored.Spec.Bootstrap.ConfigRef.APIGroup != privateBoot || stored.OwnerReferences[0].APIVersion != privateCore+"/v1beta2" ||
			stored.Spec.ProviderID != "docker:///three" {
			t.Errorf("stored after apply: %+v %+v", stored.Spec, stored.OwnerReferences)
		}
	})

	t.Run("a json patch of managedFields is translated", func(t *testing.T) {
		// As CAPI's CRD migrator cleans up managedFields: a json patch replacing the whole list, whose entries
		// carry apiVersion.
		patch := `[{"op":"replace","path":"/metadata/managedFields","value":[{"manager":"seed","operation":"Apply",` +
			`"apiVersion":"cluster.x-k8s.io/v1beta2","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:name":{}}}}]}]`
		m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: nsProxy, Name: "m1"}}
		if err := c.Patch(ctx, m, client.RawPatch(types.JSONPatchType, []byte(patch))); err != nil {
			t.Fatal(err)
		}
		if len(m.ManagedFields) != 1 || m.ManagedFields[0].APIVersion != "cluster.x-k8s.io/v1beta2" {
			t.Errorf("managedFields through the proxy: %+v", m.ManagedFields)
		}
		stored := &privclusterv1.Machine{}
		if err := directClient.Get(ctx, client.ObjectKey{Namespace: nsProxy, Name: "m1"}, stored); err != nil {
			t.Fatal(err)
		}
		if len(stored.ManagedFields) != 1 || stored.ManagedFields[0].APIVersion != privateCore+"/v1beta2" {
			t.Errorf("stored managedFields: %+v", stored.ManagedFields)
		}
	})

	t.Run("a GET is the apiserver's document but for the group", func(t *testing.T) {
		path := "/namespaces/" + nsProxy + "/machines/m1"
		sameButGroups(t, "GET machine",
			rp.mustDo(t, http.StatusOK, http.MethodGet, "/apis/cluster.x-k8s.io/v1beta2"+path, ""),
			rd.mustDo(t, http.StatusOK, http.MethodGet, "/apis/"+privateCore+"/v1beta2"+path, ""))
	})
}
