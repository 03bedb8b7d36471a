// Package v1beta2 is the hub version of the fixture widget API.
// +kubebuilder:object:generate=true
// +groupName=infrastructure.cluster.x-k8s.io
package v1beta2
