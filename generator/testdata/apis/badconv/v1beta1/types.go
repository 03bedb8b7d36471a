package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=partials,scope=Namespaced

// Partial: the spoke v1beta1 converts to the hub by a function, but no function converts it back.
type Partial struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

// +kubebuilder:object:root=true

// PartialList is a list of Partials.
type PartialList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Partial `json:"items"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=twices,scope=Namespaced

// Twice: two functions convert v1beta1 to the hub.
type Twice struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

// +kubebuilder:object:root=true

// TwiceList is a list of Twices.
type TwiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Twice `json:"items"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=mixeds,scope=Namespaced

// Mixed: v1beta1 has ConvertTo and ConvertFrom methods, and functions convert it too.
type Mixed struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

// +kubebuilder:object:root=true

// MixedList is a list of Mixeds.
type MixedList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Mixed `json:"items"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=sidewayss,scope=Namespaced

// Sideways: a function converts v1alpha1 to v1beta1, neither of them the hub.
type Sideways struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

// +kubebuilder:object:root=true

// SidewaysList is a list of Sidewayss.
type SidewaysList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Sideways `json:"items"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=unstoreds,scope=Namespaced

// Unstored: converted by functions, but no version is the storage version.
type Unstored struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

// +kubebuilder:object:root=true

// UnstoredList is a list of Unstoreds.
type UnstoredList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Unstored `json:"items"`
}

// ConvertTo converts this Mixed to the hub version.
func (*Mixed) ConvertTo(conversion.Hub) error { return nil }

// ConvertFrom converts from the hub version to this Mixed.
func (*Mixed) ConvertFrom(conversion.Hub) error { return nil }
