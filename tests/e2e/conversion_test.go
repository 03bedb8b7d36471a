package e2e

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	asov1alpha1 "sigs.k8s.io/cluster-api-provider-azure/api/v1alpha1"
	azurev1 "sigs.k8s.io/cluster-api-provider-azure/api/v1beta1"
	powervsv1beta2 "sigs.k8s.io/cluster-api-provider-ibmcloud/api/powervs/v1beta2"
	powervsv1 "sigs.k8s.io/cluster-api-provider-ibmcloud/api/powervs/v1beta3"
	vspherev1beta1 "sigs.k8s.io/cluster-api-provider-vsphere/api/govmomi/v1beta1"
	vspherev1 "sigs.k8s.io/cluster-api-provider-vsphere/api/govmomi/v1beta2"
	bootstrapv1beta1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta1"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	agentv1alpha1 "github.com/openshift/hypershift-capi-proxy/apis/upstream/agent/v1alpha1"
	agentv1 "github.com/openshift/hypershift-capi-proxy/apis/upstream/agent/v1beta1"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

// versionsScheme holds both versions of every kind the conversion tests use, as a client that speaks
// either registers them.
var versionsScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme,
		clusterv1.AddToScheme, clusterv1beta1.AddToScheme, bootstrapv1.AddToScheme, bootstrapv1beta1.AddToScheme,
		vspherev1.AddToScheme, vspherev1beta1.AddToScheme, powervsv1.AddToScheme, powervsv1beta2.AddToScheme,
		azurev1.AddToScheme, asov1alpha1.AddToScheme, agentv1.AddToScheme, agentv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// conversionCase is one kind: an object of its hub (storage) version as a v1beta2 client writes it,
// with values its older version cannot hold (a *bool or *int32 set to its zero value, fields the older
// version lacks), the status a controller would write, and a new empty object of the older version.
type conversionCase struct {
	name   string
	hub    client.Object
	status func(hub client.Object)
	old    func() client.Object
}

