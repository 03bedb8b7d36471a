// Package v1beta2 is the hub version of the fixture gizmo API.
// +kubebuilder:object:generate=true
// +groupName=bootstrap.cluster.x-k8s.io
package v1beta2
