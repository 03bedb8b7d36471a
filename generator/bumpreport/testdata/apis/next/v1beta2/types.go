package v1beta2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// LocalRef references an object of an API group by name.
type LocalRef struct {
	APIGroup string `json:"apiGroup"`
	Kind     string `json:"kind"`
	Name     string `json:"name"`
}

// WidgetSpec is the desired state of a Widget.
type WidgetSpec struct {
	InfrastructureRef LocalRef `json:"infrastructureRef"`
	// bootstrapRef is new and carries a group.
	// +optional
	BootstrapRef *corev1.ObjectReference `json:"bootstrapRef,omitempty"`
	// settings are new and opaque.
	// +optional
	Settings *runtime.RawExtension `json:"settings,omitempty"`
	// replicas are new.
	Replicas int32 `json:"replicas,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=widgets,scope=Namespaced,shortName=wd;wdg,categories=cluster-api
// +kubebuilder:storageversion

// Widget now has one version.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec WidgetSpec `json:"spec,omitempty"`
}

// +kubebuilder:object:root=true

// WidgetList is a list of Widgets.
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=gizmos

// Gizmo is a new kind.
type Gizmo struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Target LocalRef `json:"target"`
}

// +kubebuilder:object:root=true

// GizmoList is a list of Gizmos.
type GizmoList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gizmo `json:"items"`
}
