package differential

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

const (
	jsonPatchCT = "Content-Type: application/json-patch+json"
	machinesV1  = "/apis/cluster.x-k8s.io/v1beta2/namespaces/" + nsPlaceholder + "/machines"
	mdsV1       = "/apis/cluster.x-k8s.io/v1beta2/namespaces/" + nsPlaceholder + "/machinedeployments"
	configMaps  = "/api/v1/namespaces/" + nsPlaceholder + "/configmaps"
)

// ownerAPIVersions returns the apiVersions of an object's ownerReferences, in order.
func ownerAPIVersions(t *testing.T, data []byte) []string {
	t.Helper()
	var obj struct {
		Metadata struct {
			OwnerReferences []struct {
				APIVersion string `json:"apiVersion"`
			} `json:"ownerReferences"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &obj); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	var out []string
	for _, r := range obj.Metadata.OwnerReferences {
		out = append(out, r.APIVersion)
	}
	return out
}

// testJSONPatchPointers: JSON patches at every index form kube-apiserver's JSON patch library reads
// (gopkg.in/evanphx/json-patch.v4: negative indices count from the end, strconv.Atoi reads "+0" and "00",
// a pointer's piece before its first "/" is dropped) answer through the proxy as directly, and store
// ownerReferences in the private group, so that the garbage collector finds the owner the proxy serves.
// (The garbage collector itself is not awaited: nothing says when it has looked at an object. The
// stored apiVersion is what it reads.)
func testJSONPatchPointers(t *testing.T) {
	st := newState()
	machine := func(name, owners string) string {
		return `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"` + name + `","namespace":"` + nsPlaceholder + `",` +
			`"labels":{"l":"v"}` + owners + `},"spec":{"clusterName":"c1","bootstrap":{"dataSecretName":"s"},` +
			`"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"AWSMachine","name":"a"}}}`
	}
	create := func(what, key, path, body string) {
		t.Helper()
		ex := pair(t, st, "named/json-patch-pointers/"+what, key, request{method: http.MethodPost, path: path, body: body, header: []string{jsonCT}})
		if ex[0].status != http.StatusCreated {
			t.Fatalf("creating %s directly: %d %s", what, ex[0].status, ex[0].body)
		}
	}
	create("owner-machine", "jp-owner", machinesV1, machine("jp-owner", ""))
	create("owner-machinedeployment", "jp-md", mdsV1, `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineDeployment",`+
		`"metadata":{"name":"jp-md","namespace":"`+nsPlaceholder+`"},"spec":{"clusterName":"c1","selector":{"matchLabels":{"md":"jp"}},`+
		`"template":{"metadata":{"labels":{"md":"jp"}},"spec":{"clusterName":"c1","bootstrap":{"dataSecretName":"s"},`+
		`"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"AWSMachineTemplate","name":"t"}}}}}`)
	create("owned-configmap", "jp-cm", configMaps, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"jp-cm","namespace":"`+nsPlaceholder+`",`+
		`"labels":{"l":"v"},"ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","name":"jp-owner","uid":"@UID:jp-owner@"}]},"data":{"k":"v"}}`)
	create("owned-machine", "jp-owned", machinesV1, machine("jp-owned",
		`,"ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineDeployment","name":"jp-md","uid":"@UID:jp-md@"}]`))

	cm, owned := configMaps+"/jp-cm", machinesV1+"/jp-owned"
	patch := func(what, key, path string, wantStatus int, ops string) {
		t.Helper()
		ex := pair(t, st, "named/json-patch-pointers/"+what, key, request{method: http.MethodPatch, path: path, body: ops, header: []string{jsonPatchCT}})
		if ex[0].status != wantStatus {
			t.Errorf("%s directly: %d, want %d: %s", what, ex[0].status, wantStatus, ex[0].body)
		}
	}
	// storedOwner checks the apiVersion of the only owner of the object at path as the backend holds it.
	storedOwner := func(what, path, want string) {
		t.Helper()
		if got := ownerAPIVersions(t, stored(t, path)); len(got) != 1 || got[0] != want {
			t.Errorf("%s: the backend holds owners of apiVersions %q, want [%s]", what, got, want)
		}
	}

	t.Run("ConfigMap owned by a Machine, patched at ownerReferences/-1", func(t *testing.T) {
		patch("configmap-replace-minus-1", "jp-cm", cm, http.StatusOK,
			`[{"op":"replace","path":"/metadata/ownerReferences/-1/apiVersion","value":"cluster.x-k8s.io/v1beta2"}]`)
		storedOwner("ConfigMap", cm, "cluster.hypershift.openshift.io/v1beta2")
		// A pointer whose first piece is not empty: the library drops it.
		patch("configmap-replace-no-leading-slash", "jp-cm", cm, http.StatusOK,
			`[{"op":"replace","path":"metadata/metadata/ownerReferences/+0/apiVersion","value":"cluster.x-k8s.io/v1beta2"}]`)
		storedOwner("ConfigMap", cm, "cluster.hypershift.openshift.io/v1beta2")
	})

	t.Run("Machine owned by a MachineDeployment, patched at ownerReferences/-1", func(t *testing.T) {
		patch("machine-replace-minus-1", "jp-owned", owned, http.StatusOK,
			`[{"op":"replace","path":"/metadata/ownerReferences/-1/apiVersion","value":"cluster.x-k8s.io/v1beta2"}]`)
		storedOwner("Machine", owned, "cluster.hypershift.openshift.io/v1beta2")
	})

	t.Run("copy from ownerReferences/-1 into an annotation", func(t *testing.T) {
		patch("configmap-copy-minus-1", "jp-cm", cm, http.StatusOK,
			`[{"op":"add","path":"/metadata/annotations","value":{}},{"op":"copy","from":"/metadata/ownerReferences/-1/apiVersion","path":"/metadata/annotations/owner"}]`)
		if got := field(t, stored(t, cm), "metadata.annotations"); got.(map[string]any)["owner"] != "cluster.x-k8s.io/v1beta2" {
			t.Errorf("the backend holds annotations %v, want owner: cluster.x-k8s.io/v1beta2", got)
		}
	})

	t.Run("test at -1, +0 and 00", func(t *testing.T) {
		for i, label := range map[string]string{"-1": "minus1", "+0": "plus0", "00": "zero0", "-0": "minus0"} {
			patch("configmap-test-"+i, "jp-cm", cm, http.StatusOK,
				`[{"op":"test","path":"/metadata/ownerReferences/`+i+`/apiVersion","value":"cluster.x-k8s.io/v1beta2"},{"op":"add","path":"/metadata/labels/t","value":"`+label+`"}]`)
			patch("machine-test-"+i, "jp-owned", owned, http.StatusOK,
				`[{"op":"test","path":"/metadata/ownerReferences/`+i+`","value":{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineDeployment","name":"jp-md","uid":"@UID:jp-md@"}}]`)
		}
		// Out of range, and not an index: the library's own errors.
		patch("configmap-test-minus-2", "jp-cm", cm, http.StatusUnprocessableEntity,
			`[{"op":"test","path":"/metadata/ownerReferences/-2/apiVersion","value":"cluster.x-k8s.io/v1beta2"}]`)
		patch("configmap-test-not-an-index", "jp-cm", cm, http.StatusUnprocessableEntity,
			`[{"op":"test","path":"/metadata/ownerReferences/1.0/apiVersion","value":"cluster.x-k8s.io/v1beta2"}]`)
		// Through the proxy the private group is nowhere to be read: a test of it fails, as directly.
		patch("configmap-test-private", "jp-cm", cm, http.StatusUnprocessableEntity,
			`[{"op":"test","path":"/metadata/ownerReferences/-1/apiVersion","value":"cluster.hypershift.openshift.io/v1beta2"}]`)
		storedOwner("ConfigMap", cm, "cluster.hypershift.openshift.io/v1beta2")
	})

	t.Run("test of the apiVersion", func(t *testing.T) {
		patch("machine-test-apiversion", "jp-owned", owned, http.StatusOK,
			`[{"op":"test","path":"/apiVersion","value":"cluster.x-k8s.io/v1beta2"},{"op":"test","path":"/metadata/labels/l","value":"v"},`+
				`{"op":"test","path":"/metadata/ownerReferences/0/apiVersion","value":"cluster.x-k8s.io/v1beta2"},{"op":"add","path":"/metadata/labels/m","value":"w"}]`)
		if got := field(t, stored(t, owned), "metadata.labels.m"); got != "w" {
			t.Errorf("the backend holds label m = %v, want w", got)
		}
		// A private group at the apiVersion, as an apiserver that does not serve it answers.
		patch("machine-test-private-apiversion", "jp-owned", owned, http.StatusUnprocessableEntity,
			`[{"op":"test","path":"/apiVersion","value":"cluster.hypershift.openshift.io/v1beta2"},{"op":"add","path":"/metadata/labels/n","value":"x"}]`)
		pair(t, st, "named/json-patch-pointers/machine-add-private-apiversion", "jp-owned", request{method: http.MethodPatch, path: owned,
			body: `[{"op":"add","path":"/apiVersion","value":"cluster.hypershift.openshift.io/v1beta2"}]`, header: []string{jsonPatchCT}})
		storedOwner("Machine", owned, "cluster.hypershift.openshift.io/v1beta2")
	})

	pair(t, st, "named/json-patch-pointers/configmap-get", "", request{method: http.MethodGet, path: cm})
	pair(t, st, "named/json-patch-pointers/machine-get", "", request{method: http.MethodGet, path: owned})

	// The objects go, so that the lists of the randomized script (which knows none of their uids) do not
	// hold them; dependents first.
	for _, p := range []string{cm, owned, mdsV1 + "/jp-md", machinesV1 + "/jp-owner"} {
		pair(t, st, "named/json-patch-pointers/delete"+p[strings.LastIndex(p, "/"):], "", request{method: http.MethodDelete, path: p})
	}
}
