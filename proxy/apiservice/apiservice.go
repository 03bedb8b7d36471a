// Package apiservice serves the apiregistration.k8s.io APIServices of the mapped groups the way the
// proxy's clients must see them: as an apiserver serving the upstream CRDs would show them. An APIService
// is named <spec.version>.<spec.group> (kube-aggregator's validation requires it), and kube-apiserver's
// autoregistration controller keeps one automanaged APIService (label
// kube-aggregator.kubernetes.io/automanaged, no spec.service) for every group version a CRD serves. On
// the backend there are such APIServices for the private group versions
// (v1beta2.cluster.hypershift.openshift.io) and for the platform's own upstream CRDs
// (v1beta1.cluster.x-k8s.io). Through the proxy:
//
//   - the upstream name of a group version the route table serves (v1beta2.cluster.x-k8s.io) is the private
//     APIService, renamed: metadata.name and spec.group in upstream terms, group names in its status
//     conditions' messages replaced as in a Status message (groupnames.Replace);
//   - the platform's APIServices of the upstream groups and the private names do not exist;
//   - creating an APIService whose name or spec.group is in a mapped group is 403 Forbidden, and so is
//     any write (update, patch, delete, deletecollection) of a mapped one: kube-apiserver keeps them for
//     the private CRDs.
//
// How names are looked up, lists, watches and Tables filtered and renamed, fieldSelectors translated,
// creates checked and deletecollections decided is package groupnamed's, shared with CRDs (package crd).
package apiservice

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/openshift/hypershift-capi-proxy/proxy/groupnamed"
	"github.com/openshift/hypershift-capi-proxy/proxy/groupnames"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/jsonx"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Resource is the resource this package serves.
var Resource = schema.GroupResource{Group: apiregistrationv1.GroupName, Resource: "apiservices"}

// scheme holds the apiregistration.k8s.io/v1 types with their defaults: the only version kube-apiserver
// serves APIServices in.
var scheme = runtime.NewScheme()

func init() {
	if err := apiregistrationv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
}

// New returns the Names of the APIServices of the group versions table serves: one per upstream group and
// version with a route that is served (translate.Route.Unserved false), mapped to the private group and
// version.
func New(table *translate.Table) *groupnamed.Names {
	mapped := map[string]string{}
	for _, r := range table.Routes() {
		if !r.Unserved {
			mapped[r.Upstream.Version+"."+r.Upstream.Group] = r.Private.Version + "." + r.Private.Group
		}
	}
	return groupnamed.New(groupnamed.Resource{
		GroupResource: Resource,
		Version:       apiregistrationv1.SchemeGroupVersion.Version,
		Kind:          "APIService",
		Scheme:        scheme,
		Objects:       "APIServices",
		ServedFrom: func(privateGroup string) string {
			return fmt.Sprintf("the APIServices kube-apiserver's autoregistration controller keeps (automanaged) for "+
				"the versions of HyperShift's private CRDs (group %s)", privateGroup)
		},
	}, mapped, upstreamAPIService)
}

// upstreamAPIService renames the private APIService obj to upstream (groupnamed.Rename): its name, its
// spec.group, and the group names in its status conditions' messages.
func upstreamAPIService(obj []byte, private, upstream string) ([]byte, error) {
	return groupnamed.Apply(obj, groupnamed.Edits{
		"metadata": groupnamed.Edits{"name": groupnamed.SetString(private, upstream)},
		"spec":     groupnamed.Edits{"group": groupnamed.SetString(groupnamed.GroupOf(private), groupnamed.GroupOf(upstream))},
		"status":   groupnamed.Edits{"conditions": conditionMessages},
	})
}

// conditionMessages replaces the private group names in the message of each condition of a list.
func conditionMessages(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || raw[0] != '[' {
		return raw, nil
	}
	return jsonx.Elements(raw, func(_ int, condition json.RawMessage) (json.RawMessage, error) {
		return groupnamed.Apply(condition, groupnamed.Edits{"message": replaceText})
	})
}

// replaceText replaces the private group names in a string value (groupnames.Replace).
func replaceText(raw json.RawMessage) (json.RawMessage, error) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return raw, nil
	}
	if t := groupnames.Replace(translate.ToUpstream, s); t != s {
		return jsonx.Encode(t)
	}
	return raw, nil
}
