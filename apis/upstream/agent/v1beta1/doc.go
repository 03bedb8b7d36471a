// Package v1beta1 holds the v1beta1 API types of the Cluster API Agent infrastructure provider (group
// capi-provider.agent-install.openshift.io): AgentCluster, AgentMachine, AgentMachineTemplate and their lists.
// v1beta1 is the storage version of every kind.
//
// These types are written by hand from the published CRD schema, because the provider's Go module
// (github.com/openshift/cluster-api-provider-agent/api) is not served by the module proxy. The sources are
// the CRD files capi-provider.agent-install.openshift.io_{agentclusters,agentmachines,agentmachinetemplates}.yaml
// and the Go types in github.com/openshift/cluster-api-provider-agent, api/v1beta1. Field names, JSON tags,
// markers and doc comments follow upstream so that controller-gen regenerates the published CRDs; doc comments
// are the CRD descriptions, so they are kept word for word even where they read oddly. Keep these types in step
// with upstream whenever the provider is bumped, and regenerate the CRDs to prove it.
//
// Like upstream, the types reference the Cluster API core v1beta1 types (sigs.k8s.io/cluster-api/api/core/v1beta1:
// APIEndpoint, Conditions, FailureDomains, MachineAddress) and sigs.k8s.io/cluster-api/api/deprecated/errors.MachineStatusError.
//
// +groupName=capi-provider.agent-install.openshift.io
// +kubebuilder:object:generate=true
package v1beta1
