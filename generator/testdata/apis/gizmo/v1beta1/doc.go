// Package v1beta1 is the spoke version of the fixture gizmo API, whose conversions live in package
// gizmo/conversion (CAPI v1.14's layout).
// +kubebuilder:object:generate=true
// +groupName=bootstrap.cluster.x-k8s.io
package v1beta1
