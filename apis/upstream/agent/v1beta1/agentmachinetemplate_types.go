package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AgentMachineTemplateSpec defines the desired state of AgentMachineTemplate
type AgentMachineTemplateSpec struct {
	Template AgentMachineTemplateResource `json:"template"`
}

// AgentMachineTemplateResource describes the data needed to create an AgentMachine from a template
type AgentMachineTemplateResource struct {
	// Spec is the specification of the desired behavior of the machine.
	Spec AgentMachineSpec `json:"spec"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=agentmachinetemplates,scope=Namespaced,categories=cluster-api,shortName=agentmt
// +kubebuilder:storageversion

// AgentMachineTemplate is the Schema for the agentmachinetemplates API
type AgentMachineTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec AgentMachineTemplateSpec `json:"spec,omitempty"`
}

// +kubebuilder:object:root=true

// AgentMachineTemplateList contains a list of AgentMachineTemplate.
type AgentMachineTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AgentMachineTemplate `json:"items"`
}

func init() {
	objectTypes = append(objectTypes, &AgentMachineTemplate{}, &AgentMachineTemplateList{})
}
