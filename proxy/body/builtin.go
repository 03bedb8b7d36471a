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
// fields (in the translate.Paths form), in every served version (the fields did not move between
// versions):
//
//   - core/v1 Event: involvedObject and related (CAPI's controllers record events on Machines, ...);
//   - events.k8s.io Event: regarding and related;
//   - authorization.k8s.io SubjectAccessReview, SelfSubjectAccessReview, LocalSubjectAccessReview: the
//     group of spec.resourceAttributes (kubectl auth can-i, and controllers checking their access);
//   - authorization.k8s.io SelfSubjectRulesReview: the groups of status.resourceRules;
//   - autoscaling HorizontalPodAutoscaler: spec.scaleTargetRef (a MachineDeployment's scale subresource).
var builtinKinds = []builtinKind{
	builtin("", "Event", "events", "involvedObject.apiVersion=apiVersion", "related.apiVersion=apiVersion").
		selects("involvedObject.apiVersion", translate.APIVersionValue),
	builtin("events.k8s.io", "Event", "events", "regarding.apiVersion=apiVersion", "related.apiVersion=apiVersion").
		selects("regarding.apiVersion", translate.APIVersionValue),
	builtin("authorization.k8s.io", "SubjectAccessReview", "subjectaccessreviews", "spec.resourceAttributes.group=group"),
	builtin("authorization.k8s.io", "SelfSubjectAccessReview", "selfsubjectaccessreviews", "spec.resourceAttributes.group=group"),
	builtin("authorization.k8s.io", "LocalSubjectAccessReview", "localsubjectaccessreviews", "spec.resourceAttributes.group=group"),
	builtin("authorization.k8s.io", "SelfSubjectRulesReview", "selfsubjectrulesreviews", "status.resourceRules[].apiGroups[]=group"),
	builtin("autoscaling", "HorizontalPodAutoscaler", "horizontalpodautoscalers", "spec.scaleTargetRef.apiVersion=apiVersion"),
}

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
