package convert

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/contract"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/jsonx"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// contractLabelPrefix starts the keys of CAPI's contract labels ("cluster.x-k8s.io/v1beta2").
var contractLabelPrefix = clusterv1.GroupVersion.Group + "/"

// currentContract is the CAPI contract the mirrored CAPI implements, by CAPI's convention its core API
// version (sigs.k8s.io/cluster-api/internal/contract.Version).
var currentContract = clusterv1.GroupVersion.Version

// compatibleContracts returns the contracts a provider may implement for CAPI at contract, newest first:
// the v1beta2 contract still accepts v1beta1 providers until v1beta1 ends (CAPI's
// internal/contract.GetCompatibleVersions).
func compatibleContracts(contract string) []string {
	out := []string{contract}
	if contract == "v1beta2" {
		out = append(out, "v1beta1")
	}
	sort.Slice(out, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(out[i], out[j]) > 0 })
	return out
}

// ErrUnresolvedKind is wrapped by the errors of APIVersion (errors.Is).
var ErrUnresolvedKind = errors.New("cannot tell the apiVersion of the referenced kind")

// CRDs gives the metadata of the backend's CustomResourceDefinitions by name, as last seen; package
// crdcache's Cache is one.
type CRDs interface {
	Get(name string) (metav1.Object, bool)
}

// ResolveWithCRDs makes APIVersion resolve every kind from the contract labels of its CRD in crds, as
// CAPI's getter resolves it from its manager's cache. Call it before the Converter serves.
func (c *Converter) ResolveWithCRDs(crds CRDs) { c.crds = crds }

// APIVersion returns the apiVersion ("infrastructure.cluster.x-k8s.io/v1beta2") that a v1beta1 reference to
// the upstream kind gk carries, by CAPI's rule (internal/contract.GetAPIVersion and
// GetLatestContractAndAPIVersionFromContract): of the contracts compatible with CAPI's, the newest one the
// kind's CRD labels ("cluster.x-k8s.io/v1beta2: v1beta1_v1beta2"), and of its versions the newest.
//
// With the CRDs given to ResolveWithCRDs (the proxy's cache of the backend's CRDs), it reads the labels of
// the kind's CRD there, whether a route serves the kind or not, as CAPI's getter reads them from its
// manager's cache: the CRD named <plural>.<group> by CAPI's contract.CalculateCRDName, in the private
// group for a mapped one (the proxy's twin of the CRD CAPI would read). A kind whose CRD is not installed
// fails as it does in CAPI, a routed one too: the route table says what the proxy can convert, not what
// the backend serves. It so answers, for any kind a caller names, what CAPI's getter answers behind the
// proxy, and tells a caller of the conversion webhook no more than CAPI's webhook does. Without CRDs (the
// proxy has no identity of its own, --backend-url), a routed kind is resolved from the labels its private
// CRD has as the generator wrote them into the route table, with no API call and without checking that
// the CRD is installed, and any other kind fails.
//
// Its errors wrap ErrUnresolvedKind and read as upstream's getter's do:
//
//	failed to get apiVersion for kind HostedControlPlane: failed to get CustomResourceDefinition metadata: CustomResourceDefinition.apiextensions.k8s.io "hostedcontrolplanes.hypershift.openshift.io" not found
//	failed to get apiVersion for kind HostedControlPlane: cannot find any versions matching contract versions ["v1beta2" "v1beta1"] for CRD hostedcontrolplanes.hypershift.openshift.io as contract version label(s) are either missing or empty (see https://cluster-api.sigs.k8s.io/developer/providers/contracts/overview.html#api-version-labels)
//
// CRD names in them are upstream's (the upstream group), never the private ones.
func (c *Converter) APIVersion(gk schema.GroupKind) (string, error) {
	name := contract.CalculateCRDName(gk.Group, gk.Kind)
	if c.crds == nil {
		if routes := c.table.Versions(gk); len(routes) > 0 {
			return latestAPIVersion(gk, name, routes[0].ContractLabels)
		}
		return "", &unresolvedError{fmt.Sprintf("failed to get apiVersion for kind %s: failed to get CustomResourceDefinition metadata: "+
			"the proxy reads no CustomResourceDefinitions and no route serves %s", gk.Kind, gk)}
	}
	crd, ok := c.crds.Get(contract.CalculateCRDName(translate.ToPrivate.Group(gk.Group), gk.Kind))
	if !ok {
		// As CAPI's manager reads it, from controller-runtime's cache, whose NotFound names the kind.
		notFound := apierrors.NewNotFound(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "CustomResourceDefinition"}, name)
		return "", &unresolvedError{fmt.Sprintf("failed to get apiVersion for kind %s: failed to get CustomResourceDefinition metadata: %v", gk.Kind, notFound)}
	}
	return latestAPIVersion(gk, name, crd.GetLabels())
}

