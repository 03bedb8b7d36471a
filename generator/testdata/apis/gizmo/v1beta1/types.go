package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GizmoSpec is the desired state of a Gizmo.
type GizmoSpec struct {
	// configRef is a reference by apiVersion.
	ConfigRef *corev1.ObjectReference `json:"configRef,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=gizmos,scope=Namespaced

// Gizmo is a fixture kind with two versions, converted by functions of another package; this one is a
// spoke. Its Go type has no conversion methods.
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
