package differential

import "testing"

// knownProxyDefects lists cases (patterns of path.Match over the case names compare reports, e.g.
// "named/azurecluster-*" or "infrastructure.cluster.x-k8s.io/v1beta1/azureclusters/put-m") whose answers
// through the proxy still differ from the apiserver's, with why. A listed case logs its difference
// instead of failing; a pattern none of whose cases differ any more fails the test, so that the list only
// shrinks. The goal is an empty list.
var knownProxyDefects = map[string]string{
	"*/*/*/create-protobuf": "kube-apiserver v1.34.4 panics on a protobuf body for a custom resource (the stream is reset); the proxy answers 503",
	"*/*/*/get-accept-*":    "Accept: application/vnd.kubernetes.protobuf alone: the apiserver writes its 406 Status in protobuf, the proxy in JSON",
	"ipam.cluster.x-k8s.io/v1alpha1/ipaddressclaims/json-patch-random-1": "kube-apiserver v1.34.4 panics applying this JSON patch (a remove below a null) and resets the stream; the proxy answers 503 (as for */*/*/create-protobuf)",
	"*/*/*/list-accept-*": "Accept: application/vnd.kubernetes.protobuf alone: the apiserver writes its 406 Status in protobuf, the proxy in JSON",
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
