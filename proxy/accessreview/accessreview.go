// Package accessreview reads and rewrites the bodies of access reviews (authorization.k8s.io
// SubjectAccessReview, SelfSubjectAccessReview, LocalSubjectAccessReview and SelfSubjectRulesReview),
// which ask what a request would be allowed: their answer must be the one the request would get through
// the proxy, which sends a namespace's requests of mapped kinds to the private groups, or, in a namespace
// served from the upstream groups (the migration's cut-over), to the upstream groups as they are.
package accessreview

import (
	"bytes"
	"encoding/json"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/negotiate"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// reviews are the resources of authorization.k8s.io's reviews.
var reviews = map[string]bool{
	"subjectaccessreviews": true, "selfsubjectaccessreviews": true, "localsubjectaccessreviews": true, "selfsubjectrulesreviews": true,
}

// IsAccessReview reports whether gr is one of authorization.k8s.io's review resources.
func IsAccessReview(gr schema.GroupResource) bool {
	return gr.Group == authorizationv1.GroupName && reviews[gr.Resource]
}

// reviewSpec holds the members of a review's spec that name a namespace.
type reviewSpec struct {
	Spec struct {
		// ResourceAttributes is that of the access reviews.
		ResourceAttributes *struct {
			Namespace string `json:"namespace"`
		} `json:"resourceAttributes"`
		// Namespace is that of SelfSubjectRulesReview.
		Namespace string `json:"namespace"`
	} `json:"spec"`
}

// ReviewNamespace returns the namespace an access review's body asks about, decoded as kube-apiserver
// decodes the media type of contentType (JSON with member names matched exactly, YAML converted to JSON,
// protobuf, CBOR): spec.resourceAttributes.namespace of the access reviews (a LocalSubjectAccessReview's
// must be its own namespace, which the apiserver checks), spec.namespace of a SelfSubjectRulesReview.
// It is "" where the review asks about no namespace (cluster-wide, or a non-resource URL) and where the
// body cannot be decoded (the apiserver then answers its own error).
func ReviewNamespace(contentType string, data []byte) string {
	mediaType, _ := negotiate.MediaType(contentType)
	var j []byte
	switch mediaType {
	case "", body.JSON:
		j = data
	case body.YAML:
		var err error
		if j, err = yaml.YAMLToJSON(data); err != nil {
			return ""
		}
	case body.Protobuf:
		var err error
		if j, err = body.ProtobufToJSON(data); err != nil {
			return ""
		}
	case body.CBOR:
		var v any
		if err := cbordirect.Unmarshal(data, &v); err != nil {
			return ""
		}
		var err error
		if j, err = json.Marshal(v); err != nil {
			return ""
		}
	default:
		return ""
	}
	var r reviewSpec
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, &r); err != nil {
		return ""
	}
	if r.Spec.ResourceAttributes != nil {
		return r.Spec.ResourceAttributes.Namespace
	}
	return r.Spec.Namespace
}

// RulesReviewServed drops from a SelfSubjectRulesReview the backend answered (data, of Content-Type
// contentType: JSON or protobuf; anything else is returned as it is) the grants that reach nothing
// through the proxy in the namespace it reviews, before the answer is translated to the upstream groups:
// where the namespace is served from the private groups (upstream false), the apiGroups of its
// status.resourceRules that are upstream mapped groups, and the resourceNames of CRDs of those groups in
// rules that can match customresourcedefinitions (translate.RuleCoversCRDs): the proxy sends such
// requests to the private groups and private CRDs, whose rules the translation shows under the upstream
// names; where it is served from the upstream groups (upstream true), the private groups and private CRD
// names, which the proxy's requests there never reach. A rule left with no apiGroups, or with
// resourceNames that were all dropped (an empty list would grant every name), is dropped. The answer is
// decoded and encoded again, as kube-apiserver encodes it, only if anything was dropped.
func RulesReviewServed(contentType string, data []byte, upstream bool) ([]byte, error) {
	mediaType, _ := negotiate.MediaType(contentType)
	info, ok := runtime.SerializerInfoForMediaType(clientgoscheme.Codecs.SupportedMediaTypes(), mediaType)
	if !ok || (mediaType != body.JSON && mediaType != body.Protobuf) {
		return data, nil
	}
	obj, _, err := clientgoscheme.Codecs.UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding the SelfSubjectRulesReview: %w", err)
	}
	review, ok := obj.(*authorizationv1.SelfSubjectRulesReview)
	if !ok {
		// A Status, or another kind: nothing of it grants anything.
		return data, nil
	}
	unserved := translate.ToPrivate // its groups are the upstream ones
	if upstream {
		unserved = translate.ToUpstream // the private ones
	}
	rules, changed := servedRules(review.Status.ResourceRules, unserved)
	if !changed {
		return data, nil
	}
	review.Status.ResourceRules = rules
	review.SetGroupVersionKind(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectRulesReview"))
	var buf bytes.Buffer
	if err := info.Serializer.Encode(review, &buf); err != nil {
		return nil, fmt.Errorf("encoding the SelfSubjectRulesReview: %w", err)
	}
	return buf.Bytes(), nil
}

// servedRules returns rules without the groups unserved maps (and the CRD names of those groups), and
// whether it dropped anything.
func servedRules(rules []authorizationv1.ResourceRule, unserved translate.Direction) ([]authorizationv1.ResourceRule, bool) {
	out := rules[:0:0]
	changed := false
	for _, rule := range rules {
		covers := translate.RuleCoversCRDs(rule.APIGroups, rule.Resources)
		groups := keep(rule.APIGroups, func(g string) bool { return !unserved.Maps(g) })
		names := rule.ResourceNames
		if covers {
			names = keep(names, func(n string) bool { return unserved.GroupResource(n) == n })
		}
		if len(groups) != len(rule.APIGroups) || len(names) != len(rule.ResourceNames) {
			changed = true
			if len(groups) == 0 || len(rule.ResourceNames) > 0 && len(names) == 0 {
				continue
			}
			rule.APIGroups, rule.ResourceNames = groups, names
		}
		out = append(out, rule)
	}
	return out, changed
}

// keep returns the strings of ss for which ok holds (ss itself if all do).
func keep(ss []string, ok func(string) bool) []string {
	for i, s := range ss {
		if ok(s) {
			continue
		}
		out := append([]string(nil), ss[:i]...)
		for _, s := range ss[i+1:] {
			if ok(s) {
				out = append(out, s)
			}
		}
		return out
	}
	return ss
}
