// Package v1beta1 is the spoke version of the fixture widget API.
// +kubebuilder:object:generate=true
// +groupName=infrastructure.cluster.x-k8s.io
package v1beta1
