package upstream

// Group pairs an upstream API group with the private group HyperShift stores its copy in.
// The mapping is bijective; a group that is not listed (core, apps, hypershift.openshift.io, ...) is never
// rewritten. Source: the project's design (the group mapping the README states).
type Group struct {
	// Upstream is the group clients speak, e.g. "cluster.x-k8s.io".
	Upstream string
	// Private is the group the backend stores objects in, e.g. "cluster.hypershift.openshift.io".
	Private string
}

// Groups is the group mapping, one line per group.
var Groups = []Group{
	{Upstream: "cluster.x-k8s.io", Private: "cluster.hypershift.openshift.io"},
	{Upstream: "infrastructure.cluster.x-k8s.io", Private: "infrastructure.cluster.hypershift.openshift.io"},
	{Upstream: "bootstrap.cluster.x-k8s.io", Private: "bootstrap.cluster.hypershift.openshift.io"},
	{Upstream: "controlplane.cluster.x-k8s.io", Private: "controlplane.cluster.hypershift.openshift.io"},
	{Upstream: "addons.cluster.x-k8s.io", Private: "addons.cluster.hypershift.openshift.io"},
	{Upstream: "ipam.cluster.x-k8s.io", Private: "ipam.cluster.hypershift.openshift.io"},
	{Upstream: "runtime.cluster.x-k8s.io", Private: "runtime.cluster.hypershift.openshift.io"},
	{Upstream: "capi-provider.agent-install.openshift.io", Private: "capi-provider.agent-install.hypershift.openshift.io"},
	// CAPV's supervisor (vSphere with Tanzu) kinds.
	{Upstream: "vmware.infrastructure.cluster.x-k8s.io", Private: "vmware.infrastructure.cluster.hypershift.openshift.io"},
	// OpenStack Resource Controller (ORC), which CAPO creates images and other OpenStack resources through.
	{Upstream: "openstack.k-orc.cloud", Private: "openstack.k-orc.hypershift.openshift.io"},
}

// Package is one upstream API package (one group version) that gets a private twin.
type Package struct {
	// Path is the upstream Go import path, e.g. "sigs.k8s.io/cluster-api/api/core/v1beta2".
	Path string
	// Dir names the twin: apis/private/<Dir> holds the private types and zz_generated/convert/<Dir> the
	// converters. Its last element is the version, e.g. "core/v1beta2".
	Dir string
	// Contract is the Cluster API contract version the package's kinds implement ("v1beta1", "v1beta2"),
	// for provider packages that CAPI references by contract (bootstrap, control plane, infrastructure).
	// The private CRDs then carry CAPI's contract labels ("cluster.x-k8s.io/<contract>: <versions joined
	// by _>"), from which CAPI's apiVersion getter picks the version of a referenced kind.
	Contract string
}