func conversionCases() []conversionCase {
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	ready := []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Waiting", Message: "", LastTransitionTime: now}}
	machineSpec := clusterv1.MachineSpec{
		ClusterName:       "c1",
		Bootstrap:         clusterv1.Bootstrap{ConfigRef: ref(upstreamBoot, "KubeadmConfig", "boot")},
		InfrastructureRef: ref(upstreamInfra, "AWSMachine", "infra"),
		Version:           "v1.34.2",
		MinReadySeconds:   ptr.To[int32](0),
		ReadinessGates:    []clusterv1.MachineReadinessGate{{ConditionType: "Custom"}},
		Deletion:          clusterv1.MachineDeletionSpec{NodeDrainTimeoutSeconds: ptr.To[int32](30), NodeVolumeDetachTimeoutSeconds: ptr.To[int32](0)},
	}
	template := clusterv1.MachineTemplateSpec{
		ObjectMeta: clusterv1.ObjectMeta{Labels: map[string]string{clusterNameLabel: "c1"}},
		Spec:       machineSpec,
	}
	// A MachineSet keeps no conversion data: its v1beta1 minReadySeconds 0 comes back as unset.
	template.Spec.MinReadySeconds = ptr.To[int32](5)
	template.Spec.InfrastructureRef = ref(upstreamInfra, "AWSMachineTemplate", "tmpl")
	template.Spec.Bootstrap.ConfigRef = ref(upstreamBoot, "KubeadmConfigTemplate", "tmpl")
	selector := metav1.LabelSelector{MatchLabels: map[string]string{clusterNameLabel: "c1"}}
	templateRef := func(group, version, kind string) clusterv1.ClusterClassTemplateReference {
		return clusterv1.ClusterClassTemplateReference{APIVersion: group + "/" + version, Kind: kind, Name: strings.ToLower(kind)}
	}
	vsphereMachine := vspherev1.VSphereMachineSpec{VirtualMachineCloneSpec: vspherev1.VirtualMachineCloneSpec{
		Template: "rhcos", NumCPUs: 4, MemoryMiB: 16384,
		Network: vspherev1.NetworkSpec{Devices: []vspherev1.NetworkDeviceSpec{{
			NetworkName:        "VM Network",
			AddressesFromPools: []vspherev1.IPPoolReference{{APIGroup: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool", Name: "pool"}},
		}}},
	},
		// v1beta1's schema defaults it, so a v1beta1 client writes it back.
		PowerOffMode: vspherev1.VirtualMachinePowerOpModeHard,
	}

	return []conversionCase{{
		name: "Cluster",
		hub: &clusterv1.Cluster{Spec: clusterv1.ClusterSpec{
			Paused:            ptr.To(false),
			InfrastructureRef: ref(upstreamInfra, "AWSCluster", "c1"),
			ControlPlaneRef:   ref("controlplane.cluster.x-k8s.io", "KubeadmControlPlane", "c1"),
			ClusterNetwork: clusterv1.ClusterNetwork{ServiceDomain: "cluster.local",
				Pods: clusterv1.NetworkRanges{CIDRBlocks: []string{"10.128.0.0/14"}}},
			AvailabilityGates: []clusterv1.ClusterAvailabilityGate{{ConditionType: "Custom"}},
		}},
		status: func(o client.Object) {
			c := o.(*clusterv1.Cluster)
			c.Status = clusterv1.ClusterStatus{Phase: "Provisioning", Conditions: ready,
				Initialization: clusterv1.ClusterInitializationStatus{InfrastructureProvisioned: ptr.To(true), ControlPlaneInitialized: ptr.To(false)}}
		},
		old: func() client.Object { return &clusterv1beta1.Cluster{} },
	}, {
		name: "Machine",
		hub:  &clusterv1.Machine{Spec: machineSpec},
		status: func(o client.Object) {
			m := o.(*clusterv1.Machine)
			m.Status = clusterv1.MachineStatus{Phase: "Provisioning", FailureDomain: "fd-1", Conditions: ready,
				Initialization: clusterv1.MachineInitializationStatus{BootstrapDataSecretCreated: ptr.To(false), InfrastructureProvisioned: ptr.To(true)}}
		},
		old: func() client.Object { return &clusterv1beta1.Machine{} },
	}, {
		name: "MachineDeployment",
		hub: &clusterv1.MachineDeployment{Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: "c1", Replicas: ptr.To[int32](2), Paused: ptr.To(false), Selector: selector, Template: template,
			Rollout: clusterv1.MachineDeploymentRolloutSpec{Strategy: clusterv1.MachineDeploymentRolloutStrategy{
				Type: clusterv1.RollingUpdateMachineDeploymentStrategyType,
				RollingUpdate: clusterv1.MachineDeploymentRolloutStrategyRollingUpdate{
					MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0))}}},
			Deletion: clusterv1.MachineDeploymentDeletionSpec{Order: clusterv1.OldestMachineSetDeletionOrder},
		}},
		old: func() client.Object { return &clusterv1beta1.MachineDeployment{} },
	}, {
		name: "MachineSet",
		hub: &clusterv1.MachineSet{Spec: clusterv1.MachineSetSpec{
			ClusterName: "c1", Replicas: ptr.To[int32](3), Selector: selector, Template: template,
			Deletion: clusterv1.MachineSetDeletionSpec{Order: clusterv1.NewestMachineSetDeletionOrder},
		}},
		old: func() client.Object { return &clusterv1beta1.MachineSet{} },
	}, {
		name: "MachineHealthCheck",
		hub: &clusterv1.MachineHealthCheck{Spec: clusterv1.MachineHealthCheckSpec{
			ClusterName: "c1", Selector: selector,
			Checks: clusterv1.MachineHealthCheckChecks{NodeStartupTimeoutSeconds: ptr.To[int32](600),
				UnhealthyNodeConditions: []clusterv1.UnhealthyNodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, TimeoutSeconds: ptr.To[int32](300)}}},
			Remediation: clusterv1.MachineHealthCheckRemediation{
				TriggerIf: clusterv1.MachineHealthCheckRemediationTriggerIf{UnhealthyLessThanOrEqualTo: ptr.To(intstr.FromString("40%"))},
				TemplateRef: clusterv1.MachineHealthCheckRemediationTemplateReference{
					APIVersion: upstreamInfra + "/v1beta2", Kind: "AWSRemediationTemplate", Name: "remediate"},
			},
		}},
		status: func(o client.Object) {
			m := o.(*clusterv1.MachineHealthCheck)
			m.Status = clusterv1.MachineHealthCheckStatus{ExpectedMachines: ptr.To[int32](0), CurrentHealthy: ptr.To[int32](0),
				RemediationsAllowed: ptr.To[int32](0), Targets: []string{}}
		},
		old: func() client.Object { return &clusterv1beta1.MachineHealthCheck{} },
	}, {
		name: "ClusterClass",
		hub: &clusterv1.ClusterClass{Spec: clusterv1.ClusterClassSpec{
			Infrastructure: clusterv1.InfrastructureClass{TemplateRef: templateRef(upstreamInfra, "v1beta2", "AWSClusterTemplate")},
			ControlPlane: clusterv1.ControlPlaneClass{
				TemplateRef:           templateRef("controlplane.cluster.x-k8s.io", "v1beta2", "KubeadmControlPlaneTemplate"),
				MachineInfrastructure: clusterv1.ControlPlaneClassMachineInfrastructureTemplate{TemplateRef: templateRef(upstreamInfra, "v1beta2", "AWSMachineTemplate")},
			},
			Workers: clusterv1.WorkersClass{MachineDeployments: []clusterv1.MachineDeploymentClass{{
				Class:          "default-worker",
				Bootstrap:      clusterv1.MachineDeploymentClassBootstrapTemplate{TemplateRef: templateRef(upstreamBoot, "v1beta2", "KubeadmConfigTemplate")},
				Infrastructure: clusterv1.MachineDeploymentClassInfrastructureTemplate{TemplateRef: templateRef(upstreamInfra, "v1beta2", "AWSMachineTemplate")},
			}}},
			Variables: []clusterv1.ClusterClassVariable{{
				Name: "replicas", Required: ptr.To(false),
				Schema: clusterv1.VariableSchema{OpenAPIV3Schema: clusterv1.JSONSchemaProps{
					Type: "integer", Minimum: ptr.To[int64](1), ExclusiveMinimum: ptr.To(false), XIntOrString: ptr.To(false)}},
			}},
			Patches: []clusterv1.ClusterClassPatch{{
				Name: "region",
				Definitions: []clusterv1.PatchDefinition{{
					Selector: clusterv1.PatchSelector{APIVersion: upstreamInfra + "/v1beta2", Kind: "AWSClusterTemplate",
						MatchResources: clusterv1.PatchSelectorMatch{InfrastructureCluster: ptr.To(true), ControlPlane: ptr.To(false)}},
					JSONPatches: []clusterv1.JSONPatch{{Op: "add", Path: "/spec/template/spec/region",
						Value: &apiextensionsv1.JSON{Raw: []byte(`"us-east-1"`)}}},
				}},
			}},
		}},
		old: func() client.Object { return &clusterv1beta1.ClusterClass{} },
	}, {
		name: "KubeadmConfig",
		hub: &bootstrapv1.KubeadmConfig{Spec: bootstrapv1.KubeadmConfigSpec{
			Format:             bootstrapv1.CloudConfig,
			Files:              []bootstrapv1.File{{Path: "/etc/motd", Content: "hello", Permissions: "0644"}},
			PreKubeadmCommands: []string{"echo pre"},
			JoinConfiguration: bootstrapv1.JoinConfiguration{NodeRegistration: bootstrapv1.NodeRegistrationOptions{
				Name: "node", KubeletExtraArgs: []bootstrapv1.Arg{{Name: "node-labels", Value: ptr.To("a=b")}, {Name: "v", Value: ptr.To("2")}}}},
		}},
		old: func() client.Object { return &bootstrapv1beta1.KubeadmConfig{} },
	}, {
		name: "VSphereMachine (CAPV)",
		hub:  &vspherev1.VSphereMachine{Spec: vsphereMachine},
		status: func(o client.Object) {
			m := o.(*vspherev1.VSphereMachine)
			m.Status = vspherev1.VSphereMachineStatus{Conditions: ready,
				Initialization: vspherev1.VSphereMachineInitializationStatus{Provisioned: ptr.To(false)}}
		},
		old: func() client.Object { return &vspherev1beta1.VSphereMachine{} },
	}, {
		name: "IBMPowerVSMachine (CAPIBM)",
		hub: &powervsv1.IBMPowerVSMachine{Spec: powervsv1.IBMPowerVSMachineSpec{
			Network: powervsv1.IBMPowerVSResourceReference{Name: ptr.To("hypershift-net")}, ImageRef: powervsv1.ImageReference{Name: "rhcos"},
			SystemType: "s922", ProcessorType: powervsv1.PowerVSProcessorTypeShared, Processors: intstr.FromString("0.5"), MemoryGiB: 32}},
		status: func(o client.Object) {
			m := o.(*powervsv1.IBMPowerVSMachine)
			m.Status = powervsv1.IBMPowerVSMachineStatus{Conditions: ready,
				Initialization: powervsv1.IBMPowerVSMachineInitializationStatus{Provisioned: ptr.To(false)}}
		},
		old: func() client.Object { return &powervsv1beta2.IBMPowerVSMachine{} },
	}, {
		name: "AzureASOManagedCluster (CAPZ, one schema)",
		hub: &azurev1.AzureASOManagedCluster{Spec: azurev1.AzureASOManagedClusterSpec{AzureASOManagedClusterTemplateResourceSpec: azurev1.AzureASOManagedClusterTemplateResourceSpec{
			Resources: []runtime.RawExtension{{Raw: []byte(`{"apiVersion":"resources.azure.com/v1api20200601","kind":"ResourceGroup","metadata":{"name":"rg"},"spec":{"location":"eastus"}}`)}}}}},
		old: func() client.Object { return &asov1alpha1.AzureASOManagedCluster{} },
	}, {
		name: "AgentMachine (Agent, one schema)",
		hub: &agentv1.AgentMachine{Spec: agentv1.AgentMachineSpec{
			AgentLabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"agent-pool": "p1"}}}},
		old: func() client.Object { return &agentv1alpha1.AgentMachine{} },
	}}
}

