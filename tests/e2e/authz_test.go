package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

// probe is one request of the decision matrix: a verb on a resource (or subresource) of one route.
type probe struct {
	route               *translate.Route
	subresource, verb   string
	method, name, query string
	body                func(apiVersion string) string
}

func (p probe) String() string {
	r := p.route.Upstream.Resource
	if p.subresource != "" {
		r += "/" + p.subresource
	}
	return fmt.Sprintf("%s %s %s/%s", p.verb, r, p.route.Upstream.Group, p.route.Upstream.Version)
}

// path is the probe's path in group at the route's version, in namespace ns for a namespaced kind.
func (p probe) path(group, ns string) string {
	path := "/apis/" + group + "/" + p.route.Upstream.Version
	if p.route.Namespaced {
		path += "/namespaces/" + ns
	}
	path += "/" + p.route.Upstream.Resource
	if p.name != "" {
		path += "/" + p.name
	}
	if p.subresource != "" {
		path += "/" + p.subresource
	}
	if p.query != "" {
		path += "?" + p.query
	}
	return path
}

// probes lists every verb on every resource and subresource the route table serves. Writes are dry runs
// of an object that does not exist (so that nothing changes and both sides answer the same), watches end
// after a second.
func probes() []probe {
	const name = "authz-probe"
	object := func(kind string) func(string) string {
		return func(apiVersion string) string {
			return fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":%q}}`, apiVersion, kind, name)
		}
	}
	scale := func(string) string {
		return fmt.Sprintf(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":%q},"spec":{"replicas":1}}`, name)
	}
	patch := func(string) string { return `{"metadata":{"labels":{"probe":"yes"}}}` }
	var out []probe
	for _, r := range translate.NewTable(routes.Routes).Routes() {
		out = append(out,
			probe{route: r, verb: "get", method: "GET", name: name},
			probe{route: r, verb: "list", method: "GET", query: "limit=1"},
			probe{route: r, verb: "watch", method: "GET", query: "watch=true&timeoutSeconds=1"},
			probe{route: r, verb: "create", method: "POST", query: "dryRun=All", body: object(r.Kind)},
			probe{route: r, verb: "update", method: "PUT", name: name, query: "dryRun=All", body: object(r.Kind)},
			probe{route: r, verb: "patch", method: "PATCH", name: name, query: "dryRun=All", body: patch},
			probe{route: r, verb: "delete", method: "DELETE", name: name, query: "dryRun=All"},
			probe{route: r, verb: "deletecollection", method: "DELETE", query: "dryRun=All"},
		)
		for _, sub := range r.Subresources {
			body := object(r.Kind)
			if sub == "scale" {
				body = scale
			}
			out = append(out,
				probe{route: r, subresource: sub, verb: "get", method: "GET", name: name},
				probe{route: r, subresource: sub, verb: "update", method: "PUT", name: name, query: "dryRun=All", body: body},
				probe{route: r, subresource: sub, verb: "patch", method: "PATCH", name: name, query: "dryRun=All", body: patch},
			)
		}
	}
	return out
}

// do sends the probe to group through cfg and returns the status code.
func (p probe) do(t *testing.T, cfg *rest.Config, group, ns string) int {
	body := ""
	if p.body != nil {
		body = p.body(group + "/" + p.route.Upstream.Version)
	}
	header := http.Header{}
	if p.method == "PATCH" {
		header.Set("Content-Type", "application/merge-patch+json")
	}
	code, _ := raw(t, cfg, p.method, p.path(group, ns), body, header)
	return code
}

// grantAlice gives alice, directly on the private groups, a few verbs on a few resources in ns, one
// cluster-scoped grant, and, on the upstream groups, a grant the proxy must not turn into access to the
// private groups.
func grantAlice(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(env.DirectConfig(env.AdminToken))
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{privateCore}, Resources: []string{"machines"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{privateCore}, Resources: []string{"machinesets"}, Verbs: []string{"create", "delete"}},
		{APIGroups: []string{privateCore}, Resources: []string{"machinedeployments/status", "machinedeployments/scale"}, Verbs: []string{"update", "patch"}},
		{APIGroups: []string{privateCore}, Resources: []string{"clusters"}, Verbs: []string{"patch", "update"}},
		{APIGroups: []string{privateBoot}, Resources: []string{"kubeadmconfigs"}, Verbs: []string{"deletecollection", "list"}},
		// On the upstream group: grants nothing through the proxy.
		{APIGroups: []string{"cluster.x-k8s.io"}, Resources: []string{"*"}, Verbs: []string{"*"}},
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "alice", Namespace: ns}, Rules: rules}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "alice"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}}}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	clusterRole := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "alice-" + ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"runtime.cluster.hypershift.openshift.io"}, Resources: []string{"extensionconfigs"}, Verbs: []string{"get", "list"}},
	}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, clusterRole, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-" + ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole.Name},
		Subjects: binding.Subjects}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(ctx, crb.Name, metav1.DeleteOptions{})
		_ = cs.RbacV1().ClusterRoles().Delete(ctx, clusterRole.Name, metav1.DeleteOptions{})
	})
	// RBAC is cached by the authorizer: wait until the grant shows.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		code, _ := raw(t, withToken(env.DirectConfig(""), env.UserToken), "GET", "/apis/"+privateCore+"/v1beta2/namespaces/"+ns+"/machines", "", nil)
		return code == http.StatusOK, nil
	}); err != nil {
		t.Fatalf("alice's grant does not show: %v", err)
	}
}

