package differential

import "testing"

// knownProxyDefects lists cases (patterns of path.Match over the case names compare reports, e.g.
// "named/azurecluster-*" or "infrastructure.cluster.x-k8s.io/v1beta1/azureclusters/put-m") whose answers
// through the proxy still differ from the apiserver's, with why. A listed case logs its difference
// instead of failing; a pattern none of whose cases differ any more fails the test, so that the list only
// shrinks. It is empty: every case answers through the proxy as the apiserver answers it directly, and a
// difference fails the test; add an entry only with the defect's issue.
var knownProxyDefects = map[string]string{}

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