// Packages lists every mirrored upstream API package, one line per package. Versions as pinned in go.mod
// (sigs.k8s.io/cluster-api v1.14.x, the line HyperShift uses).
var Packages = []Package{
	{Path: "sigs.k8s.io/cluster-api/api/core/v1beta1", Dir: "core/v1beta1"},
	{Path: "sigs.k8s.io/cluster-api/api/core/v1beta2", Dir: "core/v1beta2"},
	{Path: "sigs.k8s.io/cluster-api/api/addons/v1beta1", Dir: "addons/v1beta1"},
	{Path: "sigs.k8s.io/cluster-api/api/addons/v1beta2", Dir: "addons/v1beta2"},
	{Path: "sigs.k8s.io/cluster-api/api/ipam/v1alpha1", Dir: "ipam/v1alpha1"},
	{Path: "sigs.k8s.io/cluster-api/api/ipam/v1beta1", Dir: "ipam/v1beta1"},
	{Path: "sigs.k8s.io/cluster-api/api/ipam/v1beta2", Dir: "ipam/v1beta2"},
	{Path: "sigs.k8s.io/cluster-api/api/runtime/v1alpha1", Dir: "runtime/v1alpha1"},
	{Path: "sigs.k8s.io/cluster-api/api/runtime/v1beta2", Dir: "runtime/v1beta2"},
	{Path: "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta1", Dir: "bootstrap/kubeadm/v1beta1", Contract: "v1beta1"},
	{Path: "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2", Dir: "bootstrap/kubeadm/v1beta2", Contract: "v1beta2"},
	{Path: "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta1", Dir: "controlplane/kubeadm/v1beta1", Contract: "v1beta1"},
	{Path: "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2", Dir: "controlplane/kubeadm/v1beta2", Contract: "v1beta2"},

	// CAPA, sigs.k8s.io/cluster-api-provider-aws/v2 v2.13.0.
	{Path: "sigs.k8s.io/cluster-api-provider-aws/v2/api/v1beta1", Dir: "aws/v1beta1", Contract: "v1beta1"},
	{Path: "sigs.k8s.io/cluster-api-provider-aws/v2/api/v1beta2", Dir: "aws/v1beta2", Contract: "v1beta1"},
	{Path: "sigs.k8s.io/cluster-api-provider-aws/v2/exp/api/v1beta1", Dir: "aws/exp/v1beta1", Contract: "v1beta1"},
	{Path: "sigs.k8s.io/cluster-api-provider-aws/v2/exp/api/v1beta2", Dir: "aws/exp/v1beta2", Contract: "v1beta1"},
	{Path: "sigs.k8s.io/cluster-api-provider-aws/v2/controlplane/eks/api/v1beta1", Dir: "aws/controlplane/eks/v1beta1", Contract: "v1beta1"},
	{Path: "sigs.k8s.io/cluster-api-provider-aws/v2/controlplane/eks/api/v1beta2", Dir: "aws/controlplane/eks/v1beta2", Contract: "v1beta1"},
	{Path: "sigs.k8s.io/cluster-api-provider-aws/v2/controlplane/rosa/api/v1beta2", Dir: "aws/controlplane/rosa/v1beta2", Contract: "v1beta1"},
	{Path: "sigs.k8s.io/cluster-api-provider-aws/v2/bootstrap/eks/api/v1beta1", Dir: "aws/bootstrap/eks/v1beta1", Contract: "v1beta1"},
	{Path: "sigs.k8s.io/cluster-api-provider-aws/v2/bootstrap/eks/api/v1beta2", Dir: "aws/bootstrap/eks/v1beta2", Contract: "v1beta1"},

	// CAPZ, sigs.k8s.io/cluster-api-provider-azure v1.27.0.
	{Path: "sigs.k8s.io/cluster-api-provider-azure/api/v1beta1", Dir: "azure/v1beta1", Contract: "v1beta1"},
	{Path: "sigs.k8s.io/cluster-api-provider-azure/api/v1alpha1", Dir: "azure/v1alpha1", Contract: "v1beta1"},
	{Path: "sigs.k8s.io/cluster-api-provider-azure/exp/api/v1beta1", Dir: "azure/exp/v1beta1", Contract: "v1beta1"},

	// CAPG, sigs.k8s.io/cluster-api-provider-gcp v1.13.1.
	{Path: "sigs.k8s.io/cluster-api-provider-gcp/api/v1beta1", Dir: "gcp/v1beta1", Contract: "v1beta1"},
	{Path: "sigs.k8s.io/cluster-api-provider-gcp/exp/api/v1beta1", Dir: "gcp/exp/v1beta1", Contract: "v1beta1"},
	{Path: "sigs.k8s.io/cluster-api-provider-gcp/exp/bootstrap/gke/api/v1beta1", Dir: "gcp/bootstrap/gke/v1beta1", Contract: "v1beta1"},

	// CAPV, sigs.k8s.io/cluster-api-provider-vsphere v1.16.1.
	{Path: "sigs.k8s.io/cluster-api-provider-vsphere/api/govmomi/v1beta1", Dir: "vsphere/govmomi/v1beta1", Contract: "v1beta1"},
	{Path: "sigs.k8s.io/cluster-api-provider-vsphere/api/govmomi/v1beta2", Dir: "vsphere/govmomi/v1beta2", Contract: "v1beta2"},
	{Path: "sigs.k8s.io/cluster-api-provider-vsphere/api/supervisor/v1beta1", Dir: "vsphere/supervisor/v1beta1", Contract: "v1beta1"},
	{Path: "sigs.k8s.io/cluster-api-provider-vsphere/api/supervisor/v1beta2", Dir: "vsphere/supervisor/v1beta2", Contract: "v1beta2"},

	// KubeVirt (CAPK), sigs.k8s.io/cluster-api-provider-kubevirt v0.11.2. Its machines embed KubeVirt's
	// VirtualMachineSpec (kubevirt.io/api), mirrored where a group can hide (dataVolumeTemplates).
	{Path: "sigs.k8s.io/cluster-api-provider-kubevirt/api/v1alpha1", Dir: "kubevirt/v1alpha1", Contract: "v1beta1"},

	// IBM Cloud (CAPIBM), sigs.k8s.io/cluster-api-provider-ibmcloud v0.14.0: PowerVS and VPC.
	{Path: "sigs.k8s.io/cluster-api-provider-ibmcloud/api/powervs/v1beta2", Dir: "ibmcloud/powervs/v1beta2", Contract: "v1beta1"},
	{Path: "sigs.k8s.io/cluster-api-provider-ibmcloud/api/powervs/v1beta3", Dir: "ibmcloud/powervs/v1beta3", Contract: "v1beta1"},
	{Path: "sigs.k8s.io/cluster-api-provider-ibmcloud/api/vpc/v1beta1", Dir: "ibmcloud/vpc/v1beta1", Contract: "v1beta1"},
	{Path: "sigs.k8s.io/cluster-api-provider-ibmcloud/api/vpc/v1beta2", Dir: "ibmcloud/vpc/v1beta2", Contract: "v1beta1"},

	// OpenStack (CAPO), sigs.k8s.io/cluster-api-provider-openstack v0.14.2, and ORC
	// (github.com/k-orc/openstack-resource-controller/v2 v2.6.0), whose kinds CAPO references.
	{Path: "sigs.k8s.io/cluster-api-provider-openstack/api/v1beta1", Dir: "openstack/v1beta1", Contract: "v1beta1"},
	{Path: "sigs.k8s.io/cluster-api-provider-openstack/api/v1alpha1", Dir: "openstack/v1alpha1", Contract: "v1beta1"},
	{Path: "github.com/k-orc/openstack-resource-controller/v2/api/v1alpha1", Dir: "orc/v1alpha1"},

	// Agent (github.com/openshift/cluster-api-provider-agent): not on the module proxy, so its types are
	// written here by hand from the published CRDs; see apis/upstream/agent.
	{Path: "github.com/openshift/hypershift-capi-proxy/apis/upstream/agent/v1alpha1", Dir: "agent/v1alpha1", Contract: "v1beta1"},
	{Path: "github.com/openshift/hypershift-capi-proxy/apis/upstream/agent/v1beta1", Dir: "agent/v1beta1", Contract: "v1beta1"},
}

