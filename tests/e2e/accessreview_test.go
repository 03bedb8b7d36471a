package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/openshift/hypershift-capi-proxy/migration/serving"
	"github.com/openshift/hypershift-capi-proxy/tests/framework"
)

// TestAccessReviewsFollowServing asks, as alice, whether she may get and list Machines in two namespaces
// while the migration's cut-over serves one from the upstream groups and the other from the private ones,
// and checks every answer against the request itself through the proxy: a SelfSubjectAccessReview, a
// LocalSubjectAccessReview and the admin's SubjectAccessReview for alice answer allowed exactly when the
// real request is not refused, and a SelfSubjectRulesReview lists on machines.cluster.x-k8s.io exactly the
// verbs the real requests are allowed, naming no private group. In each namespace alice holds get on one
// set of groups and list on the other, so that a review translated to the wrong set answers wrong.
func TestAccessReviewsFollowServing(t *testing.T) {
	ctx := context.Background()
	o := startOwnProxy(t)
	p, admin := o.p, o.kube
	suffix := rand.String(5)
	nsUp, nsPriv := "review-up-"+suffix, "review-priv-"+suffix
	const upstreamCore, privateCore = "cluster.x-k8s.io", "cluster.hypershift.openshift.io"
	grants := map[string]map[string][]string{ // namespace -> group -> verbs on machines
		nsUp:   {upstreamCore: {"list"}, privateCore: {"get"}},
		nsPriv: {upstreamCore: {"get"}, privateCore: {"list"}},
	}
	for ns, labels := range map[string]map[string]string{nsUp: {serving.Label: string(serving.Upstream)}, nsPriv: nil} {
		framework.CreateNamespace(ctx, t, framework.CreateNamespaceInput{Client: admin, Name: ns, Labels: labels})
		var rules []rbacv1.PolicyRule
		for group, verbs := range grants[ns] {
			rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{"machines"}, Verbs: verbs})
		}
		if _, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "machines"}, Rules: rules}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "machines"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	o.waitServedUpstream(t, nsUp, "probe")

	alice := newRawClient(t, p.Config(env.UserToken))
	adminProxy := newRawClient(t, p.Config(env.AdminToken))
	// At v1beta2, which the private CRDs store: a v1beta1 list would convert every other test's Machines.
	// The platform's CRDs serve v1beta2 or not (CAPI v1.10 serves only v1beta1), so in nsUp the request
	// is 200 or 404 once authorized, which is all real asks.
	machines := func(ns string) string { return "/apis/cluster.x-k8s.io/v1beta2/namespaces/" + ns + "/machines" }
	real := func(ns, verb string) bool {
		path := machines(ns)
		if verb == "get" {
			path += "/m1"
		}
		resp, body := alice.do(t, http.MethodGet, path, "")
		switch resp.StatusCode {
		case http.StatusForbidden:
			return false
		case http.StatusOK, http.StatusNotFound:
			return true
		}
		t.Fatalf("alice %s %s: %d %s", verb, path, resp.StatusCode, body)
		return false
	}
	attrs := func(ns, verb string) string {
		return fmt.Sprintf(`{"namespace":%q,"verb":%q,"group":"cluster.x-k8s.io","version":"v1beta1","resource":"machines"}`, ns, verb)
	}
	allowed := func(c *rawClient, path, review string) bool {
		resp, body := c.do(t, http.MethodPost, path, review, "Content-Type: application/json")
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, body)
		}
		var r struct {
			Status struct{ Allowed bool } `json:"status"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		return r.Status.Allowed
	}
	// RBAC is cached by the authorizer: wait until every grant shows on the real requests.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		return real(nsUp, "list") && real(nsPriv, "list"), nil
	}); err != nil {
		t.Fatalf("alice's grants do not show: %v", err)
	}

	for _, ns := range []string{nsUp, nsPriv} {
		for _, verb := range []string{"get", "list"} {
			want := real(ns, verb)
			t.Run(ns[:len(ns)-len(suffix)-1]+"/"+verb, func(t *testing.T) {
				for _, tc := range []struct {
					name, path, review string
					c                  *rawClient
				}{
					{"SelfSubjectAccessReview", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
						`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":` + attrs(ns, verb) + `}}`, alice},
					{"SubjectAccessReview", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
						`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"alice","resourceAttributes":` + attrs(ns, verb) + `}}`, adminProxy},
					{"LocalSubjectAccessReview", "/apis/authorization.k8s.io/v1/namespaces/" + ns + "/localsubjectaccessreviews",
						`{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","metadata":{"namespace":"` + ns + `"},"spec":{"user":"alice","resourceAttributes":` + attrs(ns, verb) + `}}`, adminProxy},
				} {
					if got := allowed(tc.c, tc.path, tc.review); got != want {
						t.Errorf("%s: allowed %v, but alice's %s through the proxy is allowed: %v", tc.name, got, verb, want)
					}
				}
			})
		}
		t.Run(ns[:len(ns)-len(suffix)-1]+"/SelfSubjectRulesReview", func(t *testing.T) {
			resp, body := alice.do(t, http.MethodPost, "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
				`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{"namespace":"`+ns+`"}}`, "Content-Type: application/json")
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if strings.Contains(string(body), "hypershift") {
				t.Errorf("the rules name a private group: %s", body)
			}
			var review struct {
				Status struct {
					ResourceRules []rbacv1.PolicyRule `json:"resourceRules"`
				} `json:"status"`
			}
			if err := json.Unmarshal(body, &review); err != nil {
				t.Fatal(err)
			}
			var verbs []string
			for _, r := range review.Status.ResourceRules {
				if slices.Contains(r.APIGroups, upstreamCore) && slices.Contains(r.Resources, "machines") {
					verbs = append(verbs, r.Verbs...)
				}
			}
			for _, verb := range []string{"get", "list"} {
				if slices.Contains(verbs, verb) != real(ns, verb) {
					t.Errorf("the rules grant %v on machines.cluster.x-k8s.io, but alice's %s through the proxy is allowed: %v", verbs, verb, real(ns, verb))
				}
			}
		})
	}
}
