package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
)

// WidgetSpec is the desired state of a Widget.
type WidgetSpec struct {
	// infrastructureRef is a reference by apiVersion.
	InfrastructureRef *corev1.ObjectReference `json:"infrastructureRef,omitempty"`
	// count carries no group.
	Count *int32 `json:"count,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=widgets,scope=Namespaced,shortName=wd;wdg,categories=cluster-api
// +kubebuilder:subresource:status
// +kubebuilder:deprecatedversion:warning="widget v1beta1 is deprecated"

// Widget is a fixture kind with two versions; this one is a spoke, deprecated.
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

// ConvertTo converts this Widget to the hub version.
func (*Widget) ConvertTo(conversion.Hub) error { return nil }

// ConvertFrom converts from the hub version to this Widget.
func (*Widget) ConvertFrom(conversion.Hub) error { return nil }

// SetAPIVersionGetter sets the getter the conversions resolve references with, without a context (CAPI
// v1.13's, in its v1beta1 API packages).
func SetAPIVersionGetter(func(schema.GroupKind) (string, error)) {}
