package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift/hypershift-capi-proxy/generator/testdata/apis/shared"
)

// BrokenSpec has fields whose content the generator cannot see into.
type BrokenSpec struct {
	// blob encodes itself and is listed nowhere.
	Blob shared.Blob `json:"blob"`
	// anything is an interface.
	Anything map[string]any `json:"anything,omitempty"`
}

// +kubebuilder:object:root=true

// Broken is a kind with unclassifiable fields.
type Broken struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec BrokenSpec `json:"spec,omitempty"`
}

// +kubebuilder:object:root=true

// BrokenList is a list of Brokens.
type BrokenList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Broken `json:"items"`
}
