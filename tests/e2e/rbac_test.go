package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/tests/framework"
)

// readClusterRole reads a manifest holding one ClusterRole.
func readClusterRole(t *testing.T, path string) *rbacv1.ClusterRole {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(bytes.TrimPrefix(bytes.TrimSpace(data), []byte("---\n")), role); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return role
}

// serviceAccountToken creates a service account in ns and returns a token for it.
func serviceAccountToken(t *testing.T, cs kubernetes.Interface, ns, name string) (string, rbacv1.Subject) {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}
}

// allowedDirectly asks the apiserver, as the holder of token, whether the probe is allowed on the
// upstream group: what the subject could do before its CAPI objects moved to the private groups.
func allowedDirectly(t *testing.T, cs kubernetes.Interface, p probe, ns string) bool {
	t.Helper()
	attrs := &authorizationv1.ResourceAttributes{Group: p.route.Upstream.Group, Version: p.route.Upstream.Version,
		Resource: p.route.Upstream.Resource, Subresource: p.subresource, Verb: p.verb, Name: p.name}
	if p.route.Namespaced {
		attrs.Namespace = ns
	}
	review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(),
		&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return review.Status.Allowed
}

// TestGeneratedRolesKeepServiceAccountsWorking installs CAPI's own manager roles as a cluster would have
// them (the core manager's through its aggregated role, the kubeadm bootstrap manager's bound directly),
// shows that after the switch to the private groups they no longer suffice through the proxy, then adds
// the generated private ClusterRoles and proves that every verb on every resource is allowed through the
// proxy exactly when the upstream role allowed it directly.
func TestGeneratedRolesKeepServiceAccountsWorking(t *testing.T) {
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(env.DirectConfig(env.AdminToken))
	c, _ := clients(t)
	ns := namespace(t, c)

	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "sigs.k8s.io/cluster-api").Output()
	if err != nil {
		t.Fatal(err)
	}
	capi, err := framework.ModuleDir("sigs.k8s.io/cluster-api", strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}

	// CAPI's manifests, named as its kustomization names them (namePrefix capi-, the aggregation label
	// from config/default/manager_role_aggregation_patch.yaml), plus a prefix of this test's. The core
	// manager's role is where apis/upstream.Roles has it (config/rbac, core/config/rbac from CAPI v1.14),
	// its aggregated role beside it.
	prefix := ns + "-"
	coreFile := ""
	for _, r := range upstream.Roles {
		if r.Name == "cluster-api-manager" {
			coreFile = r.File
		}
	}
	coreRole := readClusterRole(t, filepath.Join(capi, coreFile))
	coreRole.Name, coreRole.Labels = prefix+"capi-manager-role", map[string]string{"cluster.x-k8s.io/aggregate-to-manager": "true"}
	aggregated := readClusterRole(t, filepath.Join(capi, filepath.Dir(coreFile), "aggregated_role.yaml"))
	aggregated.Name = prefix + "capi-aggregated-manager-role"
	bootstrapRole := readClusterRole(t, filepath.Join(capi, "bootstrap/kubeadm/config/rbac/role.yaml"))
	bootstrapRole.Name = prefix + "capi-kubeadm-bootstrap-manager-role"

	coreToken, coreSubject := serviceAccountToken(t, admin, ns, "capi-manager")
	bootstrapToken, bootstrapSubject := serviceAccountToken(t, admin, ns, "capi-kubeadm-bootstrap-manager")
	bind := func(role string, subject rbacv1.Subject) {
		t.Helper()
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: prefix + subject.Name + "-" + role},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{subject}}
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.RbacV1().ClusterRoleBindings().Delete(ctx, crb.Name, metav1.DeleteOptions{}) })
	}
	createRole := func(role *rbacv1.ClusterRole) {
		t.Helper()
		role.ResourceVersion = ""
		if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.RbacV1().ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{}) })
	}
	for _, role := range []*rbacv1.ClusterRole{coreRole, aggregated, bootstrapRole} {
		createRole(role)
	}
	bind(aggregated.Name, coreSubject)
	bind(bootstrapRole.Name, bootstrapSubject)

	managers := []struct {
		name  string
		token string
	}{{"core manager (aggregated role)", coreToken}, {"kubeadm bootstrap manager (bound role)", bootstrapToken}}
	listMachines := probe{route: nil}
	for _, p := range probes() {
		if p.verb == "list" && p.route.Upstream.Resource == "machines" && p.route.Upstream.Version == "v1beta2" {
			listMachines = p
		}
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return cond(), nil
		}); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	for _, m := range managers {
		cs := kubernetes.NewForConfigOrDie(env.DirectConfig(m.token))
		waitFor(m.name+"'s upstream grant", func() bool { return allowedDirectly(t, cs, listMachines, ns) })
		if code := listMachines.do(t, proxy.Config(m.token), listMachines.route.Upstream.Group, ns); code != http.StatusForbidden {
			t.Fatalf("%s: %s through the proxy with the upstream role only: %d, want 403", m.name, listMachines, code)
		}
	}

	// The generated roles, as `kubectl apply -f apis/private/rbac/` installs them; the bootstrap
	// manager's is bound beside its upstream role, the core manager's is aggregated by its label.
	for _, src := range upstream.Roles {
		role := readClusterRole(t, filepath.Join(env.Root, "apis", "private", "rbac", src.Name+".yaml"))
		if err := admin.RbacV1().ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{}); err == nil {
			t.Logf("replaced %s", role.Name)
		}
		createRole(role)
	}
	bind(upstream.PrivateRolePrefix+"kubeadm-bootstrap-manager", bootstrapSubject)
	waitFor("the aggregation of the private grants", func() bool {
		r, err := admin.RbacV1().ClusterRoles().Get(ctx, aggregated.Name, metav1.GetOptions{})
		return err == nil && strings.Contains(fmt.Sprint(r.Rules), privateCore)
	})

	for _, m := range managers {
		t.Run(m.name, func(t *testing.T) {
			cs := kubernetes.NewForConfigOrDie(env.DirectConfig(m.token))
			viaProxy := proxy.Config(m.token)
			waitFor("the private grant", func() bool {
				return listMachines.do(t, viaProxy, listMachines.route.Upstream.Group, ns) != http.StatusForbidden
			})
			var mu sync.Mutex
			allowed, mismatches := 0, 0
			forEachProbe(func(p probe) {
				before := allowedDirectly(t, cs, p, ns)
				code := p.do(t, viaProxy, p.route.Upstream.Group, ns)
				mu.Lock()
				defer mu.Unlock()
				if before {
					allowed++
				}
				if before != (code != http.StatusForbidden) {
					mismatches++
					t.Errorf("%s: allowed directly on the upstream group: %v; through the proxy: %d", p, before, code)
				}
			})
			t.Logf("%d probes allowed by the upstream role, %d mismatches", allowed, mismatches)
			if allowed == 0 {
				t.Errorf("the upstream role allows nothing: the comparison proves nothing")
			}
		})
	}
}