// ConversionModule lists, for one Go module, the packages where the module may keep the whole-object
// conversions of its kinds outside its API packages.
type ConversionModule struct {
	// Module is the Go module path, e.g. "sigs.k8s.io/cluster-api".
	Module string
	// Packages are package paths relative to Module, e.g. "core/webhooks/conversion".
	Packages []string
}

// ConversionPackages are the candidate conversion packages, per module. Upstream converts a kind between
// its versions either with methods of its API types (controller-runtime's conversion.Hub and
// conversion.Convertible) or with exported functions of one of these packages, of the shape
// func(context.Context, *Spoke, *Hub) error and func(context.Context, *Hub, *Spoke) error, which its
// manager registers with controller-runtime's conversion webhook as a hub-and-spoke converter
// (conversion.NewHubSpokeConverter). The generator loads, beside the API packages, those of the
// candidates that exist at the version go.mod pins (a module not in go.mod, or a package it does not
// hold, is skipped) and takes each kind's conversions from wherever it finds them, and
// SetAPIVersionGetter from an API or a conversion package (see package generator/model). A provider that
// moves its conversions out of its API types gets a line here.
var ConversionPackages = []ConversionModule{
	// CAPI keeps its hub-and-spoke converters and SetAPIVersionGetter beside its webhooks since v1.14
	// (before, the API types converted themselves).
	{Module: "sigs.k8s.io/cluster-api", Packages: []string{
		"core/webhooks/conversion",
		"bootstrap/kubeadm/webhooks/conversion",
		"controlplane/kubeadm/webhooks/conversion",
	}},
}

