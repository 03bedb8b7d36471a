package convert

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

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

// ErrUnresolvedKind is wrapped by the errors of APIVersion.
var ErrUnresolvedKind = errors.New("cannot tell the apiVersion of the referenced kind")

// APIVersion returns the apiVersion ("infrastructure.cluster.x-k8s.io/v1beta2") that a v1beta1 reference to
// the upstream kind gk carries, by CAPI's rule (internal/contract.GetLatestContractAndAPIVersionFromContract)
// applied to the contract labels of the kind's private CRD, which the route table repeats: of the
// contracts compatible with CAPI's, the newest one the kind labels, and of its versions the newest. It
// answers without an API call, so it serves conversions in the webhook, which has no credentials. It fails
// for a kind without a route (another provider's kind in a mapped group, which no private CRD serves) and
// for a kind without contract labels.
func (c *Converter) APIVersion(gk schema.GroupKind) (string, error) {
	routes := c.table.Versions(gk)
	if len(routes) == 0 {
		return "", fmt.Errorf("%w %s: no private CRD serves it (it has no route in the proxy)", ErrUnresolvedKind, gk)
	}
	labels := routes[0].ContractLabels
	for _, contract := range compatibleContracts(currentContract) {
		versions := labels[contractLabelPrefix+contract]
		if versions == "" {
			continue
		}
		vs := strings.Split(versions, "_")
		sort.Slice(vs, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(vs[i], vs[j]) > 0 })
		return schema.GroupVersion{Group: gk.Group, Version: vs[0]}.String(), nil
	}
	return "", fmt.Errorf("%w %s: its CRD has no CAPI contract label for contracts %s", ErrUnresolvedKind, gk,
		strings.Join(compatibleContracts(currentContract), ", "))
}

// explain finds, after a conversion of obj (a typed object of route r) failed with err, the references in
// obj whose kind APIVersion cannot resolve, and returns err prefixed with their fields
// ("spec.infrastructureRef: ..."). Upstream's conversions wrap the getter's error as text, so the field is
// found again here rather than carried. err is returned as it is when no reference explains it.
func (c *Converter) explain(r *translate.Route, obj any, err error) error {
	data, mErr := json.Marshal(obj)
	if mErr != nil {
		return err
	}
	v, dErr := jsonx.Decode(data)
	if dErr != nil {
		return err
	}
	var fields []string
	walkReferences(r.Paths, v, "", func(path string, gk schema.GroupKind) {
		if _, gErr := c.APIVersion(gk); gErr != nil {
			fields = append(fields, path)
		}
	})
	if len(fields) == 0 {
		return err
	}
	return fmt.Errorf("%s: %w", strings.Join(fields, ", "), err)
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
