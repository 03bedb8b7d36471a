package differential

import "testing"

// knownProxyDefects lists cases (patterns of path.Match over the case names compare reports, e.g.
// "named/azurecluster-*" or "infrastructure.cluster.x-k8s.io/v1beta1/azureclusters/put-m") whose answers
// through the proxy still differ from the apiserver's, with why. A listed case logs its difference
// instead of failing; a pattern none of whose cases differ any more fails the test, so that the list only
// shrinks. The goal is an empty list.
var knownProxyDefects = map[string]string{
	"cluster.x-k8s.io/v1beta1/machinesets/get-m-final":                    "the stored object differs after writes that differed (conversion-data annotation, generation)",
	"infrastructure.cluster.x-k8s.io/v1beta1/vspheremachines/get-m-final": "the stored object differs after writes that differed (conversion-data annotation, generation)",
	"*/*/*/json-patch-random-*":                                           "answers some JSON patches itself (422 \"the server rejected our request due to an error in our request\", without Cache-Control and X-Kubernetes-Pf-* headers, with X-Content-Type-Options) where the apiserver answers 404 or applies them",
	"cluster.x-k8s.io/v1beta2/machinesets/list":                           "the stored objects differ after writes that differed",
	"infrastructure.cluster.x-k8s.io/v1beta2/vspheremachines/list":        "the stored objects differ after writes that differed",
	"cluster.x-k8s.io/v1beta1/clusters/no-kind":                           "the decoding error quotes the body as the proxy rewrote it, with the private group",
	"cluster.x-k8s.io/v1beta2/clusters/no-kind":                           "the decoding error quotes the body as the proxy rewrote it, with the private group",
	"*/*/*/private-group":                                                 "the proxy rejects a body naming the private group itself: its 400 lacks the X-Kubernetes-Pf-* headers the apiserver sets and adds X-Content-Type-Options",
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
