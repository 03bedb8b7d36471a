package differential

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
)

const (
	jsonCT        = "Content-Type: application/json"
	mergeCT       = "Content-Type: application/merge-patch+json"
	applyCT       = "Content-Type: application/apply-patch+yaml"
	ibmMachines   = "/apis/infrastructure.cluster.x-k8s.io/v1beta2/namespaces/" + nsPlaceholder + "/ibmvpcmachines"
	azureClusters = "/apis/infrastructure.cluster.x-k8s.io/v1beta1/namespaces/" + nsPlaceholder + "/azureclusters"
)

// field returns the value at a dotted path of a JSON document, or nil.
func field(t *testing.T, data []byte, path string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	for _, seg := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[seg]
	}
	return v
}

// stored reads an object of the proxied side from the backend, in its private group, as the admin. A
// built-in object (an /api/v1 path) is read at its own path.
func stored(t *testing.T, upstreamPath string) []byte {
	t.Helper()
	backendPath := strings.ReplaceAll(upstreamPath, nsPlaceholder, nsProxied)
	if !strings.HasPrefix(upstreamPath, "/api/") {
		// /apis/<group>/...: the proxied side's object lives in the private twin of <group>.
		rest, ok := strings.CutPrefix(upstreamPath, "/apis/")
		if !ok {
			t.Fatalf("not an /apis path: %s", upstreamPath)
		}
		group, tail, _ := strings.Cut(rest, "/")
		private, ok := upstream.PrivateGroup(group)
		if !ok {
			t.Fatalf("%s is not a mapped group", group)
		}
		backendPath = "/apis/" + private + "/" + strings.ReplaceAll(tail, nsPlaceholder, nsProxied)
	}
	s := theSides(t)
	ex := send(t, nil, 0, s[0], request{method: http.MethodGet, path: backendPath})
	if ex.status != http.StatusOK {
		t.Fatalf("reading the stored object %s: %d %s", backendPath, ex.status, ex.body)
	}
	return ex.body
}