// TestLosslessConversion has a v1beta2 (hub) client and a client of the kind's older version edit the
// same object in turn through the proxy, for every core kind and one kind of each provider with two
// served versions (CAPA serves only v1beta2, so it has none). The apiserver converts with the proxy's
// /convert webhook. Each step proves that no field is lost:
//
//  1. the hub client creates the object with values the older version cannot hold, and a controller-like
//     status;
//  2. the older client reads it, and gets exactly what upstream's own conversion makes of the hub (with
//     the conversion-data annotation naming upstream groups);
//  3. it adds a label and writes the whole object back, and writes its status back unchanged: the hub
//     client reads everything as before, plus the label;
//  4. the hub client adds an annotation, and the older client's view follows it, again exactly upstream's;
//  5. the object stored in the private group names private groups and carries no conversion data.
func TestLosslessConversion(t *testing.T) {
	ctx := context.Background()
	c, warned := versionsClient(t)
	direct, err := client.New(env.DirectConfig(env.AdminToken), client.Options{Scheme: runtime.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := namespace(t, c)
	defer func() {
		for _, w := range warned.all() {
			if strings.Contains(w, "cluster.x-k8s.io/v1beta1") {
				return
			}
		}
		t.Errorf("no deprecation warning for cluster.x-k8s.io/v1beta1 among %q", warned.all())
	}()
	for _, tc := range conversionCases() {
		t.Run(tc.name, func(t *testing.T) {
			hub := tc.hub
			hub.SetNamespace(ns)
			hub.SetName("conv-" + strings.ToLower(strings.Fields(tc.name)[0]))
			hub.SetLabels(map[string]string{clusterNameLabel: "c1"})
			if err := c.Create(ctx, hub); err != nil {
				t.Fatalf("creating through the proxy: %v", err)
			}
			if tc.status != nil {
				tc.status(hub)
				if err := c.Status().Update(ctx, hub); err != nil {
					t.Fatalf("writing the status through the proxy: %v", err)
				}
			}
			want := read(t, c, hub, hub)
			assertUpstreamRoundTrip(t, want, tc.old(), tc.status != nil)

			// 2. The older version is upstream's conversion of the hub.
			old := read(t, c, hub, tc.old())
			assertUpstreamConversion(t, want, old)
			if data, ok := old.GetAnnotations()[conversion.DataAnnotation]; ok && strings.Contains(data, "hypershift.openshift.io") {
				t.Errorf("the conversion-data annotation names a private group: %s", data)
			}

			// 3. The older client writes the object back, with a label, and its status unchanged.
			old.SetLabels(merge(old.GetLabels(), "edited-by", "old"))
			if err := c.Update(ctx, old); err != nil {
				t.Fatalf("updating with the older version: %v", err)
			}
			want.SetLabels(merge(want.GetLabels(), "edited-by", "old"))
			if tc.status != nil {
				if err := c.Status().Update(ctx, old); err != nil {
					t.Fatalf("updating the status with the older version: %v", err)
				}
			}
			got := read(t, c, hub, hub)
			if tc.status == nil {
				// The apiserver keeps the stored status on an update of the main resource in the request's
				// version: a hub without status gets the older version's zero status (its fields without
				// omitempty), as it would with upstream's own webhook. Only objects with a status compare it.
				assertSame(t, "after the older client's write, the hub", withoutStatus(want), withoutStatus(got))
			} else {
				assertSame(t, "after the older client's writes, the hub", want, got)
			}

			// 4. The hub client edits; the older view follows, still upstream's conversion.
			got.SetAnnotations(merge(got.GetAnnotations(), "edited-by", "hub"))
			if err := c.Update(ctx, got); err != nil {
				t.Fatalf("updating with the hub version: %v", err)
			}
			want = read(t, c, hub, hub)
			old = read(t, c, hub, tc.old())
			assertUpstreamConversion(t, want, old)
			if old.GetAnnotations()["edited-by"] != "hub" || old.GetLabels()["edited-by"] != "old" {
				t.Errorf("the older view misses the edits: %v %v", old.GetLabels(), old.GetAnnotations())
			}

			// The deprecation warning of the older version names the upstream group, as upstream's would.
			for _, w := range warned.all() {
				if strings.Contains(w, "hypershift.openshift.io") {
					t.Errorf("a warning names a private group: %q", w)
				}
			}

			// 5. Storage.
			stored := &unstructured.Unstructured{}
			gvk := gvkOf(t, hub)
			stored.SetAPIVersion(translate.ToPrivate.APIVersion(gvk.GroupVersion().String()))
			stored.SetKind(gvk.Kind)
			if err := direct.Get(ctx, client.ObjectKeyFromObject(hub), stored); err != nil {
				t.Fatalf("reading the stored object: %v", err)
			}
			if _, ok := stored.GetAnnotations()[conversion.DataAnnotation]; ok {
				t.Errorf("the stored hub keeps conversion data: %v", stored.GetAnnotations())
			}
			data, _ := json.Marshal(stored.Object["spec"])
			for _, g := range upstream.Groups {
				// As a value (apiGroup, apiVersion), not as a label key.
				if strings.Contains(string(data), `:"`+g.Upstream+`"`) || strings.Contains(string(data), `:"`+g.Upstream+`/`) {
					t.Errorf("the stored spec names the upstream group %s: %s", g.Upstream, data)
				}
			}
		})
	}
}

// assertUpstreamRoundTrip fails the test case itself when upstream's own conversion, hub to older and back,
// changes hub: such an object would prove nothing about the proxy.
func assertUpstreamRoundTrip(t *testing.T, hub, old client.Object, withStatus bool) {
	t.Helper()
	r := spokeRoute(t, old)
	if r == nil {
		return // one schema
	}
	src := hub.DeepCopyObject().(client.Object)
	src.GetObjectKind().SetGroupVersionKind(gvkOf(t, hub))
	if err := r.FromHub(context.Background(), src, old); err != nil {
		t.Fatalf("upstream's conversion from the hub: %v", err)
	}
	back := reflect.New(reflect.TypeOf(hub).Elem()).Interface().(client.Object)
	if err := r.ToHub(context.Background(), old, back); err != nil {
		t.Fatalf("upstream's conversion to the hub: %v", err)
	}
	if !withStatus {
		// A hub without status comes back with the older version's zero status.
		hub, back = withoutStatus(hub), withoutStatus(back)
	}
	assertSame(t, "the test object does not survive upstream's own round trip; change it (-hub +round trip)", hub, back)
}

// spokeRoute returns the route of obj's upstream kind and version if it is a spoke, whose ToHub and
// FromHub are upstream's conversions wherever the pinned versions keep them (methods of the Go types,
// or CAPI v1.14's converter functions), or nil.
func spokeRoute(t *testing.T, obj client.Object) *translate.Route {
	t.Helper()
	r, ok := translate.NewTable(routes.Routes).ByUpstreamKind(gvkOf(t, obj))
	if !ok || r.Conversion != translate.Spoke {
		return nil
	}
	return r
}

// withoutStatus returns a copy of obj with a zero status.
func withoutStatus(obj client.Object) client.Object {
	out := obj.DeepCopyObject().(client.Object)
	v := reflect.ValueOf(out).Elem().FieldByName("Status")
	v.Set(reflect.Zero(v.Type()))
	return out
}

// versionsClient is a controller-runtime client of versionsScheme through the proxy, and the warnings it
// receives.
func versionsClient(t *testing.T) (client.Client, *warnings) {
	t.Helper()
	cfg := proxy.Config(env.AdminToken)
	warned := &warnings{}
	cfg.WarningHandlerWithContext = warned
	c, err := client.New(cfg, client.Options{Scheme: versionsScheme})
	if err != nil {
		t.Fatal(err)
	}
	return c, warned
}

// warnings records the Warning headers a client receives.
type warnings struct {
	mu    sync.Mutex
	texts []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.texts = append(w.texts, text)
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.texts...)
}

// TestConversionErrorAsUpstream reads, in v1beta1, a Machine whose v1beta2 infrastructureRef names a kind the
// apiVersion getter cannot resolve (no private CRD mirrors it): the apiserver's error, from the webhook's
// failed ConversionReview, reaches the client exactly as from upstream's CRD and a CAPI manager's
// conversion webhook (controller-runtime's, whose message is upstream's conversion error alone), in
// upstream terms.
func TestConversionErrorAsUpstream(t *testing.T) {
	ctx := context.Background()
	c, _ := versionsClient(t)
	ns := namespace(t, c)
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "docker", Namespace: ns},
		Spec: clusterv1.MachineSpec{ClusterName: "c1", Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr.To("s")},
			InfrastructureRef: ref(upstreamInfra, "DockerMachine", "docker")}}
	mustCreate(t, c, m)
	err := c.Get(ctx, client.ObjectKeyFromObject(m), &clusterv1beta1.Machine{})
	if err == nil {
		t.Fatal("reading in v1beta1 succeeded")
	}
	want := `conversion webhook for cluster.x-k8s.io/v1beta2, Kind=Machine failed: failed to convert object: ` +
		`failed to get apiVersion for kind DockerMachine: failed to get CustomResourceDefinition metadata: ` +
		`CustomResourceDefinition.apiextensions.k8s.io "dockermachines.infrastructure.cluster.x-k8s.io" not found`
	if err.Error() != want {
		t.Errorf("error %q,\nwant %q", err, want)
	}
}

