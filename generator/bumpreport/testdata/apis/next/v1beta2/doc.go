// Package v1beta2 is the next release of the generator's fixture widget API
// (generator/testdata/apis/widget/v1beta2), for the bump report's tests: one field removed, fields
// added (one carrying a group, one opaque), Gadget gone, Gizmo new, and no conversion methods.
// +kubebuilder:object:generate=true
// +groupName=infrastructure.cluster.x-k8s.io
package v1beta2
