package upstream

// Component is a known client of the CAPI groups on a HyperShift management cluster, told by the
// User-Agent its binary sends. The proxy's metrics name the components with Name, and every other client
// "other" (OtherComponent), so that a client cannot grow their series by the User-Agent it sends. A
// User-Agent is what a client claims, not who it is: enough to find who still uses an API version.
type Component struct {
	// Name is the value of the metrics' component label.
	Name string
	// Products are the product names that identify the component in a User-Agent (see package
	// proxy/metrics, ComponentOf): the whole of a User-Agent a manager sets itself
	// ("hypershift-operator-manager"), the binary name client-go's default begins with ("kubectl" of
	// "kubectl/v1.35.4 (linux/amd64) kubernetes/abc1234"), or the source name CAPI's begins with after the
	// binary ("cluster-api-controller-manager" of "manager/v1.13.6 cluster-api-controller-manager
	// (linux/amd64) cluster.x-k8s.io/abc1234").
	Products []string
	// Source says where the binary sets its User-Agent, or that it keeps client-go's default and how
	// its binary is named where it runs.
	Source string
}

// OtherComponent is the component label of a client whose User-Agent names no Component.
const OtherComponent = "other"

// Components lists the known clients, one line per component.
var Components = []Component{
	// Cluster API's managers: controllers/remote.DefaultClusterAPIUserAgent(controllerName), which
	// writes "<binary>/<version> <controllerName> (<os>/<arch>) cluster.x-k8s.io/<commit>".
	{Name: "capi-manager", Products: []string{"cluster-api-controller-manager"},
		Source: "sigs.k8s.io/cluster-api main.go: controllerName"},
	{Name: "kubeadm-bootstrap-manager", Products: []string{"cluster-api-kubeadm-bootstrap-manager"},
		Source: "sigs.k8s.io/cluster-api bootstrap/kubeadm/main.go: controllerName"},
	{Name: "kubeadm-control-plane-manager", Products: []string{"cluster-api-kubeadm-control-plane-manager"},
		Source: "sigs.k8s.io/cluster-api controlplane/kubeadm/main.go: controllerName"},

	// The infrastructure providers' managers.
	{Name: "capa-manager", Products: []string{"cluster-api-provider-aws-controller"},
		Source: "sigs.k8s.io/cluster-api-provider-aws/v2 main.go: restConfig.UserAgent"},
	{Name: "capz-manager", Products: []string{"cluster-api-provider-azure-manager"},
		Source: "sigs.k8s.io/cluster-api-provider-azure main.go: restConfig.UserAgent"},
	{Name: "capv-manager", Products: []string{"cluster-api-vsphere-manager"},
		Source: "sigs.k8s.io/cluster-api-provider-vsphere main.go: DefaultClusterAPIUserAgent(controllerName)"},
	{Name: "capibm-manager", Products: []string{"cluster-api-provider-ibmcloud-controller-manager"},
		Source: "sigs.k8s.io/cluster-api-provider-ibmcloud sets none: client-go's default, with the binary HyperShift " +
			"runs (hypershift-operator's platform/powervs: /bin/cluster-api-provider-ibmcloud-controller-manager)"},
	{Name: "manager", Products: []string{"manager"},
		Source: "a controller-runtime manager that sets no User-Agent, run as /manager: client-go's default names the " +
			"binary only. HyperShift runs CAPK, CAPO and the Agent provider so (hypershift-operator's platform/kubevirt, " +
			"openstack, agent); CAPG's and CAPIBM's upstream images too"},

	// HyperShift's operators and tools.
	{Name: "hypershift-operator", Products: []string{"hypershift-operator-manager", "hypershift-operator"},
		Source: "github.com/openshift/hypershift hypershift-operator/main.go: restConfig.UserAgent; its other commands " +
			"keep client-go's default with the binary hypershift-operator"},
	{Name: "control-plane-operator", Products: []string{"hypershift-controlplane-manager", "control-plane-operator"},
		Source: "github.com/openshift/hypershift control-plane-operator/main.go: restConfig.UserAgent; its other commands " +
			"(the hosted-cluster-config-operator's management-cluster client among them) keep client-go's default " +
			"with the binary /usr/bin/control-plane-operator"},
	{Name: "karpenter-operator", Products: []string{"karpenter-operator"},
		Source: "github.com/openshift/hypershift karpenter-operator sets none: client-go's default, binary /usr/bin/karpenter-operator"},
	{Name: "hypershift-cli", Products: []string{"hypershift", "hcp"},
		Source: "github.com/openshift/hypershift's command-line tools set none: client-go's default, binaries hypershift and hcp"},
	{Name: "cluster-autoscaler", Products: []string{"cluster-autoscaler"},
		Source: "k8s.io/autoscaler's clusterapi provider sets none: client-go's default, binary /usr/bin/cluster-autoscaler " +
			"(HyperShift's assets/cluster-autoscaler)"},
	{Name: "machine-approver", Products: []string{"machine-approver"},
		Source: "github.com/openshift/cluster-machine-approver sets none: client-go's default, binary /usr/bin/machine-approver"},

	// People and this project.
	{Name: "kubectl", Products: []string{"kubectl"}, Source: "client-go's default: the binary kubectl"},
	{Name: "oc", Products: []string{"oc"}, Source: "client-go's default: the binary oc"},
	{Name: "capi-proxy", Products: []string{"capi-proxy"},
		Source: "this project's binary (bin/capi-proxy): its migrate command keeps client-go's default; it talks straight " +
			"to kube-apiserver, and shows here only if pointed at a proxy"},
}
