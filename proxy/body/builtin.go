package body

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openshift/hypershift-capi-proxy/translate"
)

// builtinKind is a built-in Kubernetes kind with fields beyond metadata that can name a mapped group.
type builtinKind struct {
	kind     schema.GroupKind
	resource string
	paths    *translate.Node
	// selectable are the field selector keys whose values carry a group, with what they hold.
	selectable map[string]translate.ValueKind
}

// builtinKinds are the built-in kinds whose own fields can name a CAPI object or group, with those
// fields (in the translate.Paths form), in every version kube-apiserver v1.36 serves (k8s.io/api: the
// fields did not move between versions):
//
//   - core/v1 Event: involvedObject and related (CAPI's controllers record events on Machines, ...);
//   - events.k8s.io Event: regarding and related;
//   - authorization.k8s.io SubjectAccessReview, SelfSubjectAccessReview, LocalSubjectAccessReview: the
//     group of spec.resourceAttributes, and its name where it names a CRD (kubectl auth can-i, and
//     controllers checking their access; translate.ResourceAttributesValue);
//   - authorization.k8s.io SelfSubjectRulesReview: the rules of status.resourceRules;
//   - autoscaling HorizontalPodAutoscaler: spec.scaleTargetRef (a MachineDeployment's scale subresource);
//   - rbac.authorization.k8s.io Role and ClusterRole (v1): rules[] (kube-apiserver authorizes the private
//     group the proxy sends, so a rule on cluster.x-k8s.io must be stored on its private twin to grant
//     what the proxy serves, and not the platform's own objects); a ClusterRole's aggregationRule holds
//     label selectors only;
//   - admissionregistration.k8s.io ValidatingWebhookConfiguration and MutatingWebhookConfiguration (v1):
//     webhooks[].rules[] (the apiserver matches the private resource it admits);
//   - admissionregistration.k8s.io ValidatingAdmissionPolicy (v1, v1beta1, v1alpha1) and
//     MutatingAdmissionPolicy (v1, served by default from kube-apiserver v1.36; v1beta1, v1alpha1 when
//     enabled): spec.paramKind.apiVersion and the rules of spec.matchConstraints; their Bindings: the
//     rules of spec.matchResources (paramRef names an object, no group);
//   - core/v1 Namespace: the messages of status.conditions, free text in which kube-controller-manager's
//     namespace controller names the resources left in a namespace being deleted
//     ("machines.cluster.hypershift.openshift.io has 1 resource instances"), and the groups its
//     discovery failed for: whole names replaced, as in a Status message (translate.TextValue);
//   - core/v1 ResourceQuota: the keys of spec.hard, status.hard and status.used
//     ("count/machines.cluster.x-k8s.io", translate.QuotaResourceValue), in the object and in the
//     managed fields sets that name them.
//
// Rules ("=rule", translate.RuleValue) carry groups in apiGroups, and CRD names in resourceNames when they
// can match customresourcedefinitions (translate.RuleCoversCRDs). CEL expressions, match conditions and
// messages are program text and are left as they are.
var builtinKinds = []builtinKind{
	builtin("", "Event", "events", "involvedObject.apiVersion=apiVersion", "related.apiVersion=apiVersion").
		selects("involvedObject.apiVersion", translate.APIVersionValue),
	builtin("events.k8s.io", "Event", "events", "regarding.apiVersion=apiVersion", "related.apiVersion=apiVersion").
		selects("regarding.apiVersion", translate.APIVersionValue),
	builtin("authorization.k8s.io", "SubjectAccessReview", "subjectaccessreviews", "spec.resourceAttributes=resourceAttributes"),
	builtin("authorization.k8s.io", "SelfSubjectAccessReview", "selfsubjectaccessreviews", "spec.resourceAttributes=resourceAttributes"),
	builtin("authorization.k8s.io", "LocalSubjectAccessReview", "localsubjectaccessreviews", "spec.resourceAttributes=resourceAttributes"),
	builtin("authorization.k8s.io", "SelfSubjectRulesReview", "selfsubjectrulesreviews", "status.resourceRules[]=rule"),
	builtin("autoscaling", "HorizontalPodAutoscaler", "horizontalpodautoscalers", "spec.scaleTargetRef.apiVersion=apiVersion"),
	builtin(rbac, "Role", "roles", "rules[]=rule"),
	builtin(rbac, "ClusterRole", "clusterroles", "rules[]=rule"),
	builtin(admission, "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", "webhooks[].rules[]=rule"),
	builtin(admission, "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", "webhooks[].rules[]=rule"),
	builtin(admission, "ValidatingAdmissionPolicy", "validatingadmissionpolicies", admissionPolicy...),
	builtin(admission, "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings", admissionPolicyBinding...),
	builtin(admission, "MutatingAdmissionPolicy", "mutatingadmissionpolicies", admissionPolicy...),
	builtin(admission, "MutatingAdmissionPolicyBinding", "mutatingadmissionpolicybindings", admissionPolicyBinding...),
	builtin("", "Namespace", "namespaces", "status.conditions[].message=text"),
	builtin("", "ResourceQuota", "resourcequotas", "spec.hard{key}=quotaResource", "status.hard{key}=quotaResource",
		"status.used{key}=quotaResource",
		// The same keys in the managed fields sets (structured-merge-diff's "f:<key>" form).
		"metadata.managedFields[].fieldsV1.f:spec.f:hard{key}=fieldQuotaResource",
		"metadata.managedFields[].fieldsV1.f:status.f:hard{key}=fieldQuotaResource",
		"metadata.managedFields[].fieldsV1.f:status.f:used{key}=fieldQuotaResource"),
}

const (
	rbac      = "rbac.authorization.k8s.io"
	admission = "admissionregistration.k8s.io"
)

// admissionPolicy and admissionPolicyBinding are the group-carrying fields of the admission policies and
// of their bindings (MatchResources, ParamKind).
var (
	admissionPolicy = []string{"spec.paramKind.apiVersion=apiVersion",
		"spec.matchConstraints.resourceRules[]=rule", "spec.matchConstraints.excludeResourceRules[]=rule"}
	admissionPolicyBinding = []string{
		"spec.matchResources.resourceRules[]=rule", "spec.matchResources.excludeResourceRules[]=rule"}
)

var builtinByKind, builtinByResource = indexBuiltins()

func builtin(group, kind, resource string, specs ...string) builtinKind {
	return builtinKind{
		kind:     schema.GroupKind{Group: group, Kind: kind},
		resource: resource,
		paths:    translate.Paths(append([]string{"apiVersion=apiVersion", "metadata=objectMeta"}, specs...)...),
	}
}

func (k builtinKind) selects(key string, v translate.ValueKind) builtinKind {
	if k.selectable == nil {
		k.selectable = map[string]translate.ValueKind{}
	}
	k.selectable[key] = v
	return k
}

func indexBuiltins() (map[schema.GroupKind]builtinKind, map[schema.GroupResource]builtinKind) {
	byKind := map[schema.GroupKind]builtinKind{}
	byResource := map[schema.GroupResource]builtinKind{}
	for _, k := range builtinKinds {
		byKind[k.kind] = k
		byResource[schema.GroupResource{Group: k.kind.Group, Resource: k.resource}] = k
	}
	return byKind, byResource
}
