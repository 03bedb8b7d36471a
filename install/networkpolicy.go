package install

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// HostNetworkPolicyGroup is the namespace label by which a network policy selects the traffic of the
// host network on OpenShift with OVN-Kubernetes (policy-group.network.openshift.io/host-network: ""),
// where kube-apiserver runs: no namespace carries it, the network plugin matches it.
const HostNetworkPolicyGroup = "policy-group.network.openshift.io/host-network"

// WebhookNetworkPolicyName names WebhookNetworkPolicy.
const WebhookNetworkPolicyName = Name + "-webhook"

// WebhookNetworkPolicy is the ingress policy of the shared topology's proxy pods in namespace: their
// webhook listener (WebhookPort, the conversion and admission webhooks, which authenticate no caller)
// takes connections only from the host network, where kube-apiserver, their one caller, runs; the API
// and metrics ports (APIPort, MetricsPort) from anywhere, as without a policy. It selects kube-apiserver
// by HostNetworkPolicyGroup, which only OpenShift's OVN-Kubernetes matches: where another network plugin
// runs, or kube-apiserver is not on the host network, its webhook rule needs the plugin's own selector
// or the control plane's addresses (an ipBlock) instead, or the apiserver's conversions fail. The API
// listener serves the webhooks' paths as well, to whoever reaches the API port (the CAPI managers, which
// it must take from anywhere they run). It is in no overlay (config/network-policy): docs/operations.md
// says when to add it.
func WebhookNetworkPolicy(namespace string) *networkingv1.NetworkPolicy {
	tcp := corev1.ProtocolTCP
	port := func(p int32) networkingv1.NetworkPolicyPort {
		n := intstr.FromInt32(p)
		return networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: &n}
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: WebhookNetworkPolicyName, Namespace: namespace, Labels: Labels},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: Labels},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				{
					Ports: []networkingv1.NetworkPolicyPort{port(WebhookPort)},
					From: []networkingv1.NetworkPolicyPeer{{
						NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{HostNetworkPolicyGroup: ""}},
					}},
				},
				{Ports: []networkingv1.NetworkPolicyPort{port(APIPort), port(MetricsPort)}},
			},
		},
	}
}