// forEachProbe calls fn for every probe, from 8 goroutines.
func forEachProbe(fn func(probe)) {
	work := make(chan probe)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				fn(p)
			}
		}()
	}
	for _, p := range probes() {
		work <- p
	}
	close(work)
	wg.Wait()
}

// decisions runs every probe through the proxy and directly against the private groups, and returns
// the codes by probe.
func decisions(t *testing.T, viaProxy, direct *rest.Config, ns string) (proxied, directly map[string]int) {
	t.Helper()
	proxied, directly = map[string]int{}, map[string]int{}
	var mu sync.Mutex
	forEachProbe(func(p probe) {
		up := p.do(t, viaProxy, p.route.Upstream.Group, ns)
		priv := p.do(t, direct, p.route.Private.Group, ns)
		mu.Lock()
		proxied[p.String()], directly[p.String()] = up, priv
		mu.Unlock()
	})
	return proxied, directly
}

// TestDecisionsMatchDirect: for every verb on every resource and subresource the proxy serves, a
// restricted user gets through the proxy the decision (403 or not) the apiserver gives the same user on
// the private group directly, and no request succeeds through the proxy that fails directly. A grant on
// the upstream group grants nothing through the proxy. (Other differences of status code, e.g. a 422 of a
// dry-run create where the direct one passes, are logged: they are about translation, not access.)
func TestDecisionsMatchDirect(t *testing.T) {
	c, _ := clients(t)
	ns := namespace(t, c)
	grantAlice(t, ns)
	proxied, directly := decisions(t, proxy.Config(env.UserToken), env.DirectConfig(env.UserToken), ns)
	var keys []string
	for k := range proxied {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	allowed, denied := 0, 0
	for _, k := range keys {
		forbidden := proxied[k] == http.StatusForbidden
		switch {
		case forbidden != (directly[k] == http.StatusForbidden):
			t.Errorf("%s: %d through the proxy, %d directly", k, proxied[k], directly[k])
		case forbidden:
			denied++
		default:
			allowed++
		}
		if proxied[k] != directly[k] && forbidden == (directly[k] == http.StatusForbidden) {
			t.Logf("%s: allowed both ways, but %d through the proxy and %d directly", k, proxied[k], directly[k])
		}
		if proxied[k] < 300 && directly[k] >= 300 {
			t.Errorf("%s succeeded through the proxy (%d) and failed directly (%d)", k, proxied[k], directly[k])
		}
	}
	t.Logf("%d decisions: %d allowed, %d denied", len(keys), allowed, denied)
	// The grant above allows at least these; everything on the upstream group's other kinds is denied.
	for _, k := range []string{
		"get machines cluster.x-k8s.io/v1beta2", "watch machines cluster.x-k8s.io/v1beta1",
		"create machinesets cluster.x-k8s.io/v1beta2", "patch machinedeployments/scale cluster.x-k8s.io/v1beta2",
		"deletecollection kubeadmconfigs bootstrap.cluster.x-k8s.io/v1beta2", "list extensionconfigs runtime.cluster.x-k8s.io/v1alpha1",
	} {
		if proxied[k] == http.StatusForbidden || proxied[k] == 0 {
			t.Errorf("%s: %d, want it allowed", k, proxied[k])
		}
	}
	for _, k := range []string{"get machinehealthchecks cluster.x-k8s.io/v1beta2", "create machines cluster.x-k8s.io/v1beta2",
		"get clusters cluster.x-k8s.io/v1beta2"} {
		if proxied[k] != http.StatusForbidden {
			t.Errorf("%s: %d, want 403 (the grant on the upstream group must not reach the private group)", k, proxied[k])
		}
	}
	if allowed == 0 || denied == 0 {
		t.Errorf("a matrix of %d decisions with %d allowed and %d denied proves nothing", len(keys), allowed, denied)
	}
}
