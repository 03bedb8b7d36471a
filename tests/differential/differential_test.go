package differential

import "testing"

// knownProxyDefects lists cases (patterns of path.Match over the case names compare reports, e.g.
// "named/azurecluster-*" or "infrastructure.cluster.x-k8s.io/v1beta1/azureclusters/put-m") whose answers
// through the proxy still differ from the apiserver's, with why. A listed case logs its difference
// instead of failing; a pattern none of whose cases differ any more fails the test, so that the list only
// shrinks. The goal is an empty list.
var knownProxyDefects = map[string]string{
	"*/*/*/apply-create-a":                      "Invalid answers of server-side apply re-encoded by the proxy (HTML escaping); at versions the CRD does not serve the proxy answers 404 itself, without the X-Kubernetes-Pf-* headers the apiserver sets",
	"*/*/*/apply-m-force":                       "Invalid answers of server-side apply re-encoded by the proxy (HTML escaping); at versions the CRD does not serve the proxy answers 404 itself, without the X-Kubernetes-Pf-* headers the apiserver sets",
	"*/*/*/create-minimal":                      "Invalid answers re-encoded by the proxy (HTML escaping); at versions the CRD does not serve the proxy answers 404 itself, without the X-Kubernetes-Pf-* headers the apiserver sets",
	"*/*/*/create-protobuf":                     "kube-apiserver v1.34.4 panics on a protobuf body for a custom resource (the stream is reset); the proxy answers 503",
	"*/*/*/create-random-*":                     "Invalid answers re-encoded by the proxy (HTML characters such as \"<\" written as they are, where the apiserver writes them JSON-escaped); conversion webhook failures worded differently from controller-runtime's webhook; at versions the CRD does not serve the proxy answers 404 itself, without the X-Kubernetes-Pf-* headers the apiserver sets",
	"*/*/*/create-yaml-accept-yaml":             "Accept: application/yaml on a write answered in JSON",
	"*/*/*/delete-r1":                           "at versions the CRD does not serve the proxy answers 404 itself, without the X-Kubernetes-Pf-* headers the apiserver sets; conversion webhook failures worded differently from controller-runtime's webhook",
	"*/*/*/get-accept-*":                        "Accept: application/yaml answered in JSON; Accept: application/cbor answered 200 where the apiserver answers 406",
	"*/*/*/get-m":                               "at versions the CRD does not serve the proxy answers 404 itself, without the X-Kubernetes-Pf-* headers the apiserver sets",
	"*/*/*/get-m-final":                         "at versions the CRD does not serve the proxy answers 404 itself, without the X-Kubernetes-Pf-* headers the apiserver sets; the stored object differs after writes that differed (conversion-data annotation, generation)",
	"*/*/*/json-patch-annotations":              "at versions the CRD does not serve the proxy answers 404 itself, without the X-Kubernetes-Pf-* headers the apiserver sets",
	"*/*/*/json-patch-random-*":                 "answers some JSON patches itself (422 \"the server rejected our request\", no Cache-Control or APF headers, with X-Content-Type-Options) where the apiserver answers 404 or applies them; Invalid answers re-encoded; at versions the CRD does not serve the proxy answers 404 itself, without the X-Kubernetes-Pf-* headers the apiserver sets",
	"*/*/*/list":                                "adds \"Vary: Accept-Encoding\", which the apiserver sets only on answers it compresses; some lists differ in content after earlier differing writes; at versions the CRD does not serve the proxy answers 404 itself, without the X-Kubernetes-Pf-* headers the apiserver sets",
	"*/*/*/list-accept-*":                       "Accept: application/yaml answered in JSON; \"Vary: Accept-Encoding\" added; Accept: application/cbor answered 200 where the apiserver answers 406",
	"*/*/*/list-limit":                          "adds \"Vary: Accept-Encoding\"",
	"*/*/*/merge-patch-m":                       "Invalid answers re-encoded by the proxy (HTML escaping); at versions the CRD does not serve the proxy answers 404 itself, without the X-Kubernetes-Pf-* headers the apiserver sets",
	"cluster.x-k8s.io/v1beta1/clusters/no-kind": "the decoding error quotes the body as the proxy rewrote it, with the private group",
	"cluster.x-k8s.io/v1beta2/clusters/no-kind": "the decoding error quotes the body as the proxy rewrote it, with the private group",
	"*/*/*/private-group":                       "a body whose apiVersion names the private group is created through the proxy; the apiserver rejects it (400, the group does not match the path)",
	"*/*/*/put-m":                               "Invalid answers re-encoded by the proxy (HTML escaping); at versions the CRD does not serve the proxy answers 404 itself, without the X-Kubernetes-Pf-* headers the apiserver sets",
	"*/*/*/put-m-without-resourceversion":       "at versions the CRD does not serve the proxy answers 404 itself, without the X-Kubernetes-Pf-* headers the apiserver sets",
	"*/*/*/strategic-merge-patch-m":             "at versions the CRD does not serve the proxy answers 404 itself, without the X-Kubernetes-Pf-* headers the apiserver sets",
	"boundary/awsclusterstaticidentities.infrastructure.cluster.x-k8s.io": "the backend holds objects the proxy let a body with the private group create (see private-group)",
	"boundary/awsmachines.infrastructure.cluster.x-k8s.io":                "the backend holds objects the proxy let a body with the private group create (see private-group)",
	"boundary/clusters.cluster.x-k8s.io":                                  "the backend holds objects the proxy let a body with the private group create (see private-group)",
	"named/cluster-invalid":                                               "the Invalid answer is re-encoded by the proxy (HTML escaping: \"<nil>\")",
	"named/unserved-version":                                              "at versions the CRD does not serve the proxy answers 404 itself, without the X-Kubernetes-Pf-* headers the apiserver sets",
}

// TestDifferential runs every scripted request directly and through the proxy and compares the answers,
// then checks the backend. The parts run in order: the boundary check reads what the others wrote.
func TestDifferential(t *testing.T) {
	theSides(t)
	t.Run("named", testNamed)
	t.Run("wire", testWire)
	t.Run("malformed", testMalformed)
	t.Run("randomized", testRandomized)
	t.Run("boundary", testBoundary)
	checkKnownDefects(t)
}