// testNamed runs the cases the issue names, one subtest each.
func testNamed(t *testing.T) {
	st := newState()
	t.Run("AzureCluster v1beta1 controlPlaneEnabled false is stored false", func(t *testing.T) {
		body := `{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta1","kind":"AzureCluster","metadata":{"name":"cpe","namespace":"` + nsPlaceholder + `"},` +
			`"spec":{"location":"westeurope","controlPlaneEnabled":false}}`
		ex := pair(t, st, "named/azurecluster-controlplaneenabled-false", "", request{method: http.MethodPost, path: azureClusters, body: body, header: []string{jsonCT}})
		if ex[0].status != http.StatusCreated {
			t.Fatalf("directly: %d %s", ex[0].status, ex[0].body)
		}
		if got := field(t, ex[1].body, "spec.controlPlaneEnabled"); got != false {
			t.Errorf("through the proxy spec.controlPlaneEnabled = %v, want false", got)
		}
		pair(t, st, "named/azurecluster-controlplaneenabled-false-get", "", request{method: http.MethodGet, path: azureClusters + "/cpe"})
		if got := field(t, stored(t, azureClusters+"/cpe"), "spec.controlPlaneEnabled"); got != false {
			t.Errorf("stored spec.controlPlaneEnabled = %v, want false", got)
		}
	})

	t.Run("minimal v1beta1 MachineSet is created", func(t *testing.T) {
		body := `{"apiVersion":"cluster.x-k8s.io/v1beta1","kind":"MachineSet","metadata":{"name":"minimal","namespace":"` + nsPlaceholder + `"},` +
			`"spec":{"clusterName":"c1","selector":{}}}`
		ex := pair(t, st, "named/machineset-v1beta1-minimal", "", request{method: http.MethodPost,
			path: "/apis/cluster.x-k8s.io/v1beta1/namespaces/" + nsPlaceholder + "/machinesets", body: body, header: []string{jsonCT}})
		if ex[0].status != http.StatusCreated {
			t.Errorf("directly: %d %s", ex[0].status, ex[0].body)
		}
	})

	t.Run("AWSMachineTemplate gains nothing", func(t *testing.T) {
		path := "/apis/infrastructure.cluster.x-k8s.io/v1beta2/namespaces/" + nsPlaceholder + "/awsmachinetemplates"
		body := `{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta2","kind":"AWSMachineTemplate","metadata":{"name":"amt","namespace":"` + nsPlaceholder + `"},` +
			`"spec":{"template":{"spec":{"instanceType":"m5.large"}}}}`
		ex := pair(t, st, "named/awsmachinetemplate-gains-nothing", "", request{method: http.MethodPost, path: path, body: body, header: []string{jsonCT}})
		if ex[0].status != http.StatusCreated {
			t.Fatalf("directly: %d %s", ex[0].status, ex[0].body)
		}
		tmpl, _ := field(t, ex[1].body, "spec.template").(map[string]any)
		if _, ok := tmpl["metadata"]; ok {
			t.Errorf("through the proxy spec.template.metadata appeared: %s", ex[1].body)
		}
		spec, _ := tmpl["spec"].(map[string]any)
		if _, ok := spec["cloudInit"]; ok {
			t.Errorf("through the proxy spec.template.spec.cloudInit appeared: %s", ex[1].body)
		}
		for _, f := range []string{`"f:metadata":{}`, `"f:cloudInit"`} {
			if strings.Contains(string(ex[1].body), f) {
				t.Errorf("through the proxy managedFields own %s: %s", f, ex[1].body)
			}
		}
		pair(t, st, "named/awsmachinetemplate-gains-nothing-apply", "", request{method: http.MethodPatch,
			path: path + "/amt?fieldManager=differential", header: []string{applyCT},
			body: "apiVersion: infrastructure.cluster.x-k8s.io/v1beta2\nkind: AWSMachineTemplate\nmetadata:\n  name: amt\nspec:\n  template:\n    spec:\n      instanceType: m5.xlarge\n"})
		if s := string(stored(t, path+"/amt")); strings.Contains(s, `"cloudInit"`) || strings.Contains(s, `"f:cloudInit"`) {
			t.Errorf("stored object gained cloudInit: %s", s)
		}
	})

	t.Run("invalid Cluster gets the same causes", func(t *testing.T) {
		body := `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","metadata":{"name":"invalid","namespace":"` + nsPlaceholder + `"},` +
			`"spec":{"clusterNetwork":{"pods":{"cidrBlocks":"not-a-list"},"serviceDomain":""},` +
			`"infrastructureRef":{"apiGroup":"","kind":"","name":""},"topology":{"classRef":{"name":""},"version":""},"paused":"yes"}}`
		ex := pair(t, st, "named/cluster-invalid", "", request{method: http.MethodPost,
			path: "/apis/cluster.x-k8s.io/v1beta2/namespaces/" + nsPlaceholder + "/clusters", body: body, header: []string{jsonCT}})
		if ex[0].status != http.StatusUnprocessableEntity {
			t.Errorf("directly: %d, want 422: %s", ex[0].status, ex[0].body)
		}
	})

	t.Run("strict decoding warnings name the same fields", func(t *testing.T) {
		body := `{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta2","kind":"IBMVPCMachine","metadata":{"name":"warn","namespace":"` + nsPlaceholder + `","bogusMeta":1},` +
			`"spec":{"zone":"z","zone":"z2","image":{"name":"i","unknownInImage":true},"unknownInSpec":{"a":1},"bootVolume":{"sizeGiB":10,"sizeGiB":11}},"unknownTop":1}`
		for _, fv := range []string{"Warn", "Strict", "Ignore"} {
			ex := pair(t, st, "named/strict-decoding-"+strings.ToLower(fv), "", request{method: http.MethodPost,
				path: ibmMachines + "?fieldValidation=" + fv, body: strings.ReplaceAll(body, `"warn"`, `"warn-`+strings.ToLower(fv)+`"`), header: []string{jsonCT}})
			if fv == "Warn" && len(ex[0].header.Values("Warning")) == 0 {
				t.Errorf("directly: no warnings for unknown and duplicate fields: %v", ex[0].header)
			}
		}
	})

	t.Run("malformed, unsupported and strict errors", func(t *testing.T) {
		good := `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","metadata":{"name":"mal","namespace":"` + nsPlaceholder + `"}}`
		path := "/apis/cluster.x-k8s.io/v1beta2/namespaces/" + nsPlaceholder + "/clusters"
		for _, c := range []struct{ name, query, body, ct string }{
			{"malformed-json", "", `{"apiVersion":"cluster.x-k8s.io/v1beta2",`, jsonCT},
			{"malformed-json-garbage", "", `{"apiVersion" "x"}`, jsonCT},
			{"unsupported-content-type", "", good, "Content-Type: application/x-www-form-urlencoded"},
			{"strict-unknown-field", "?fieldValidation=Strict", strings.Replace(good, `"kind"`, `"spex":{},"kind"`, 1), jsonCT},
			{"strict-duplicate-field", "?fieldValidation=Strict", strings.Replace(good, `"kind":"Cluster"`, `"kind":"Cluster","kind":"Cluster"`, 1), jsonCT},
		} {
			ex := pair(t, st, "named/"+c.name, "", request{method: http.MethodPost, path: path + c.query, body: c.body, header: []string{c.ct}})
			if ex[0].status < 400 {
				t.Errorf("%s: directly %d, want an error", c.name, ex[0].status)
			}
		}
	})

	t.Run("Accept text/plain is 406", func(t *testing.T) {
		ex := pair(t, st, "named/accept-text-plain", "", request{method: http.MethodGet,
			path: "/apis/cluster.x-k8s.io/v1beta2/namespaces/" + nsPlaceholder + "/clusters", header: []string{"Accept: text/plain"}})
		if ex[0].status != http.StatusNotAcceptable {
			t.Errorf("directly: %d, want 406", ex[0].status)
		}
	})

	t.Run("a version the CRD does not serve is not found", func(t *testing.T) {
		// CAPA v2.13's AWSCluster keeps v1beta1 in its CRD with served: false.
		ex := pair(t, st, "named/unserved-version", "", request{method: http.MethodGet,
			path: "/apis/infrastructure.cluster.x-k8s.io/v1beta1/namespaces/" + nsPlaceholder + "/awsclusters"})
		if ex[0].status != http.StatusNotFound {
			t.Errorf("directly: %d, want 404", ex[0].status)
		}
	})

	t.Run("JSON patch pointers and indices", testJSONPatchPointers)

	t.Run("IBMVPCMachine deleteVolumeOnInstanceDelete false kept", func(t *testing.T) {
		body := `{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta2","kind":"IBMVPCMachine","metadata":{"name":"dv","namespace":"` + nsPlaceholder + `"},` +
			`"spec":{"zone":"z","image":{"name":"i"},"bootVolume":{"deleteVolumeOnInstanceDelete":false}}}`
		ex := pair(t, st, "named/ibmvpcmachine-deletevolume-false", "", request{method: http.MethodPost, path: ibmMachines, body: body, header: []string{jsonCT}})
		if ex[0].status != http.StatusCreated {
			t.Fatalf("directly: %d %s", ex[0].status, ex[0].body)
		}
		if got := field(t, ex[1].body, "spec.bootVolume.deleteVolumeOnInstanceDelete"); got != false {
			t.Errorf("through the proxy deleteVolumeOnInstanceDelete = %v, want false", got)
		}
		pair(t, st, "named/ibmvpcmachine-deletevolume-false-merge", "", request{method: http.MethodPatch, path: ibmMachines + "/dv",
			body: `{"spec":{"bootVolume":{"deleteVolumeOnInstanceDelete":false,"sizeGiB":20}}}`, header: []string{mergeCT}})
		if got := field(t, stored(t, ibmMachines+"/dv"), "spec.bootVolume.deleteVolumeOnInstanceDelete"); got != false {
			t.Errorf("stored deleteVolumeOnInstanceDelete = %v, want false", got)
		}
	})
}
