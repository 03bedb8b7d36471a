package upstream

// RoleSource is an upstream ClusterRole manifest whose grants on the mapped groups the generator mirrors
// into a private ClusterRole, apis/private/rbac/<Name>.yaml (see translate.PrivatePolicyRules for what
// is mirrored), so that a service account that held the upstream role keeps its access through the proxy
// once it also holds the private one.
type RoleSource struct {
	// Module is the Go module that ships the manifest, at the version go.mod pins, e.g.
	// "sigs.k8s.io/cluster-api".
	Module string
	// File is the manifest's path inside the module. It holds one ClusterRole (and may begin with "---").
	File string
	// Name names the private ClusterRole (PrivateRolePrefix + Name) and its file.
	Name string
	// AggregateTo are label keys the private ClusterRole carries with the value "true": those the
	// upstream aggregated ClusterRoles select that aggregate the upstream role (each manager's
	// aggregated-manager-role), so that whoever is bound to such an aggregated role also gets the private
	// grants. Source: the provider's config/default/manager_role_aggregation_patch.yaml.
	AggregateTo []string
}

// PrivateRolePrefix starts the name of every generated private ClusterRole.
const PrivateRolePrefix = "hypershift-capi-private-"

// Roles lists the upstream ClusterRoles to mirror, one line per role.
var Roles = []RoleSource{
	{Module: "sigs.k8s.io/cluster-api", File: "core/config/rbac/role.yaml", Name: "cluster-api-manager",
		AggregateTo: []string{"cluster.x-k8s.io/aggregate-to-manager"}},
	{Module: "sigs.k8s.io/cluster-api", File: "bootstrap/kubeadm/config/rbac/role.yaml", Name: "kubeadm-bootstrap-manager"},
	{Module: "sigs.k8s.io/cluster-api", File: "controlplane/kubeadm/config/rbac/role.yaml", Name: "kubeadm-control-plane-manager",
		AggregateTo: []string{"kubeadm.controlplane.cluster.x-k8s.io/aggregate-to-manager"}},
	// Infrastructure providers: each one's manager role (config/rbac/role.yaml).
	{Module: "sigs.k8s.io/cluster-api-provider-aws/v2", File: "config/rbac/role.yaml", Name: "aws-manager"},
	{Module: "sigs.k8s.io/cluster-api-provider-azure", File: "config/rbac/role.yaml", Name: "azure-manager"},
	{Module: "sigs.k8s.io/cluster-api-provider-gcp", File: "config/rbac/role.yaml", Name: "gcp-manager"},
	{Module: "sigs.k8s.io/cluster-api-provider-vsphere", File: "config/rbac/role.yaml", Name: "vsphere-manager"},
	{Module: "sigs.k8s.io/cluster-api-provider-kubevirt", File: "config/rbac/role.yaml", Name: "kubevirt-manager"},
	{Module: "sigs.k8s.io/cluster-api-provider-ibmcloud", File: "config/rbac/role.yaml", Name: "ibmcloud-manager"},
	{Module: "sigs.k8s.io/cluster-api-provider-openstack", File: "config/rbac/role.yaml", Name: "openstack-manager"},
}
