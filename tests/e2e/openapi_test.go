package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi3"
)

// TestOpenAPI covers what kubectl explain, kubectl's field validation and client-go's OpenAPI clients
// read: /openapi/v2 (in protobuf, as client-go asks for it), the /openapi/v3 index and its hashes, and
// the v3 documents of the mapped groups, which must be HyperShift's private schemas under the upstream
// names, the platform's own upstream schemas replaced, never merged.
func TestOpenAPI(t *testing.T) {
	rp, rd := viaProxy(t), direct(t)
	dc, err := discovery.NewDiscoveryClientForConfig(proxy.Config(env.AdminToken))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("v3 index and hash-keyed documents", func(t *testing.T) {
		var index struct {
			Paths map[string]struct {
				ServerRelativeURL string `json:"serverRelativeURL"`
			} `json:"paths"`
		}
		if err := json.Unmarshal(rp.mustDo(t, http.StatusOK, http.MethodGet, "/openapi/v3", ""), &index); err != nil {
			t.Fatal(err)
		}
		for key := range index.Paths {
			if strings.Contains(key, "hypershift") {
				t.Errorf("the index lists %s", key)
			}
		}
		entry, ok := index.Paths["apis/cluster.x-k8s.io/v1beta2"]
		if !ok || !strings.HasPrefix(entry.ServerRelativeURL, "/openapi/v3/apis/cluster.x-k8s.io/v1beta2?hash=") {
			t.Fatalf("index entry of cluster.x-k8s.io/v1beta2: %+v", entry)
		}
		resp, doc := rp.do(t, http.MethodGet, entry.ServerRelativeURL, "")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "public, immutable" ||
			resp.Header.Get("ETag") != `"`+strings.TrimPrefix(entry.ServerRelativeURL, "/openapi/v3/apis/cluster.x-k8s.io/v1beta2?hash=")+`"` {
			t.Errorf("GET %s: %d, headers %v", entry.ServerRelativeURL, resp.StatusCode, resp.Header)
		}
		if strings.Contains(string(doc), "hypershift") {
			t.Errorf("the document names a private group")
		}
		// A stale hash is redirected to the current document, as the apiserver does.
		req, _ := http.NewRequest(http.MethodGet, rp.base+"/openapi/v3/apis/cluster.x-k8s.io/v1beta2?hash=0123", nil)
		noRedirect := *rp.hc
		noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		stale, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		stale.Body.Close()
		if stale.StatusCode != http.StatusMovedPermanently || stale.Header.Get("Location") != entry.ServerRelativeURL {
			t.Errorf("a stale hash: %d to %q, want 301 to %s", stale.StatusCode, stale.Header.Get("Location"), entry.ServerRelativeURL)
		}
		// And the ETag revalidates.
		resp, _ = rp.do(t, http.MethodGet, "/openapi/v3/apis/cluster.x-k8s.io/v1beta2", "", "If-None-Match: "+resp.Header.Get("ETag"))
		if resp.StatusCode != http.StatusNotModified {
			t.Errorf("If-None-Match of the current ETag: %d, want 304", resp.StatusCode)
		}
		if resp, _ := rp.do(t, http.MethodGet, "/openapi/v3/apis/cluster.x-k8s.io/v1alpha9", ""); resp.StatusCode != http.StatusNotFound {
			t.Errorf("an unserved version: %d, want 404", resp.StatusCode)
		}
	})

	t.Run("v3 schemas are HyperShift's under upstream names, the platform's replaced", func(t *testing.T) {
		schemas := func(data []byte) map[string]any {
			var doc struct {
				Components struct {
					Schemas map[string]any `json:"schemas"`
				} `json:"components"`
			}
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			return doc.Components.Schemas
		}
		// The platform's Machine schema is marked, so that it differs from HyperShift's whichever CAPI
		// release the platform's CRDs come from (the same as HyperShift's, possibly).
		const marker = "e2e: the platform's own v1beta1 Machine"
		markPlatformMachineSchema(t, rd, marker)
		var platform map[string]any
		poll(t, "the apiserver to publish the platform's marked Machine schema", func() bool {
			platform = schemas(rd.mustDo(t, http.StatusOK, http.MethodGet, "/openapi/v3/apis/cluster.x-k8s.io/v1beta1", ""))
			return field(platform["io.x-k8s.cluster.v1beta1.Machine"], "description") == marker
		})
		viaProxyDoc := schemas(rp.mustDo(t, http.StatusOK, http.MethodGet, "/openapi/v3/apis/cluster.x-k8s.io/v1beta1", ""))
		private := schemas(rd.mustDo(t, http.StatusOK, http.MethodGet, "/openapi/v3/apis/"+privateCore+"/v1beta1", ""))
		got := viaProxyDoc["io.x-k8s.cluster.v1beta1.Machine"]
		if got == nil {
			t.Fatalf("no io.x-k8s.cluster.v1beta1.Machine among %d schemas", len(viaProxyDoc))
		}
		want := private["io.openshift.hypershift.cluster.v1beta1.Machine"].(map[string]any)
		want["x-kubernetes-group-version-kind"] = []any{map[string]any{"group": "cluster.x-k8s.io", "kind": "Machine", "version": "v1beta1"}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("the Machine schema is not HyperShift's v1beta1 Machine")
		}
		if reflect.DeepEqual(got, platform["io.x-k8s.cluster.v1beta1.Machine"]) {
			t.Errorf("the test is void: the platform's v1beta1 Machine schema is the same as HyperShift's")
		}
	})

	t.Run("v3 through client-go", func(t *testing.T) {
		root := openapi3.NewRoot(dc.OpenAPIV3())
		spec, err := root.GVSpec(schema.GroupVersion{Group: "cluster.x-k8s.io", Version: "v1beta2"})
		if err != nil {
			t.Fatal(err)
		}
		machine, ok := spec.Components.Schemas["io.x-k8s.cluster.v1beta2.Machine"]
		if !ok {
			t.Fatal("no io.x-k8s.cluster.v1beta2.Machine")
		}
		gvks, _ := machine.Extensions["x-kubernetes-group-version-kind"].([]any)
		if len(gvks) != 1 || gvks[0].(map[string]any)["group"] != "cluster.x-k8s.io" {
			t.Errorf("x-kubernetes-group-version-kind: %v", machine.Extensions["x-kubernetes-group-version-kind"])
		}
		list := spec.Paths.Paths["/apis/cluster.x-k8s.io/v1beta2/namespaces/{namespace}/machines"]
		if list == nil || list.Get == nil || list.Get.OperationId != "listClusterXK8sIoV1beta2NamespacedMachine" ||
			strings.Join(list.Get.Tags, ",") != "clusterXK8sIo_v1beta2" {
			t.Errorf("the machines path: %+v", list)
		}
	})

	t.Run("v2 in protobuf, as client-go asks for it", func(t *testing.T) {
		doc, err := dc.OpenAPISchema()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, d := range doc.GetDefinitions().GetAdditionalProperties() {
			if strings.Contains(d.GetName(), "hypershift") {
				t.Errorf("definition %s", d.GetName())
			}
			if d.GetName() == "io.x-k8s.cluster.v1beta2.Machine" {
				found = true
				for _, ext := range d.GetValue().GetVendorExtension() {
					if ext.GetName() == "x-kubernetes-group-version-kind" && !strings.Contains(ext.GetValue().GetYaml(), "group: cluster.x-k8s.io") {
						t.Errorf("x-kubernetes-group-version-kind: %s", ext.GetValue().GetYaml())
					}
				}
			}
		}
		if !found {
			t.Error("no io.x-k8s.cluster.v1beta2.Machine definition")
		}
		paths := map[string]bool{}
		for _, p := range doc.GetPaths().GetPath() {
			paths[p.GetName()] = true
			if strings.Contains(p.GetName(), "hypershift") {
				t.Errorf("path %s", p.GetName())
			}
		}
		if !paths["/apis/cluster.x-k8s.io/v1beta2/namespaces/{namespace}/machines/{name}"] || !paths["/apis/cluster.x-k8s.io/v1beta1/namespaces/{namespace}/machines/{name}"] {
			t.Error("the machines paths are missing")
		}
	})

	t.Run("v2 in JSON with ETag revalidation", func(t *testing.T) {
		resp, data := rp.do(t, http.MethodGet, "/openapi/v2", "", "Accept: application/json")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("ETag") == "" || strings.Contains(string(data), "hypershift") {
			t.Fatalf("GET /openapi/v2: %d, ETag %q, names a private group: %v", resp.StatusCode, resp.Header.Get("ETag"), strings.Contains(string(data), "hypershift"))
		}
		again, _ := rp.do(t, http.MethodGet, "/openapi/v2", "", "Accept: application/json", "If-None-Match: "+resp.Header.Get("ETag"))
		if again.StatusCode != http.StatusNotModified {
			t.Errorf("If-None-Match of the current ETag: %d, want 304", again.StatusCode)
		}
	})

	t.Run("kubectl explain", func(t *testing.T) {
		out := kubectl(t, "explain", "machines.cluster.x-k8s.io.spec.infrastructureRef")
		if !strings.Contains(out, "GROUP:      cluster.x-k8s.io") || !strings.Contains(out, "VERSION:    v1beta2") || !strings.Contains(out, "apiGroup") {
			t.Errorf("kubectl explain:\n%s", out)
		}
		out = kubectl(t, "explain", "machinedeployments", "--api-version=cluster.x-k8s.io/v1beta1", "--recursive")
		if !strings.Contains(out, "VERSION:    v1beta1") || strings.Contains(out, "hypershift") {
			t.Errorf("kubectl explain --api-version=cluster.x-k8s.io/v1beta1:\n%s", out)
		}
	})
}

// markPlatformMachineSchema sets the description of the platform's Machine CRD's v1beta1 schema straight
// on the backend, until the test ends.
func markPlatformMachineSchema(t *testing.T, rd *rawClient, description string) {
	t.Helper()
	path := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + platformMachines
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string `json:"name"`
				Schema struct {
					OpenAPIV3Schema struct {
						Description string `json:"description"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	mustJSON(t, rd.mustDo(t, http.StatusOK, http.MethodGet, path, ""), &crd)
	for i, v := range crd.Spec.Versions {
		if v.Name != "v1beta1" {
			continue
		}
		set := func(t *testing.T, value string) {
			patch, _ := json.Marshal([]map[string]any{{"op": "add", "path": fmt.Sprintf("/spec/versions/%d/schema/openAPIV3Schema/description", i), "value": value}})
			rd.mustDo(t, http.StatusOK, http.MethodPatch, path, string(patch), "Content-Type: application/json-patch+json")
		}
		set(t, description)
		t.Cleanup(func() { set(t, v.Schema.OpenAPIV3Schema.Description) })
		return
	}
	t.Fatalf("the platform's CRD %s has no v1beta1", platformMachines)
}
