package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=partials,scope=Namespaced
// +kubebuilder:storageversion

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
// +kubebuilder:storageversion

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
// +kubebuilder:storageversion

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
// +kubebuilder:storageversion

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
