package translate

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// crdGroup and crdResource name the CustomResourceDefinition resource, whose object names
// ("<plural>.<group>") carry a group.
const (
	crdGroup    = "apiextensions.k8s.io"
	crdResource = "customresourcedefinitions"
)

// RuleCoversCRDs reports whether a rule with these apiGroups and resources can match a request on
// customresourcedefinitions or one of their subresources, by the matching of RBAC (rbacv1helpers
// APIGroupMatches and ResourceMatches) and of admission rules (apiGroups "*"; resources "*", "*/*",
// "*/status", "customresourcedefinitions/*"): then its resourceNames name CRDs. The proxy serves the
// private CRD of a mapped group under the upstream name ("machines.cluster.x-k8s.io" is
// "machines.cluster.hypershift.openshift.io" on the backend), so such names are translated with the
// rule's groups. A rule that also covers other resources by a wildcard has its names translated all the
// same: a name of a mapped CRD is taken to mean the CRD.
func RuleCoversCRDs(apiGroups, resources []string) bool {
	group := false
	for _, g := range apiGroups {
		group = group || g == crdGroup || g == rbacv1.APIGroupAll
	}
	if !group {
		return false
	}
	for _, r := range resources {
		if crdResourceMatches(r) {
			return true
		}
	}
	return false
}

// crdResourceMatches reports whether a rule's resource ("customresourcedefinitions", "*", "*/status",
// "customresourcedefinitions/*", ...) matches the customresourcedefinitions resource or one of its
// subresources.
func crdResourceMatches(r string) bool {
	resource, _, _ := strings.Cut(r, "/")
	return resource == crdResource || resource == rbacv1.ResourceAll
}

// PrivatePolicyRules returns the RBAC rules that grant on the private groups what rules grant on the
// upstream groups, so that a subject holding rules keeps, through the proxy, the access it had on the
// upstream groups (kube-apiserver authorizes the private group the proxy sends):
//
//   - a rule naming mapped upstream groups yields one rule on their private twins, with the same
//     resources, verbs and resourceNames; the rule's other groups are left out;
//   - a rule that can match customresourcedefinitions (RuleCoversCRDs) whose resourceNames name CRDs of
//     mapped groups ("machines.cluster.x-k8s.io") yields the same rule in apiextensions.k8s.io on the
//     private CRDs ("machines.cluster.hypershift.openshift.io"), which the proxy serves under the
//     upstream names;
//   - every other rule (the core group, groups outside the table, apiGroups "*" which covers the private
//     groups already, nonResourceURLs) is left out: it grants nothing the proxy changes, and the
//     upstream rule keeps granting it.
//
// Rules keep their order; rules is not modified. The result is nil if nothing is mapped.
func PrivatePolicyRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, rule := range rules {
		var groups []string
		for _, g := range rule.APIGroups {
			if ToPrivate.Maps(g) {
				groups = append(groups, ToPrivate.Group(g))
			}
		}
		if len(groups) > 0 {
			r := *rule.DeepCopy()
			r.APIGroups, r.NonResourceURLs = groups, nil
			out = append(out, r)
		}
		if r, ok := privateCRDRule(rule); ok {
			out = append(out, r)
		}
	}
	return out
}

// privateCRDRule returns the rule on the private CRDs of the mapped CRD names that rule grants on.
func privateCRDRule(rule rbacv1.PolicyRule) (rbacv1.PolicyRule, bool) {
	var resources, names []string
	for _, r := range rule.Resources {
		if crdResourceMatches(r) {
			resources = append(resources, r)
		}
	}
	for _, n := range rule.ResourceNames {
		if private := ToPrivate.GroupResource(n); private != n {
			names = append(names, private)
		}
	}
	if !RuleCoversCRDs(rule.APIGroups, rule.Resources) || len(names) == 0 {
		return rbacv1.PolicyRule{}, false
	}
	return rbacv1.PolicyRule{
		APIGroups:     []string{crdGroup},
		Resources:     resources,
		ResourceNames: names,
		Verbs:         append([]string(nil), rule.Verbs...),
	}, true
}
