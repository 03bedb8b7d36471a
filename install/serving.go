package install

import (
	"fmt"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/openshift/hypershift-capi-proxy/migration/serving"
)

// ServingGuard names the identities that run migrations: the only ones ServingPolicy lets set, change
// or remove a Namespace's serving.Label.
type ServingGuard struct {
	// Users are user names as kube-apiserver authenticates them, e.g. the service account of the
	// HyperShift operator that embeds package migration ("system:serviceaccount:hypershift:operator").
	Users []string
	// Groups are group names; nil means DefaultMigrationGroups.
	Groups []string
}

// DefaultMigrationGroups is ServingGuard.Groups's default: system:masters, whose members may delete the
// policy anyway (RBAC does not apply to them), so that a cluster administrator can run `capi-proxy
// migrate` with an administrator's kubeconfig.
var DefaultMigrationGroups = []string{"system:masters"}

// ServingPolicy renders the ValidatingAdmissionPolicy serving.PolicyName and its binding (validation
// action Deny): a create or update of a Namespace, its status or its finalize subresource, that sets,
// changes or removes serving.Label is refused with 403 Forbidden unless the request's user is one of
// g.Users or in one of g.Groups. The label decides from which API groups every proxy serves the
// namespace's CAPI objects (package serving), so a grant to patch Namespaces must not carry it. The
// apiserver evaluates the policy on every path a write takes, through a proxy or not. Both objects are
// cluster-scoped; ValidatingAdmissionPolicy is GA (admissionregistration.k8s.io/v1) since Kubernetes
// 1.30. It is an error for g to name no identity at all.
func ServingPolicy(g ServingGuard) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding, error) {
	if g.Groups == nil {
		g.Groups = DefaultMigrationGroups
	}
	if len(g.Users) == 0 && len(g.Groups) == 0 {
		return nil, nil, fmt.Errorf("install: ServingGuard names no identity that may run migrations")
	}
	// The exempt identities skip the policy (matchConditions false: it does not apply). request.userInfo
	// holds no groups member for a user without groups, hence has().
	exempt := fmt.Sprintf("request.userInfo.username in %s || (has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in %s))",
		celStrings(g.Users), celStrings(g.Groups))
	label := strconv.Quote(serving.Label)
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: serving.PolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
						Rule: admissionregistrationv1.Rule{
							APIGroups: []string{""}, APIVersions: []string{"v1"},
							Resources: []string{"namespaces", "namespaces/status", "namespaces/finalize"},
						},
					},
				}},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "not-a-migration", Expression: "!(" + exempt + ")"}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "object.metadata.?labels[?" + label + "] == (oldObject == null ? optional.none() : oldObject.metadata.?labels[?" + label + "])",
				Message: "only the identity that runs the CAPI migration may set, change or remove the label " + serving.Label +
					": it decides from which API groups the CAPI proxies serve the namespace",
				Reason: ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: serving.PolicyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        serving.PolicyName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	return policy, binding, nil
}

// celStrings renders a CEL list of string literals.
func celStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