// OpaqueTypes are types whose content the generator cannot see into (free-form JSON). Each may appear in an
// upstream type only if it is listed here with the reason it never needs translating; any other opaque type
// fails generation. Keys are "<import path>.<type name>".
var OpaqueTypes = map[string]string{
	// ClusterClass variable schemas (default, example, enum), Cluster topology variable values and
	// ClusterClass JSON patch values are user data. The CAPI controllers read them and apply them in their
	// own (upstream) view of the world, so they must reach them byte for byte as the user wrote them.
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.JSON": "user data: ClusterClass variables and patch values",
	// CAPA's NodeadmConfig kubelet configuration fragments (kubelet.config.k8s.io) and CAPZ's Azure Service
	// Operator resource templates (AzureASOManaged*.spec.resources, groups *.azure.com) are objects of other
	// APIs that the provider hands on as written; neither names a CAPI group.
	"k8s.io/apimachinery/pkg/runtime.RawExtension": "objects of other APIs: nodeadm kubelet config, Azure Service Operator resources",
}

// ForeignTypes are types of other APIs that provider kinds embed whole. The generator can see into them and
// finds fields that could carry a group (apiVersion, apiGroup, ObjectMeta), but those name only the other
// API's own objects, never a CAPI kind, so they pass through untouched like OpaqueTypes. Each is listed with
// the reason. Keys are "<import path>.<type name>".
var ForeignTypes = map[string]string{
	// CAPK's KubevirtMachine.spec.virtualMachineTemplate.spec: KubeVirt's VirtualMachine spec. Its
	// dataVolumeTemplates name CDI's own group (cdi.kubevirt.io) and their PVC data sources name volume
	// snapshots or populators; its instance template references Secrets, ConfigMaps, PVCs and KubeVirt
	// objects by name. CAPK copies it verbatim into the VirtualMachine it creates in the hosted cluster's
	// infrastructure namespace.
	"kubevirt.io/api/core/v1.VirtualMachineSpec": "KubeVirt VirtualMachine spec: names only KubeVirt, CDI and core objects",
}

// PrivateShortNamePrefix is put before every upstream shortName in the private CRDs, and
// PrivateCategory replaces every upstream category, so that `kubectl get ma` or `kubectl get cluster-api`
// on a management cluster that also has the upstream CRDs is never ambiguous. Clients of the proxy see the
// upstream shortNames and categories in discovery.
const (
	PrivateShortNamePrefix = "hs"
	PrivateCategoryPrefix  = "hypershift-"
)

// PrivateGroup returns the private twin of an upstream group and whether the group is mapped.
func PrivateGroup(upstream string) (string, bool) {
	for _, g := range Groups {
		if g.Upstream == upstream {
			return g.Private, true
		}
	}
	return "", false
}

// UpstreamGroup returns the upstream group of a private group and whether the group is mapped.
func UpstreamGroup(private string) (string, bool) {
	for _, g := range Groups {
		if g.Private == private {
			return g.Upstream, true
		}
	}
	return "", false
}

// GroupKindAnnotations are annotation keys whose value names a "Kind.group" (CAPI's
// cluster.x-k8s.io/cloned-from-groupkind, set on objects cloned from a template). Their values are
// translated like any group; their keys, like every label and annotation key, never are.
var GroupKindAnnotations = []string{
	"cluster.x-k8s.io/cloned-from-groupkind",
}

// NotGroupFields are fields whose JSON name says apiVersion or apiGroup but whose value can never name a
// mapped group, each with the reason. Keys are "<import path>.<type name>.<Go field name>".
var NotGroupFields = map[string]string{
	// Env var fieldRef (kubeadm extraEnvs): the schema version of a Pod field path, always a core version.
	"k8s.io/api/core/v1.ObjectFieldSelector.APIVersion": "Pod field selector schema version (\"v1\")",
}
