package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	orcv1 "github.com/k-orc/openstack-resource-controller/v2/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	awsv1 "sigs.k8s.io/cluster-api-provider-aws/v2/api/v1beta2"
	azurev1 "sigs.k8s.io/cluster-api-provider-azure/api/v1beta1"
	gcpv1 "sigs.k8s.io/cluster-api-provider-gcp/api/v1beta1"
	powervsv1 "sigs.k8s.io/cluster-api-provider-ibmcloud/api/powervs/v1beta3"
	vpcv1 "sigs.k8s.io/cluster-api-provider-ibmcloud/api/vpc/v1beta2"
	capkv1 "sigs.k8s.io/cluster-api-provider-kubevirt/api/v1alpha1"
	openstackv1 "sigs.k8s.io/cluster-api-provider-openstack/api/v1beta1"
	vspherev1 "sigs.k8s.io/cluster-api-provider-vsphere/api/govmomi/v1beta2"
	vmwarev1 "sigs.k8s.io/cluster-api-provider-vsphere/api/supervisor/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	agentv1 "github.com/openshift/hypershift-capi-proxy/apis/upstream/agent/v1beta1"
)

// providerCase is one infrastructure provider's kinds as a hosted cluster uses them: the infrastructure
// cluster a Cluster references, the machine template a MachineDeployment references, and the
// infrastructure machine a Machine references; extras are objects of further kinds the provider uses,
// owned by the infrastructure cluster (ORC's Image for OpenStack). References marks JSON paths of provider objects that
// reference another mapped kind (identityRef, IP pools), with the upstream group they name.
type providerCase struct {
	name                            string
	infraCluster, template, machine client.Object
	extras                          []client.Object
	references                      []providerReference
}

type providerReference struct {
	obj   client.Object
	path  []string
	group string // upstream group the stored value must name privately (apiGroup, or apiVersion's group)
}

// providerScheme holds the upstream Go types of every provider, as a provider's controller registers them.
var providerScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, clusterv1.AddToScheme,
		awsv1.AddToScheme, azurev1.AddToScheme, gcpv1.AddToScheme, vspherev1.AddToScheme, vmwarev1.AddToScheme,
		agentv1.AddToScheme, capkv1.AddToScheme, powervsv1.AddToScheme, vpcv1.AddToScheme, openstackv1.AddToScheme,
		orcv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