// latestAPIVersion applies CAPI's GetLatestContractAndAPIVersionFromContract to the labels of the CRD
// named crdName.
func latestAPIVersion(gk schema.GroupKind, crdName string, labels map[string]string) (string, error) {
	contracts := compatibleContracts(currentContract)
	for _, contract := range contracts {
		versions := labels[contractLabelPrefix+contract]
		if versions == "" {
			continue
		}
		vs := strings.Split(versions, "_")
		sort.Slice(vs, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(vs[i], vs[j]) > 0 })
		return schema.GroupVersion{Group: gk.Group, Version: vs[0]}.String(), nil
	}
	return "", &unresolvedError{fmt.Sprintf("failed to get apiVersion for kind %s: cannot find any versions matching contract versions %q for CRD %v "+
		"as contract version label(s) are either missing or empty (see https://cluster-api.sigs.k8s.io/developer/providers/contracts/overview.html#api-version-labels)",
		gk.Kind, contracts, crdName)}
}

// unresolvedError is an error of APIVersion, in upstream's words.
type unresolvedError struct{ msg string }

func (e *unresolvedError) Error() string        { return e.msg }
func (e *unresolvedError) Is(target error) bool { return target == ErrUnresolvedKind }

// unresolved returns the fields of the references in obj (a typed object of route r) whose kind
// APIVersion cannot resolve: after a conversion of obj failed, they are what explains it, if anything.
func (c *Converter) unresolved(r *translate.Route, obj any) []string {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil
	}
	v, err := jsonx.Decode(data)
	if err != nil {
		return nil
	}
	var fields []string
	walkReferences(r.Paths, v, "", func(path string, gk schema.GroupKind) {
		if _, err := c.APIVersion(gk); err != nil {
			fields = append(fields, path)
		}
	})
	return fields
}

// walkReferences calls fn with the path of every object below n in v that holds a group-carrying apiGroup
// beside a kind (a v1beta2 reference), and its GroupKind. Paths are dotted, with [i] for array elements
// and [key] for map values.
func walkReferences(n *translate.Node, v any, path string, fn func(path string, gk schema.GroupKind)) {
	if n == nil {
		return
	}
	switch t := v.(type) {
	case map[string]any:
		if g, ok := n.Fields["apiGroup"]; ok && g.Value == translate.GroupValue {
			group, _ := t["apiGroup"].(string)
			kind, _ := t["kind"].(string)
			if group != "" && kind != "" {
				fn(path, schema.GroupKind{Group: group, Kind: kind})
			}
		}
		for k, c := range n.Fields {
			if cv, ok := t[k]; ok {
				walkReferences(c, cv, joinPath(path, k), fn)
			}
		}
		if n.Values != nil {
			for k, cv := range t {
				if _, named := n.Fields[k]; !named {
					walkReferences(n.Values, cv, path+"["+k+"]", fn)
				}
			}
		}
	case []any:
		if n.Items != nil {
			for i, cv := range t {
				walkReferences(n.Items, cv, path+"["+strconv.Itoa(i)+"]", fn)
			}
		}
	}
}

func joinPath(prefix, field string) string {
	if prefix == "" {
		return field
	}
	return prefix + "." + field
}
