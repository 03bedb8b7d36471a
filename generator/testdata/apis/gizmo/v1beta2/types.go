package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConfigRef references an object by group.
type ConfigRef struct {
	// apiGroup is the group of the referenced object.
	APIGroup string `json:"apiGroup"`
	// kind of the referenced object.
	Kind string `json:"kind"`
	// name of the referenced object.
	Name string `json:"name"`
}

// GizmoSpec is the desired state of a Gizmo.
type GizmoSpec struct {
	// configRef is a reference by group.
	// +optional
	ConfigRef ConfigRef `json:"configRef,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=gizmos,scope=Namespaced
// +kubebuilder:storageversion

// Gizmo is a fixture kind with two versions; this one is the hub (the storage version). Its Go type has
// no Hub method.
type Gizmo struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec GizmoSpec `json:"spec,omitempty"`
}

// +kubebuilder:object:root=true

// GizmoList is a list of Gizmos.
type GizmoList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gizmo `json:"items"`
}