func providerCases() []providerCase {
	azureCluster := &azurev1.AzureCluster{Spec: azurev1.AzureClusterSpec{AzureClusterClassSpec: azurev1.AzureClusterClassSpec{
		Location: "eastus",
		IdentityRef: &corev1.ObjectReference{
			APIVersion: azurev1.GroupVersion.String(), Kind: "AzureClusterIdentity", Name: "identity"},
	}}}
	vsphereMachineSpec := vspherev1.VSphereMachineSpec{VirtualMachineCloneSpec: vspherev1.VirtualMachineCloneSpec{
		Template: "rhcos",
		Network: vspherev1.NetworkSpec{Devices: []vspherev1.NetworkDeviceSpec{{
			NetworkName:        "VM Network",
			AddressesFromPools: []vspherev1.IPPoolReference{{APIGroup: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool", Name: "pool"}},
		}}},
	}}
	vsphereMachine := &vspherev1.VSphereMachine{Spec: vsphereMachineSpec}
	vmwareMachineSpec := vmwarev1.VSphereMachineSpec{ClassName: "best-effort-small", ImageName: "rhcos"}
	awsMachineSpec := awsv1.AWSMachineSpec{InstanceType: "m5.large"}
	azureMachineSpec := azurev1.AzureMachineSpec{VMSize: "Standard_D2s_v3", OSDisk: azurev1.OSDisk{OSType: "Linux"}}
	gcpMachineSpec := gcpv1.GCPMachineSpec{InstanceType: "n1-standard-2"}
	kubevirtMachineSpec := capkv1.KubevirtMachineSpec{VirtualMachineTemplate: capkv1.VirtualMachineTemplateSpec{
		Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{}}}}
	powervsResource := powervsv1.IBMPowerVSResourceReference{Name: ptr.To("hypershift-net")}
	powervsMachineSpec := powervsv1.IBMPowerVSMachineSpec{Network: powervsResource, ImageRef: powervsv1.ImageReference{Name: "rhcos"}}
	vpcMachineSpec := vpcv1.IBMVPCMachineSpec{Zone: "us-south-1", Image: &vpcv1.IBMVPCResourceReference{Name: ptr.To("rhcos")}}
	openstackIdentity := openstackv1.OpenStackIdentityReference{Type: "Secret", Name: "cloud", CloudName: "openstack"}
	openstackMachineSpec := openstackv1.OpenStackMachineSpec{Flavor: ptr.To("m1.large"),
		Image: openstackv1.ImageParam{ImageRef: &openstackv1.ResourceReference{Name: "rhcos"}}}
	openstackMachine := &openstackv1.OpenStackMachine{Spec: openstackMachineSpec}
	openstackMachine.Spec.FloatingIPPoolRef = &corev1.TypedLocalObjectReference{
		APIGroup: ptr.To(upstreamInfra), Kind: "OpenStackFloatingIPPool", Name: "pool"}

	return []providerCase{{
		name:         "aws",
		infraCluster: &awsv1.AWSCluster{Spec: awsv1.AWSClusterSpec{Region: "us-east-1"}},
		template: &awsv1.AWSMachineTemplate{Spec: awsv1.AWSMachineTemplateSpec{
			Template: awsv1.AWSMachineTemplateResource{Spec: awsMachineSpec}}},
		machine: &awsv1.AWSMachine{Spec: awsMachineSpec},
	}, {
		name:         "azure",
		infraCluster: azureCluster,
		template: &azurev1.AzureMachineTemplate{Spec: azurev1.AzureMachineTemplateSpec{
			Template: azurev1.AzureMachineTemplateResource{Spec: azureMachineSpec}}},
		machine:    &azurev1.AzureMachine{Spec: azureMachineSpec},
		references: []providerReference{{azureCluster, []string{"spec", "identityRef", "apiVersion"}, upstreamInfra}},
	}, {
		name:         "gcp",
		infraCluster: &gcpv1.GCPCluster{Spec: gcpv1.GCPClusterSpec{Project: "hypershift", Region: "us-east1"}},
		template: &gcpv1.GCPMachineTemplate{Spec: gcpv1.GCPMachineTemplateSpec{
			Template: gcpv1.GCPMachineTemplateResource{Spec: gcpMachineSpec}}},
		machine: &gcpv1.GCPMachine{Spec: gcpMachineSpec},
	}, {
		name:         "vsphere",
		infraCluster: &vspherev1.VSphereCluster{Spec: vspherev1.VSphereClusterSpec{Server: "vcenter.example.com"}},
		template: &vspherev1.VSphereMachineTemplate{Spec: vspherev1.VSphereMachineTemplateSpec{
			Template: vspherev1.VSphereMachineTemplateResource{Spec: vsphereMachineSpec}}},
		machine: vsphereMachine,
		references: []providerReference{{vsphereMachine,
			[]string{"spec", "network", "devices", "0", "addressesFromPools", "0", "apiGroup"}, "ipam.cluster.x-k8s.io"}},
	}, {
		name:         "vsphere-supervisor",
		infraCluster: &vmwarev1.VSphereCluster{},
		template: &vmwarev1.VSphereMachineTemplate{Spec: vmwarev1.VSphereMachineTemplateSpec{
			Template: vmwarev1.VSphereMachineTemplateResource{Spec: vmwareMachineSpec}}},
		machine: &vmwarev1.VSphereMachine{Spec: vmwareMachineSpec},
	}, {
		name:         "kubevirt",
		infraCluster: &capkv1.KubevirtCluster{},
		template: &capkv1.KubevirtMachineTemplate{Spec: capkv1.KubevirtMachineTemplateSpec{
			Template: capkv1.KubevirtMachineTemplateResource{Spec: kubevirtMachineSpec}}},
		machine: &capkv1.KubevirtMachine{Spec: kubevirtMachineSpec},
	}, {
		name:         "ibm-powervs",
		infraCluster: &powervsv1.IBMPowerVSCluster{Spec: powervsv1.IBMPowerVSClusterSpec{Network: powervsResource}},
		template: &powervsv1.IBMPowerVSMachineTemplate{Spec: powervsv1.IBMPowerVSMachineTemplateSpec{
			Template: powervsv1.IBMPowerVSMachineTemplateResource{Spec: powervsMachineSpec}}},
		machine: &powervsv1.IBMPowerVSMachine{Spec: powervsMachineSpec},
	}, {
		name:         "ibm-vpc",
		infraCluster: &vpcv1.IBMVPCCluster{Spec: vpcv1.IBMVPCClusterSpec{Region: "us-south", ResourceGroup: "hypershift"}},
		template: &vpcv1.IBMVPCMachineTemplate{Spec: vpcv1.IBMVPCMachineTemplateSpec{
			Template: vpcv1.IBMVPCMachineTemplateResource{Spec: vpcMachineSpec}}},
		machine: &vpcv1.IBMVPCMachine{Spec: vpcMachineSpec},
	}, {
		name:         "openstack",
		infraCluster: &openstackv1.OpenStackCluster{Spec: openstackv1.OpenStackClusterSpec{IdentityRef: openstackIdentity}},
		template: &openstackv1.OpenStackMachineTemplate{Spec: openstackv1.OpenStackMachineTemplateSpec{
			Template: openstackv1.OpenStackMachineTemplateResource{Spec: openstackMachineSpec}}},
		machine: openstackMachine,
		extras: []client.Object{&orcv1.Image{Spec: orcv1.ImageSpec{
			ManagementPolicy:    orcv1.ManagementPolicyUnmanaged,
			Import:              &orcv1.ImageImport{ID: ptr.To("5f1a3a2e-0a44-4a3c-9a4b-2b1f6f8f0c11")},
			CloudCredentialsRef: orcv1.CloudCredentialsReference{SecretName: "cloud", CloudName: "openstack"},
		}}},
		references: []providerReference{{openstackMachine, []string{"spec", "floatingIPPoolRef", "apiGroup"}, upstreamInfra}},
	}, {
		name:         "agent",
		infraCluster: &agentv1.AgentCluster{},
		template:     &agentv1.AgentMachineTemplate{},
		machine:      &agentv1.AgentMachine{},
	}}
}

// TestProvidersThroughTheProxy creates, for every infrastructure provider, a Cluster with its
// infrastructure cluster, a MachineDeployment with its machine template and a Machine with its
// infrastructure machine through the proxy, with references and ownerReferences crossing between the
// core and the provider's group. It proves from the apiserver directly that each object is stored in
// the private groups with every reference rewritten, and through the proxy that clients see only the
// upstream groups.
func TestProvidersThroughTheProxy(t *testing.T) {
	c, err := client.New(proxy.Config(env.AdminToken), client.Options{Scheme: providerScheme})
	if err != nil {
		t.Fatal(err)
	}
	direct, err := client.New(env.DirectConfig(env.AdminToken), client.Options{Scheme: runtime.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range providerCases() {
		t.Run(tc.name, func(t *testing.T) { testProvider(t, c, direct, tc) })
	}
}

func testProvider(t *testing.T, c, direct client.Client, tc providerCase) {
	ctx := context.Background()
	ns := namespace(t, c)
	gvk := func(obj client.Object) schema.GroupVersionKind {
		g, err := apiutil.GVKForObject(obj, providerScheme)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	infraRef := func(obj client.Object) clusterv1.ContractVersionedObjectReference {
		return ref(gvk(obj).Group, gvk(obj).Kind, obj.GetName())
	}
	for _, obj := range append([]client.Object{tc.infraCluster, tc.template, tc.machine}, tc.extras...) {
		obj.SetNamespace(ns)
		obj.SetName(tc.name + "-" + strings.ToLower(gvk(obj).Kind))
	}

	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: ns},
		Spec:       clusterv1.ClusterSpec{InfrastructureRef: infraRef(tc.infraCluster)},
	}
	mustCreate(t, c, cluster)
	for _, obj := range []client.Object{tc.infraCluster, tc.template} {
		obj.SetOwnerReferences([]metav1.OwnerReference{owner(cluster, "Cluster")})
		mustCreate(t, c, obj)
	}
	infraOwner := metav1.OwnerReference{APIVersion: gvk(tc.infraCluster).GroupVersion().String(),
		Kind: gvk(tc.infraCluster).Kind, Name: tc.infraCluster.GetName(), UID: tc.infraCluster.GetUID()}
	for _, obj := range tc.extras {
		obj.SetOwnerReferences([]metav1.OwnerReference{infraOwner})
		mustCreate(t, c, obj)
	}
	md := &clusterv1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: ns, OwnerReferences: []metav1.OwnerReference{owner(cluster, "Cluster")}},
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: tc.name, Replicas: ptr.To[int32](1),
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{clusterNameLabel: tc.name}},
			Template: clusterv1.MachineTemplateSpec{
				ObjectMeta: clusterv1.ObjectMeta{Labels: map[string]string{clusterNameLabel: tc.name}},
				Spec: clusterv1.MachineSpec{
					ClusterName:       tc.name,
					Bootstrap:         clusterv1.Bootstrap{DataSecretName: ptr.To("bootstrap")},
					InfrastructureRef: infraRef(tc.template),
				},
			},
		},
	}
	mustCreate(t, c, md)
	machine := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: ns, Labels: map[string]string{clusterNameLabel: tc.name},
			OwnerReferences: []metav1.OwnerReference{owner(md, "MachineDeployment")}},
		Spec: clusterv1.MachineSpec{
			ClusterName:       tc.name,
			Bootstrap:         clusterv1.Bootstrap{DataSecretName: ptr.To("bootstrap")},
			InfrastructureRef: infraRef(tc.machine),
		},
	}
	mustCreate(t, c, machine)
	tc.machine.SetOwnerReferences([]metav1.OwnerReference{owner(machine, "Machine")})
	mustCreate(t, c, tc.machine)

	// Storage: every object in its private group, every reference and ownerReference rewritten.
	stored := func(obj client.Object) *unstructured.Unstructured {
		t.Helper()
		g := gvk(obj)
		private, ok := upstream.PrivateGroup(g.Group)
		if !ok {
			t.Fatalf("%s is not a mapped group", g.Group)
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: private, Version: g.Version, Kind: g.Kind})
		if err := direct.Get(ctx, client.ObjectKeyFromObject(obj), u); err != nil {
			t.Fatalf("reading %s %s from the private group directly: %v", g.Kind, obj.GetName(), err)
		}
		return u
	}
	want := func(u *unstructured.Unstructured, path []string, value string) {
		t.Helper()
		if got := fieldAt(u.Object, path); got != value {
			t.Errorf("stored %s %s: %s = %v, want %q", u.GetKind(), u.GetName(), strings.Join(path, "."), got, value)
		}
	}
	privateGroup := func(upstreamGroup string) string {
		g, _ := upstream.PrivateGroup(upstreamGroup)
		return g
	}
	privateCoreVersion := privateCore + "/" + clusterv1.GroupVersion.Version

	want(stored(cluster), []string{"spec", "infrastructureRef", "apiGroup"}, privateGroup(gvk(tc.infraCluster).Group))
	want(stored(md), []string{"spec", "template", "spec", "infrastructureRef", "apiGroup"}, privateGroup(gvk(tc.template).Group))
	want(stored(machine), []string{"spec", "infrastructureRef", "apiGroup"}, privateGroup(gvk(tc.machine).Group))
	for _, obj := range []client.Object{tc.infraCluster, tc.template, tc.machine} {
		u := stored(obj)
		if refs := u.GetOwnerReferences(); len(refs) != 1 || refs[0].APIVersion != privateCoreVersion || refs[0].UID != obj.GetOwnerReferences()[0].UID {
			t.Errorf("stored %s %s: ownerReferences %+v, want one to %s", u.GetKind(), u.GetName(), refs, privateCoreVersion)
		}
	}
	for _, obj := range tc.extras {
		u := stored(obj)
		want := privateGroup(gvk(tc.infraCluster).Group) + "/" + gvk(tc.infraCluster).Version
		if refs := u.GetOwnerReferences(); len(refs) != 1 || refs[0].APIVersion != want {
			t.Errorf("stored %s %s: ownerReferences %+v, want one to %s", u.GetKind(), u.GetName(), refs, want)
		}
	}
	for _, r := range tc.references {
		value := privateGroup(r.group)
		if r.path[len(r.path)-1] == "apiVersion" {
			value += "/" + gvk(r.obj).Version
		}
		u := stored(r.obj)
		cur := fieldAt(u.Object, r.path)
		if cur != value {
			t.Errorf("stored %s %s: %s = %v, want %q", u.GetKind(), u.GetName(), strings.Join(r.path, "."), cur, value)
		}
	}

	// Through the proxy: the client's view names only upstream groups, and lists work per kind.
	for _, obj := range []client.Object{tc.infraCluster, tc.template, tc.machine} {
		got := obj.DeepCopyObject().(client.Object)
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
			t.Fatalf("reading %T through the proxy: %v", obj, err)
		}
		if refs := got.GetOwnerReferences(); len(refs) != 1 || refs[0].APIVersion != clusterv1.GroupVersion.String() {
			t.Errorf("%T %s through the proxy: ownerReferences %+v, want one to %s", got, got.GetName(), refs, clusterv1.GroupVersion)
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk(obj).GroupVersion().WithKind(gvk(obj).Kind + "List"))
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatalf("listing %sList through the proxy: %v", gvk(obj).Kind, err)
		}
		if len(list.Items) != 1 || list.Items[0].GetAPIVersion() != gvk(obj).GroupVersion().String() {
			t.Errorf("%sList through the proxy: %d items, want 1 of %s", gvk(obj).Kind, len(list.Items), gvk(obj).GroupVersion())
		}
	}
	for _, r := range tc.references {
		got := r.obj.DeepCopyObject().(client.Object)
		if err := c.Get(ctx, client.ObjectKeyFromObject(r.obj), got); err != nil {
			t.Fatal(err)
		}
		if !equalJSON(t, got, r.obj, "spec") {
			t.Errorf("%T %s: spec through the proxy differs from what was created", got, got.GetName())
		}
	}
	gotMachine := &clusterv1.Machine{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(machine), gotMachine); err != nil {
		t.Fatal(err)
	}
	if gotMachine.Spec.InfrastructureRef != infraRef(tc.machine) {
		t.Errorf("Machine infrastructureRef through the proxy = %+v, want %+v", gotMachine.Spec.InfrastructureRef, infraRef(tc.machine))
	}
}

// fieldAt returns the value at path in a decoded JSON document; numeric elements index lists. It returns
// nil where the path does not exist.
func fieldAt(doc any, path []string) any {
	for _, p := range path {
		switch v := doc.(type) {
		case map[string]any:
			doc = v[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i >= len(v) {
				return nil
			}
			doc = v[i]
		default:
			return nil
		}
	}
	return doc
}

// equalJSON reports whether field of a and b encodes to the same JSON.
func equalJSON(t *testing.T, a, b client.Object, field string) bool {
	t.Helper()
	ua, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
	if err != nil {
		t.Fatal(err)
	}
	ub, err := runtime.DefaultUnstructuredConverter.ToUnstructured(b)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(ua[field]) == fmt.Sprint(ub[field])
}
