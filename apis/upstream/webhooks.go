package upstream

// WebhookSource is an upstream module's admission webhook manifest (controller-gen's
// config/webhook/manifests.yaml: a MutatingWebhookConfiguration and a ValidatingWebhookConfiguration)
// whose webhooks the generator mirrors onto the private groups, apis/private/webhooks/<Name>.yaml. The
// proxy serves them at AdmissionPathPrefix + Name + the upstream path and forwards each review to the
// webhook server of the manager Name stands for (the proxy's --admission-webhook=<Name>=<URL>).
type WebhookSource struct {
	// Module is the Go module that ships the manifest, at the version go.mod pins.
	Module string
	// File is the manifest's path inside the module.
	File string
	// Name names the manager whose webhook server serves the manifest's webhooks, and the output file.
	Name string
}

// AdmissionPathPrefix starts the path of every admission webhook the proxy serves:
// AdmissionPathPrefix + "<WebhookSource.Name>" + "<upstream path>".
const AdmissionPathPrefix = "/admission/"

// Webhooks lists the upstream webhook manifests to mirror, one line per manager. The Agent provider ships
// none (its types have no webhooks).
var Webhooks = []WebhookSource{
	{Module: "sigs.k8s.io/cluster-api", File: "core/config/webhook/manifests.yaml", Name: "cluster-api"},
	{Module: "sigs.k8s.io/cluster-api", File: "bootstrap/kubeadm/config/webhook/manifests.yaml", Name: "kubeadm-bootstrap"},
	{Module: "sigs.k8s.io/cluster-api", File: "controlplane/kubeadm/config/webhook/manifests.yaml", Name: "kubeadm-control-plane"},
	{Module: "sigs.k8s.io/cluster-api-provider-aws/v2", File: "config/webhook/manifests.yaml", Name: "aws"},
	{Module: "sigs.k8s.io/cluster-api-provider-azure", File: "config/webhook/manifests.yaml", Name: "azure"},
	{Module: "sigs.k8s.io/cluster-api-provider-gcp", File: "config/webhook/manifests.yaml", Name: "gcp"},
	{Module: "sigs.k8s.io/cluster-api-provider-ibmcloud", File: "config/webhook/manifests.yaml", Name: "ibmcloud"},
	{Module: "sigs.k8s.io/cluster-api-provider-kubevirt", File: "config/webhook/manifests.yaml", Name: "kubevirt"},
	{Module: "sigs.k8s.io/cluster-api-provider-openstack", File: "config/webhook/manifests.yaml", Name: "openstack"},
	{Module: "sigs.k8s.io/cluster-api-provider-vsphere", File: "config/govmomi/webhook/manifests.yaml", Name: "vsphere"},
	{Module: "sigs.k8s.io/cluster-api-provider-vsphere", File: "config/supervisor/webhook/manifests.yaml", Name: "vsphere-supervisor"},
}
