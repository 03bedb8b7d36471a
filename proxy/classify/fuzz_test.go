package classify_test

import (
	"bufio"
	"net/http"
	"path"
	"strings"
	"testing"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

// FuzzClassify: Classify never panics on a request the HTTP server accepts, a Mapped request is sent
// to its route's private group, and no request the proxy forwards addresses an upstream group of the
// table on the backend (there it would reach the platform's own copy, which the proxy's clients must
// never see), not even once the backend resolved dot segments and doubled slashes.
func FuzzClassify(f *testing.F) {
	for _, seed := range []struct {
		method, target string
		upgrade        bool
	}{
		{"GET", "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/machines/m1", false},
		{"GET", "/apis/cluster.x-k8s.io/v1beta1/watch/namespaces/ns/machinesets?watch=true", false},
		{"PATCH", "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/machinedeployments/md/scale", false},
		{"DELETE", "/apis/bootstrap.cluster.x-k8s.io/v1beta2/namespaces/ns/kubeadmconfigs?labelSelector=a", false},
		{"GET", "/apis/cluster.x-k8s.io", false},
		{"GET", "/apis/cluster.x-k8s.io/v1beta2", false},
		{"GET", "/apis", false},
		{"GET", "/apis/cluster.hypershift.openshift.io/v1beta2/machines", false},
		{"GET", "/apis/cluster.hypershift.openshift.io/../cluster.x-k8s.io/v1beta2/machines", false},
		{"GET", "/apis/apps/v1/../../cluster.x-k8s.io/v1beta2/machines", false},
		{"GET", "//apis/cluster.x-k8s.io/v1beta2/machines", false},
		{"GET", "/apis/cluster.x-k8s.io%2Fv1beta2/machines", false},
		{"POST", "/api/v1/namespaces/ns/pods/p/exec?command=sh", true},
		{"GET", "/api/v1/namespaces/ns/secrets/s", false},
		{"GET", "/version", false},
		{"BREW", "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/machines", false},
	} {
		f.Add(seed.method, seed.target, seed.upgrade)
	}
	c := classify.New(translate.NewTable(routes.Routes))
	f.Fuzz(func(t *testing.T, method, target string, upgrade bool) {
		raw := method + " " + target + " HTTP/1.1\r\nHost: x\r\n"
		if upgrade {
			raw += "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
		}
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw + "\r\n")))
		if err != nil {
			return // the HTTP server answers 400 itself
		}
		req := c.Classify(r)
		if req.Class == classify.Upgrade && (req.Group != "" || !req.IsResource || !req.LongRunning) {
			t.Fatalf("%s %s: a genuine upgrade outside the core group's connect subresources: %+v", method, target, req)
		}
		switch req.Class {
		case classify.Unrouted:
			return // answered 404 by the proxy
		case classify.Mapped:
			if req.Route == nil || !strings.HasPrefix(req.BackendPath, "/apis/"+req.Route.Private.Group+"/") {
				t.Fatalf("%s %s: Mapped to %q with route %v", method, target, req.BackendPath, req.Route)
			}
		}
		for _, p := range []string{req.BackendPath, resolved(req.BackendPath)} {
			if g, ok := apisGroup(p); ok {
				if _, mapped := upstream.PrivateGroup(g); mapped {
					t.Fatalf("%s %s: %s reaches the backend as %q, in the upstream group %s", method, target, req.Class, req.BackendPath, g)
				}
			}
		}
	})
}

// resolved is p with dot segments resolved and doubled slashes collapsed, as a server might.
func resolved(p string) string {
	return path.Clean("/" + p)
}

// apisGroup returns the group segment of an /apis/<group>[/...] path, ignoring leading and doubled
// slashes as kube-apiserver's request parser does.
func apisGroup(p string) (string, bool) {
	var parts []string
	for _, s := range strings.Split(p, "/") {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) < 2 || parts[0] != "apis" {
		return "", false
	}
	return parts[1], true
}
