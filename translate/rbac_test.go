package translate

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
)

func TestPrivatePolicyRules(t *testing.T) {
	in := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
		{APIGroups: []string{"addons.cluster.x-k8s.io", "apps", "infrastructure.cluster.x-k8s.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"cluster.x-k8s.io"}, Resources: []string{"machines", "machines/status"}, ResourceNames: []string{"m1"}, Verbs: []string{"update"}},
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions", "customresourcedefinitions/status"},
			ResourceNames: []string{"machines.cluster.x-k8s.io", "widgets.example.com"}, Verbs: []string{"patch"}},
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"list"}},
		{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get"}},
		{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}},
	}
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{"addons.cluster.hypershift.openshift.io", "infrastructure.cluster.hypershift.openshift.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"cluster.hypershift.openshift.io"}, Resources: []string{"machines", "machines/status"}, ResourceNames: []string{"m1"}, Verbs: []string{"update"}},
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions", "customresourcedefinitions/status"},
			ResourceNames: []string{"machines.cluster.hypershift.openshift.io"}, Verbs: []string{"patch"}},
	}
	before := fmt.Sprint(in)
	if diff := cmp.Diff(want, PrivatePolicyRules(in)); diff != "" {
		t.Errorf("PrivatePolicyRules (-want +got):\n%s", diff)
	}
	if fmt.Sprint(in) != before {
		t.Errorf("the input was modified")
	}
}