// read gets key's object through the proxy into a new object of into's type.
func read(t *testing.T, c client.Client, key, into client.Object) client.Object {
	t.Helper()
	obj := into.DeepCopyObject().(client.Object)
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(key), obj); err != nil {
		t.Fatalf("reading %T through the proxy: %v", obj, err)
	}
	return obj
}

func gvkOf(t *testing.T, obj runtime.Object) schema.GroupVersionKind {
	t.Helper()
	gvk, err := apiutil.GVKForObject(obj, versionsScheme)
	if err != nil {
		t.Fatal(err)
	}
	return gvk
}

// assertUpstreamConversion fails unless old (read through the proxy in the older version) is what
// upstream's own conversion (the route's FromHub, or for one-schema kinds the same JSON) makes of hub (read
// through the proxy in the hub version): the same spec, status, labels and annotations, the
// conversion-data annotation included.
func assertUpstreamConversion(t *testing.T, hub, old client.Object) {
	t.Helper()
	src := hub.DeepCopyObject().(client.Object)
	src.GetObjectKind().SetGroupVersionKind(gvkOf(t, hub)) // as the webhook receives it
	want := reflect.New(reflect.TypeOf(old).Elem()).Interface().(client.Object)
	if r := spokeRoute(t, want); r != nil {
		if err := r.FromHub(context.Background(), src, want); err != nil {
			t.Fatalf("upstream's conversion: %v", err)
		}
	} else {
		data, err := json.Marshal(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, want); err != nil {
			t.Fatal(err)
		}
	}
	assertSame(t, "the older version through the proxy (-upstream's conversion +proxy)", want, old)
}

// assertSame compares two objects of one type as JSON, but for apiVersion, kind, resourceVersion and
// managedFields.
func assertSame(t *testing.T, what string, want, got client.Object) {
	t.Helper()
	if diff := cmp.Diff(normalized(t, want), normalized(t, got)); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", what, diff)
	}
}

func normalized(t *testing.T, obj client.Object) map[string]any {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	delete(u, "apiVersion")
	delete(u, "kind")
	unstructured.RemoveNestedField(u, "metadata", "resourceVersion")
	unstructured.RemoveNestedField(u, "metadata", "managedFields")
	return u
}

func merge(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for key, val := range m {
		if key != k {
			out[key] = val
		}
	}
	return out
}
