package e2e

import (
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
)

// volatile matches the values that differ between two objects created one after the other: UIDs,
// timestamps and resourceVersions.
var volatile = regexp.MustCompile(`"(uid|creationTimestamp|resourceVersion|time)":"[^"]*"`)

// withoutVolatile is a response body with its volatile values blanked, the namespace ns named "NS" and
// the owner's UID (which managedFields name in keys) "OWNERUID".
func withoutVolatile(data []byte, ns, ownerUID string) string {
	s := strings.ReplaceAll(string(data), ownerUID, "OWNERUID")
	return strings.ReplaceAll(volatile.ReplaceAllString(s, `"$1":"-"`), ns, "NS")
}

// toPrivateText replaces every upstream group name in s by its private name, longest first: the request a
// client of the apiserver holding the private CRDs sends where a client of the proxy sends s (the test
// bodies name groups only in group-carrying fields).
func toPrivateText(s string) string {
	groups := append([]upstream.Group(nil), upstream.Groups...)
	sort.SliceStable(groups, func(i, j int) bool { return len(groups[i].Upstream) > len(groups[j].Upstream) })
	for _, g := range groups {
		s = strings.ReplaceAll(s, g.Upstream, g.Private)
	}
	return s
}

// clientHeaders are the response headers a client can tell two servers apart by (Date, Audit-Id and
// priority-and-fairness UIDs aside).
var clientHeaders = []string{"Content-Type", "Cache-Control", "Warning", "X-Content-Type-Options"}

