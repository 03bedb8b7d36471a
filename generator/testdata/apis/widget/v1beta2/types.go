package v1beta2

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	foreignv1 "github.com/openshift/hypershift-capi-proxy/generator/testdata/apis/foreign/v1"
	"github.com/openshift/hypershift-capi-proxy/generator/testdata/apis/shared"
)

// Phase is a named type over a string.
// +kubebuilder:validation:Enum=Pending;Ready
type Phase string

// LocalRef references an object of an API group by name.
type LocalRef struct {
	// apiGroup is the group of the referenced object.
	APIGroup string `json:"apiGroup"`
	// kind of the referenced object.
	Kind string `json:"kind"`
	// name of the referenced object.
	Name string `json:"name"`
}

// RefList is a named slice of references.
type RefList []LocalRef

// Labels is a named map that carries no group.
type Labels map[string]string

// CommonSpec is embedded in WidgetSpec.
type CommonSpec struct {
	// templateRef is embedded with the struct that holds it.
	// +optional
	TemplateRef *corev1.ObjectReference `json:"templateRef,omitempty"`
	// paused stops reconciliation.
	Paused bool `json:"paused,omitempty"`
}

// Interval encodes itself (as metav1.Duration does); its private twin is an alias of it.
type Interval struct {
	Seconds int64 `json:"-"`
}

// MarshalJSON encodes the interval as a number of seconds.
func (i Interval) MarshalJSON() ([]byte, error) { return []byte("0"), nil }

// UnmarshalJSON decodes a number of seconds.
func (i *Interval) UnmarshalJSON([]byte) error { return nil }

// WidgetSpec is the desired state of a Widget.
type WidgetSpec struct {
	CommonSpec `json:",inline"`

	// infrastructureRef is a reference by group.
	InfrastructureRef LocalRef `json:"infrastructureRef"`
	// owners are references by apiVersion.
	// +optional
	Owners []corev1.ObjectReference `json:"owners,omitempty"`
	// peers are references by group, by pointer.
	// +optional
	Peers []*LocalRef `json:"peers,omitempty"`
	// extraRefs is a named slice of references.
	// +optional
	ExtraRefs RefList `json:"extraRefs,omitempty"`
	// byName maps names to references.
	// +optional
	ByName map[string]LocalRef `json:"byName,omitempty"`
	// byPhase has a mirrored key type.
	// +optional
	ByPhase map[Phase]string `json:"byPhase,omitempty"`
	// labels carry no group.
	// +optional
	Labels Labels `json:"labels,omitempty"`
	// port is a named pointer of another package.
	// +optional
	Port shared.UInt16 `json:"port,omitempty"`
	// interval encodes itself.
	// +optional
	Interval *Interval `json:"interval,omitempty"`
	// values are free-form JSON (opaque).
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`
	// template is another API's object (foreign).
	// +optional
	Template *foreignv1.Template `json:"template,omitempty"`
	// apiVersion of something else, as a pointer: carries a group.
	// +optional
	TargetAPIVersion *string `json:"apiVersion,omitempty"`
	// ignored is not serialized.
	Ignored string `json:"-"`
}

// WidgetStatus is the observed state of a Widget.
type WidgetStatus struct {
	// phase of the widget.
	// +optional
	Phase Phase `json:"phase,omitempty"`
	// conditions of the widget.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=widgets,scope=Namespaced,shortName=wd;wdg,categories=cluster-api
// +kubebuilder:storageversion
// +kubebuilder:subresource:status

// Widget is a fixture kind with two versions; this one is the hub.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WidgetSpec   `json:"spec,omitempty"`
	Status WidgetStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// WidgetList is a list of Widgets.
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

// Hub marks Widget as the conversion hub.
func (*Widget) Hub() {}

// GadgetSpec is the desired state of a Gadget.
type GadgetSpec struct {
	// size carries no group.
	Size int32 `json:"size"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=gadgets,scope=Cluster

// Gadget is a fixture kind with one version, cluster-scoped; it carries a group only in its metadata.
type Gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec GadgetSpec `json:"spec,omitempty"`
}

// +kubebuilder:object:root=true

// GadgetList is a list of Gadgets.
type GadgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gadget `json:"items"`
}
