// Package routestesting is a small route table for the proxy's tests, independent of the generated one: a
// few kinds whose codec (Kind) decodes into map[string]any, translates along the route's Paths and reports
// top-level fields other than apiVersion, kind, metadata, spec and status as unknown, the way a typed
// decode reports fields its Go type lacks.
package routestesting

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/jsonx"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Group names used by the routes.
const (
	Cluster               = "cluster.x-k8s.io"
	PrivateCluster        = "cluster.hypershift.openshift.io"
	Infrastructure        = "infrastructure.cluster.x-k8s.io"
	PrivateInfrastructure = "infrastructure.cluster.hypershift.openshift.io"
)

// Table returns a table with machines in cluster.x-k8s.io v1beta1 (deprecated) and v1beta2, and awsmachines in
// infrastructure.cluster.x-k8s.io v1beta2. The route of a kind is found by its upstream resource, e.g.
// MachinesV1beta2.
func Table() *translate.Table {
	return translate.NewTable(Routes())
}

var (
	// MachinesV1beta2 is cluster.x-k8s.io/v1beta2, Resource=machines.
	MachinesV1beta2 = schema.GroupVersionResource{Group: Cluster, Version: "v1beta2", Resource: "machines"}
	// MachinesV1beta1 is cluster.x-k8s.io/v1beta1, Resource=machines.
	MachinesV1beta1 = schema.GroupVersionResource{Group: Cluster, Version: "v1beta1", Resource: "machines"}
	// AWSMachinesV1beta2 is infrastructure.cluster.x-k8s.io/v1beta2, Resource=awsmachines.
	AWSMachinesV1beta2 = schema.GroupVersionResource{Group: Infrastructure, Version: "v1beta2", Resource: "awsmachines"}
)

// Routes returns fresh routes for Table.
func Routes() []translate.Route {
	machineV1beta2 := translate.Paths(
		"apiVersion=apiVersion",
		"metadata=objectMeta",
		"spec.infrastructureRef.apiGroup=group",
		"spec.bootstrap.configRef.apiGroup=group",
	)
	machineV1beta1 := translate.Paths(
		"apiVersion=apiVersion",
		"metadata=objectMeta",
		"spec.infrastructureRef.apiVersion=apiVersion",
		"spec.bootstrap.configRef.apiVersion=apiVersion",
	)
	awsMachine := translate.Paths("apiVersion=apiVersion", "metadata=objectMeta")
	// v1beta1 is deprecated, and removed in CAPI v1.16, as the generated table says.
	machinesV1beta1 := route(MachinesV1beta1, PrivateCluster, "Machine", machineV1beta1, []string{"ma"}, []string{"cluster-api"}, false)
	machinesV1beta1.Deprecated, machinesV1beta1.RemovedRelease = true, "v1.16"
	return []translate.Route{
		machinesV1beta1,
		route(MachinesV1beta2, PrivateCluster, "Machine", machineV1beta2, []string{"ma"}, []string{"cluster-api"}, true),
		route(AWSMachinesV1beta2, PrivateInfrastructure, "AWSMachine", awsMachine, nil, []string{"cluster-api"}, true),
	}
}

func route(up schema.GroupVersionResource, privateGroup, kind string, paths *translate.Node, shortNames, categories []string, storage bool) translate.Route {
	private := up
	private.Group = privateGroup
	return translate.Route{
		Upstream:     up,
		Private:      private,
		Kind:         kind,
		ListKind:     kind + "List",
		Singular:     up.Resource[:len(up.Resource)-1],
		Namespaced:   true,
		Subresources: []string{"status", "scale"},
		ShortNames:   shortNames,
		Categories:   categories,
		Storage:      storage,
		Object:       Kind{Paths: paths},
		Paths:        paths,
	}
}

// Kind is a translate.Kind over map[string]any. The embedded interface is nil: only ToPrivate and
// ToUpstream are implemented.
type Kind struct {
	translate.Kind
	Paths *translate.Node
}

// ToPrivate implements translate.Kind.
func (k Kind) ToPrivate(data []byte) ([]byte, []error, error) {
	return k.convert(translate.ToPrivate, data)
}

// ToUpstream implements translate.Kind.
func (k Kind) ToUpstream(data []byte) ([]byte, []error, error) {
	return k.convert(translate.ToUpstream, data)
}

var known = map[string]bool{"apiVersion": true, "kind": true, "metadata": true, "spec": true, "status": true}

func (k Kind) convert(d translate.Direction, data []byte) ([]byte, []error, error) {
	v, err := jsonx.Decode(data)
	if err != nil {
		return nil, nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("want a JSON object, got %T", v)
	}
	var unknownKeys []string
	for key := range obj {
		if !known[key] {
			unknownKeys = append(unknownKeys, key)
			delete(obj, key)
		}
	}
	sort.Strings(unknownKeys)
	var unknown []error
	for _, key := range unknownKeys {
		unknown = append(unknown, fmt.Errorf("unknown field %q", key))
	}
	d.JSON(k.Paths, obj)
	out, err := jsonx.Encode(obj)
	return out, unknown, err
}