// TestWritesAsTheApiserverTakesThem: a create, update or patch through the proxy is answered exactly as
// the apiserver answers the same request on the private CRDs, and stores exactly the same object: the
// request body reaches the apiserver with every byte but the groups, so explicit false, 0, "" and {}
// survive, nothing is added, and validation, strict decoding and malformed bodies get the apiserver's
// own answers. Each case runs through the proxy in one namespace and directly (in private terms) in
// another.
func TestWritesAsTheApiserverTakesThem(t *testing.T) {
	c, _ := clients(t)
	nsProxy, nsDirect := namespace(t, c), namespace(t, c)
	rp, rd := viaProxy(t), direct(t)
	// Owners must exist, or the garbage collector deletes what they own.
	ownerProxy, ownerDirect := string(mustCreateCluster(t, c, nsProxy).UID), string(mustCreateCluster(t, c, nsDirect).UID)

	type step struct {
		method, path, contentType, body string
		// code is the status code the apiserver answers.
		code int
		// directBody, if set, is the body sent directly; else the body in private terms (toPrivateText).
		// OWNERUID in a body stands for the UID of the Cluster c1 of the namespace.
		directBody string
		// stored, if set, is the object path whose stored state (read directly) must be equal either way.
		stored string
	}
	for _, tc := range []struct {
		name  string
		steps []step
		// check, if set, looks at the object stored through the proxy (read directly, private terms).
		check func(t *testing.T, stored map[string]any)
	}{
		{name: "AzureCluster v1beta1 with controlPlaneEnabled false is stored false",
			steps: []step{{code: 201, method: "POST", path: "/apis/infrastructure.cluster.x-k8s.io/v1beta1/namespaces/NS/azureclusters", contentType: "application/json",
				body:   `{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta1","kind":"AzureCluster","metadata":{"name":"az"},"spec":{"location":"eastus","controlPlaneEnabled":false}}`,
				stored: "/apis/infrastructure.cluster.x-k8s.io/v1beta1/namespaces/NS/azureclusters/az"}},
			check: func(t *testing.T, stored map[string]any) {
				if v := field(stored, "spec.controlPlaneEnabled"); v != false {
					t.Errorf("spec.controlPlaneEnabled stored as %v", v)
				}
			}},
		{name: "a minimal v1beta1 MachineSet is created",
			steps: []step{{code: 201, method: "POST", path: "/apis/cluster.x-k8s.io/v1beta1/namespaces/NS/machinesets", contentType: "application/json",
				body:   `{"apiVersion":"cluster.x-k8s.io/v1beta1","kind":"MachineSet","metadata":{"name":"ms"},"spec":{"clusterName":"c1","selector":{}}}`,
				stored: "/apis/cluster.x-k8s.io/v1beta2/namespaces/NS/machinesets/ms"}}},
		{name: "an AWSMachineTemplate gains nothing",
			steps: []step{{code: 201, method: "POST", path: "/apis/infrastructure.cluster.x-k8s.io/v1beta2/namespaces/NS/awsmachinetemplates", contentType: "application/json",
				body:   `{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta2","kind":"AWSMachineTemplate","metadata":{"name":"t"},"spec":{"template":{"spec":{"instanceType":"m5.large"}}}}`,
				stored: "/apis/infrastructure.cluster.x-k8s.io/v1beta2/namespaces/NS/awsmachinetemplates/t"}},
			check: func(t *testing.T, stored map[string]any) {
				if v := field(stored, "spec.template.metadata"); v != nil {
					t.Errorf("spec.template.metadata stored as %v", v)
				}
				if v := field(stored, "spec.template.spec.cloudInit"); v != nil {
					t.Errorf("spec.template.spec.cloudInit stored as %v", v)
				}
			}},
		{name: "explicit zero values and unknown fields are the apiserver's to handle",
			steps: []step{{code: 201, method: "POST", path: "/apis/cluster.x-k8s.io/v1beta2/namespaces/NS/machines", contentType: "application/json",
				body: `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"m","labels":{}},"bogus":1,` +
					`"spec":{"clusterName":"c1","bootstrap":{"dataSecretName":"s"},"providerID":null,"readinessGates":null,"minReadySeconds":0,` +
					`"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"DockerMachine","name":"m"}}}`,
				stored: "/apis/cluster.x-k8s.io/v1beta2/namespaces/NS/machines/m"}}},
		{name: "an invalid Machine gets the apiserver's causes",
			steps: []step{{code: 422, method: "POST", path: "/apis/cluster.x-k8s.io/v1beta2/namespaces/NS/machines", contentType: "application/json",
				body: `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"bad"},"spec":{"clusterName":"",` +
					`"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"DockerMachine","name":"m"}}}`}}},
		{name: "strict decoding errors name the same fields",
			steps: []step{{code: 400, method: "POST", path: "/apis/cluster.x-k8s.io/v1beta2/namespaces/NS/machines?fieldValidation=Strict", contentType: "application/json",
				body: `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"strict"},"spec":{"clusterName":"c1","bogus":1,"clusterName":"c2",` +
					`"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"DockerMachine","name":"m","also":true}}}`}}},
		{name: "strict decoding warnings name the same fields",
			steps: []step{{code: 201, method: "POST", path: "/apis/cluster.x-k8s.io/v1beta2/namespaces/NS/machines?fieldValidation=Warn", contentType: "application/json",
				body: `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"warn"},"spec":{"clusterName":"c1","bogus":1,"bootstrap":{"dataSecretName":"s"},` +
					`"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"DockerMachine","name":"m"}}}`,
				stored: "/apis/cluster.x-k8s.io/v1beta2/namespaces/NS/machines/warn"}}},
		{name: "malformed JSON", steps: []step{{code: 400, method: "POST", path: "/apis/cluster.x-k8s.io/v1beta2/namespaces/NS/machines",
			contentType: "application/json", body: `{"kind":"Machine","metadata":{"name":"mal"},"apiVersion":"cluster.x-k8s.io/v1beta2",`}}},
		{name: "an unsupported Content-Type", steps: []step{{code: 415, method: "POST", path: "/apis/cluster.x-k8s.io/v1beta2/namespaces/NS/machines",
			contentType: "text/plain", body: `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"tp"}}`}}},
		{name: "the wrong kind for the path", steps: []step{{code: 422, method: "POST", path: "/apis/cluster.x-k8s.io/v1beta2/namespaces/NS/machinesets",
			contentType: "application/json", body: `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"wk"}}`}}},
		{name: "a ConfigMap without Content-Type owned by a Cluster",
			steps: []step{{code: 201, method: "POST", path: "/api/v1/namespaces/NS/configmaps",
				body:   `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"plain","ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","name":"c1","uid":"OWNERUID"}]}}`,
				stored: "/api/v1/namespaces/NS/configmaps/plain"}},
			check: ownedByPrivateCluster},
		{name: "a ConfigMap in YAML owned by a Cluster",
			steps: []step{{code: 201, method: "POST", path: "/api/v1/namespaces/NS/configmaps", contentType: "application/yaml",
				body:   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yaml\n  ownerReferences:\n  - apiVersion: cluster.x-k8s.io/v1beta2\n    kind: Cluster\n    name: c1\n    uid: OWNERUID\n",
				stored: "/api/v1/namespaces/NS/configmaps/yaml"}},
			check: ownedByPrivateCluster},
		{name: "a merge patch with an escaped group",
			steps: []step{
				{code: 201, method: "POST", path: "/api/v1/namespaces/NS/configmaps", contentType: "application/json",
					body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"escaped"}}`},
				{code: 200, method: "PATCH", path: "/api/v1/namespaces/NS/configmaps/escaped", contentType: "application/merge-patch+json",
					body:       `{"metadata":{"ownerReferences":[{"apiVersion":"cluster.x\u002dk8s.io/v1beta2","kind":"Cluster","name":"c1","uid":"OWNERUID"}]}}`,
					directBody: `{"metadata":{"ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Cluster","name":"c1","uid":"OWNERUID"}]}}`,
					stored:     "/api/v1/namespaces/NS/configmaps/escaped"}},
			check: ownedByPrivateCluster},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, s := range tc.steps {
				header := []string{}
				if s.contentType != "" {
					header = append(header, "Content-Type: "+s.contentType)
				}
				directBody := s.directBody
				if directBody == "" {
					directBody = toPrivateText(s.body)
				}
				respP, dataP := rp.do(t, s.method, strings.ReplaceAll(s.path, "NS", nsProxy), strings.ReplaceAll(s.body, "OWNERUID", ownerProxy), header...)
				respD, dataD := rd.do(t, s.method, toPrivateText(strings.ReplaceAll(s.path, "NS", nsDirect)), strings.ReplaceAll(directBody, "OWNERUID", ownerDirect), header...)
				if respD.StatusCode != s.code {
					t.Errorf("step %d: the apiserver answered %d, the test expects %d: %s", i, respD.StatusCode, s.code, dataD)
				}
				if respP.StatusCode != respD.StatusCode {
					t.Fatalf("step %d: %d through the proxy, %d directly:\nproxy:  %s\ndirect: %s", i, respP.StatusCode, respD.StatusCode, dataP, dataD)
				}
				for _, h := range clientHeaders {
					if got, want := respP.Header.Values(h), respD.Header.Values(h); toUpstreamText(strings.Join(want, "|")) != strings.Join(got, "|") {
						t.Errorf("step %d: %s %q through the proxy, %q directly", i, h, got, want)
					}
				}
				sameButGroups(t, "answer", []byte(withoutVolatile(dataP, nsProxy, ownerProxy)), []byte(withoutVolatile(dataD, nsDirect, ownerDirect)))
				if s.stored == "" {
					continue
				}
				// What is stored, read directly in private terms.
				storedP := rd.mustDo(t, http.StatusOK, "GET", toPrivateText(strings.ReplaceAll(s.stored, "NS", nsProxy)), "")
				storedD := rd.mustDo(t, http.StatusOK, "GET", toPrivateText(strings.ReplaceAll(s.stored, "NS", nsDirect)), "")
				if p, d := withoutVolatile(storedP, nsProxy, ownerProxy), withoutVolatile(storedD, nsDirect, ownerDirect); p != d {
					t.Errorf("step %d: stored through the proxy:\n%s\nstored directly:\n%s", i, p, d)
				}
				if tc.check != nil {
					tc.check(t, jsonObject(t, storedP))
				}
			}
		})
	}
}

// ownedByPrivateCluster fails unless an object's owner is the private Cluster: a client of the proxy
// names its owner in cluster.x-k8s.io, which through the proxy is the private group.
func ownedByPrivateCluster(t *testing.T, stored map[string]any) {
	t.Helper()
	if v := field(stored, "metadata.ownerReferences.0.apiVersion"); v != privateCore+"/v1beta2" {
		t.Errorf("ownerReferences[0].apiVersion stored as %v", v)
	}
}

// TestJSONPatchCopyBetweenShapes: a JSON patch that carries a value between fields that name groups
// differently (text copied into an ownerReference's apiVersion) is resolved against the object: the value
// is stored in the terms of the field it lands in, the private group, and read back through the proxy as
// the client wrote it.
func TestJSONPatchCopyBetweenShapes(t *testing.T) {
	c, _ := clients(t)
	ns := namespace(t, c)
	rp, rd := viaProxy(t), direct(t)
	rp.mustDo(t, http.StatusCreated, "POST", "/api/v1/namespaces/"+ns+"/configmaps",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"cluster.x-k8s.io/v1beta2"}}`,
		"Content-Type: application/json")
	patched := jsonObject(t, rp.mustDo(t, http.StatusOK, "PATCH", "/api/v1/namespaces/"+ns+"/configmaps/c",
		`[{"op":"add","path":"/metadata/ownerReferences","value":[{"apiVersion":"v1","kind":"Secret","name":"s","uid":"u"}]},`+
			`{"op":"copy","from":"/data/a","path":"/metadata/ownerReferences/0/apiVersion"}]`, "Content-Type: application/json-patch+json"))
	if v := field(patched, "metadata.ownerReferences.0.apiVersion"); v != "cluster.x-k8s.io/v1beta2" {
		t.Errorf("through the proxy, ownerReferences[0].apiVersion is %v", v)
	}
	stored := jsonObject(t, rd.mustDo(t, http.StatusOK, "GET", "/api/v1/namespaces/"+ns+"/configmaps/c", ""))
	if v := field(stored, "metadata.ownerReferences.0.apiVersion"); v != privateCore+"/v1beta2" {
		t.Errorf("ownerReferences[0].apiVersion stored as %v", v)
	}
	if v := field(stored, "data.a"); v != "cluster.x-k8s.io/v1beta2" {
		t.Errorf("data.a stored as %v", v)
	}
}
