package convert_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conversion"

	"github.com/openshift/hypershift-capi-proxy/proxy/convert"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

func newConverter(t *testing.T) *convert.Converter {
	t.Helper()
	c, err := convert.New(translate.NewTable(routes.Routes), routes.APIVersionGetterSetters)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAPIVersion(t *testing.T) {
	c := newConverter(t)
	for gk, want := range map[schema.GroupKind]string{
		// CAPA: "cluster.x-k8s.io/v1beta1: v1beta2" (its v1beta1 is not served).
		{Group: "infrastructure.cluster.x-k8s.io", Kind: "AWSMachine"}: "infrastructure.cluster.x-k8s.io/v1beta2",
		// kubeadm: v1beta1 for contract v1beta1, v1beta2 for v1beta2: the newest contract wins.
		{Group: "bootstrap.cluster.x-k8s.io", Kind: "KubeadmConfig"}:              "bootstrap.cluster.x-k8s.io/v1beta2",
		{Group: "controlplane.cluster.x-k8s.io", Kind: "KubeadmControlPlane"}:     "controlplane.cluster.x-k8s.io/v1beta2",
		{Group: "infrastructure.cluster.x-k8s.io", Kind: "VSphereMachine"}:        "infrastructure.cluster.x-k8s.io/v1beta2",
		{Group: "infrastructure.cluster.x-k8s.io", Kind: "AzureMachine"}:          "infrastructure.cluster.x-k8s.io/v1beta1",
		{Group: "infrastructure.cluster.x-k8s.io", Kind: "IBMPowerVSMachine"}:     "infrastructure.cluster.x-k8s.io/v1beta3",
		{Group: "capi-provider.agent-install.openshift.io", Kind: "AgentMachine"}: "capi-provider.agent-install.openshift.io/v1beta1",
	} {
		got, err := c.APIVersion(gk)
		if err != nil || got != want {
			t.Errorf("APIVersion(%s) = %q, %v; want %q", gk, got, err, want)
		}
	}
	for gk, want := range map[schema.GroupKind]string{
		// No route, and no CRDs to read.
		{Group: "infrastructure.cluster.x-k8s.io", Kind: "DockerMachine"}: `failed to get apiVersion for kind DockerMachine: failed to get CustomResourceDefinition metadata: ` +
			`the proxy reads no CustomResourceDefinitions and no route serves DockerMachine.infrastructure.cluster.x-k8s.io`,
		// A route, but no contract labels: upstream's words.
		{Group: "cluster.x-k8s.io", Kind: "Machine"}: `failed to get apiVersion for kind Machine: cannot find any versions matching contract versions ["v1beta2" "v1beta1"] ` +
			`for CRD machines.cluster.x-k8s.io as contract version label(s) are either missing or empty (see https://cluster-api.sigs.k8s.io/developer/providers/contracts/overview.html#api-version-labels)`,
	} {
		_, err := c.APIVersion(gk)
		if !errors.Is(err, convert.ErrUnresolvedKind) || err.Error() != want {
			t.Errorf("APIVersion(%s) = %v,\nwant an ErrUnresolvedKind %s", gk, err, want)
		}
	}
}

// fromHub converts hub into spoke, of the spoke kind gvk, with upstream's conversion as the route table
// has it (a method or a function of a conversion package, wherever the pinned CAPI keeps it).
func fromHub(t *testing.T, c *convert.Converter, gvk schema.GroupVersionKind, hub, spoke any) error {
	t.Helper()
	r, ok := c.Table().ByUpstreamKind(gvk)
	if !ok || r.FromHub == nil {
		t.Fatalf("no spoke route for %s", gvk)
	}
	return r.FromHub(t.Context(), hub, spoke)
}

// fakeCRDs maps CRD names to their labels.
type fakeCRDs map[string]map[string]string

func (f fakeCRDs) Get(name string) (metav1.Object, bool) {
	labels, ok := f[name]
	if !ok {
		return nil, false
	}
	return &metav1.ObjectMeta{Name: name, Labels: labels}, true
}

// TestAPIVersionFromCRDs resolves kinds from their CRDs' contract labels, as CAPI's
// contract.GetAPIVersion does, whether a route serves them or not: a routed kind whose private CRD is not
// installed fails as CAPI's getter fails for it.
func TestAPIVersionFromCRDs(t *testing.T) {
	c := newConverter(t)
	c.ResolveWithCRDs(fakeCRDs{
		// HyperShift labels its CRDs for both contracts.
		"hostedcontrolplanes.hypershift.openshift.io":   {"cluster.x-k8s.io/v1beta1": "v1beta1", "cluster.x-k8s.io/v1beta2": "v1beta1"},
		"externalinfraclusters.hypershift.openshift.io": {"cluster.x-k8s.io/v1beta1": "v1alpha1_v1beta1"},
		"unlabelleds.example.com":                       {"app": "x"},
		// A kind of a mapped group without a route: its CRD is read at the private group.
		"dockermachines.infrastructure.cluster.hypershift.openshift.io": {"cluster.x-k8s.io/v1beta2": "v1beta2"},
		"dockermachines.infrastructure.cluster.x-k8s.io":                {"cluster.x-k8s.io/v1beta2": "v1beta9"},
		// A routed kind's CRD is read as well: its labels, not the route table's, answer.
		"awsmachines.infrastructure.cluster.hypershift.openshift.io": {"cluster.x-k8s.io/v1beta2": "v1beta9"},
		// The upstream CRD of a mapped group is never read.
		"awsmanagedmachinepools.infrastructure.cluster.x-k8s.io": {"cluster.x-k8s.io/v1beta2": "v1beta2"},
	})
	for gk, want := range map[schema.GroupKind]string{
		{Group: "hypershift.openshift.io", Kind: "HostedControlPlane"}:    "hypershift.openshift.io/v1beta1",
		{Group: "hypershift.openshift.io", Kind: "ExternalInfraCluster"}:  "hypershift.openshift.io/v1beta1",
		{Group: "infrastructure.cluster.x-k8s.io", Kind: "DockerMachine"}: "infrastructure.cluster.x-k8s.io/v1beta2",
		{Group: "infrastructure.cluster.x-k8s.io", Kind: "AWSMachine"}:    "infrastructure.cluster.x-k8s.io/v1beta9",
	} {
		if got, err := c.APIVersion(gk); err != nil || got != want {
			t.Errorf("APIVersion(%s) = %q, %v; want %q", gk, got, err, want)
		}
	}
	for gk, want := range map[schema.GroupKind]string{
		{Group: "example.com", Kind: "Unlabelled"}: `failed to get apiVersion for kind Unlabelled: cannot find any versions matching contract versions ["v1beta2" "v1beta1"] ` +
			`for CRD unlabelleds.example.com as contract version label(s) are either missing or empty (see https://cluster-api.sigs.k8s.io/developer/providers/contracts/overview.html#api-version-labels)`,
		{Group: "example.com", Kind: "Missing"}: `failed to get apiVersion for kind Missing: failed to get CustomResourceDefinition metadata: ` +
			`CustomResourceDefinition.apiextensions.k8s.io "missings.example.com" not found`,
		// A routed kind whose private CRD is not installed, as CAPI answers for its upstream CRD.
		{Group: "infrastructure.cluster.x-k8s.io", Kind: "AWSManagedMachinePool"}: `failed to get apiVersion for kind AWSManagedMachinePool: ` +
			`failed to get CustomResourceDefinition metadata: CustomResourceDefinition.apiextensions.k8s.io "awsmanagedmachinepools.infrastructure.cluster.x-k8s.io" not found`,
	} {
		_, err := c.APIVersion(gk)
		if !errors.Is(err, convert.ErrUnresolvedKind) || err.Error() != want {
			t.Errorf("APIVersion(%s) = %v,\nwant an ErrUnresolvedKind %s", gk, err, want)
		}
	}
	// Upstream's conversion of a Cluster uses it: HyperShift's Cluster reads as v1beta1.
	hub := &clusterv1.Cluster{Spec: clusterv1.ClusterSpec{
		ControlPlaneRef:   clusterv1.ContractVersionedObjectReference{APIGroup: "hypershift.openshift.io", Kind: "HostedControlPlane", Name: "hcp"},
		InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "hypershift.openshift.io", Kind: "ExternalInfraCluster", Name: "c"},
	}}
	spoke := &clusterv1beta1.Cluster{}
	if err := fromHub(t, c, clusterv1beta1.GroupVersion.WithKind("Cluster"), hub, spoke); err != nil {
		t.Fatal(err)
	}
	if got := spoke.Spec.ControlPlaneRef.APIVersion + " " + spoke.Spec.InfrastructureRef.APIVersion; got != "hypershift.openshift.io/v1beta1 hypershift.openshift.io/v1beta1" {
		t.Errorf("references' apiVersions = %s", got)
	}
}

// TestGetterInstalled proves New installs the getter upstream's conversions use: a v1beta2 Machine converts
// to v1beta1 with the reference's apiVersion from the contract labels.
func TestGetterInstalled(t *testing.T) {
	c := newConverter(t)
	hub := &clusterv1.Machine{Spec: clusterv1.MachineSpec{ClusterName: "c",
		InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "AWSMachine", Name: "m"}}}
	spoke := &clusterv1beta1.Machine{}
	if err := fromHub(t, c, clusterv1beta1.GroupVersion.WithKind("Machine"), hub, spoke); err != nil {
		t.Fatal(err)
	}
	if got := spoke.Spec.InfrastructureRef.APIVersion; got != "infrastructure.cluster.x-k8s.io/v1beta2" {
		t.Fatalf("infrastructureRef.apiVersion = %q", got)
	}
}

const privateMachine = `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine",
	"metadata":{"name":"m1","namespace":"ns","uid":"u1","ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineSet","name":"ms","uid":"u2"}]},
	"spec":{"clusterName":"c1","bootstrap":{"configRef":{"apiGroup":"bootstrap.cluster.hypershift.openshift.io","kind":"KubeadmConfig","name":"m1"}},
	"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"AWSMachine","name":"m1"},
	"minReadySeconds":7,"readinessGates":[{"conditionType":"Custom"}]},
	"status":{"initialization":{"infrastructureProvisioned":true},"conditions":[{"type":"Ready","status":"True","reason":"Ready","message":"","lastTransitionTime":"2026-01-02T03:04:05Z"}]}}`

// TestPrivateRoundTrip converts a private hub to its spoke and back: the spoke names private groups in its
// references and ownerReferences, keeps the hub in the conversion-data annotation with upstream group
// names, and converting back restores the hub exactly.
func TestPrivateRoundTrip(t *testing.T) {
	c := newConverter(t)
	ctx := t.Context()
	spokeData, err := c.Private(ctx, []byte(privateMachine), "cluster.hypershift.openshift.io/v1beta1")
	if err != nil {
		t.Fatal(err)
	}
	var spoke map[string]any
	if err := json.Unmarshal(spokeData, &spoke); err != nil {
		t.Fatal(err)
	}
	if spoke["apiVersion"] != "cluster.hypershift.openshift.io/v1beta1" {
		t.Errorf("apiVersion %v", spoke["apiVersion"])
	}
	spec := spoke["spec"].(map[string]any)
	if ref := spec["infrastructureRef"].(map[string]any); ref["apiVersion"] != "infrastructure.cluster.hypershift.openshift.io/v1beta2" || ref["namespace"] != "ns" {
		t.Errorf("infrastructureRef %v", ref)
	}
	meta := spoke["metadata"].(map[string]any)
	if owner := meta["ownerReferences"].([]any)[0].(map[string]any); owner["apiVersion"] != "cluster.hypershift.openshift.io/v1beta2" {
		t.Errorf("ownerReference %v", owner)
	}
	data := meta["annotations"].(map[string]any)[conversion.DataAnnotation].(string)
	if !strings.Contains(data, `"apiGroup":"infrastructure.cluster.x-k8s.io"`) || strings.Contains(data, "hypershift") {
		t.Errorf("the conversion-data annotation must hold the upstream hub: %s", data)
	}

	hubData, err := c.Private(ctx, spokeData, "cluster.hypershift.openshift.io/v1beta2")
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	_ = json.Unmarshal([]byte(privateMachine), &want)
	if err := json.Unmarshal(hubData, &got); err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want)
	gotJSON, _ := json.Marshal(got)
	if string(wantJSON) != string(gotJSON) {
		t.Errorf("round trip lost something:\nwant %s\ngot  %s", wantJSON, gotJSON)
	}

	same, err := c.Private(ctx, hubData, "cluster.hypershift.openshift.io/v1beta2")
	if err != nil || string(same) != string(hubData) {
		t.Errorf("converting to its own version changed the object: %v", err)
	}
}

func TestUpstream(t *testing.T) {
	c := newConverter(t)
	ctx := t.Context()
	hub := strings.NewReplacer("hypershift.openshift.io", "x-k8s.io").Replace(privateMachine)
	spoke, unknown, err := c.Upstream(ctx, []byte(hub), "cluster.x-k8s.io/v1beta1")
	if err != nil || len(unknown) > 0 {
		t.Fatal(err, unknown)
	}
	var m clusterv1beta1.Machine
	if err := json.Unmarshal(spoke, &m); err != nil {
		t.Fatal(err)
	}
	if m.APIVersion != "cluster.x-k8s.io/v1beta1" || m.Spec.InfrastructureRef.APIVersion != "infrastructure.cluster.x-k8s.io/v1beta2" ||
		m.Annotations[conversion.DataAnnotation] == "" {
		t.Fatalf("converted Machine: %s", spoke)
	}

	withUnknown := strings.Replace(hub, `"clusterName":"c1"`, `"clusterName":"c1","bogus":1`, 1)
	if _, unknown, err := c.Upstream(ctx, []byte(withUnknown), "cluster.x-k8s.io/v1beta1"); err != nil || len(unknown) != 1 ||
		!strings.Contains(unknown[0].Error(), "spec.bogus") {
		t.Errorf("unknown field: %v %v", unknown, err)
	}

	// Agent's versions share one schema: only apiVersion changes.
	agent := `{"apiVersion":"capi-provider.agent-install.openshift.io/v1beta1","kind":"AgentMachine","metadata":{"name":"a"},"spec":{"agentLabelSelector":{"matchLabels":{"a":"b"}}}}`
	out, _, err := c.Upstream(ctx, []byte(agent), "capi-provider.agent-install.openshift.io/v1alpha1")
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(agent, "v1beta1", "v1alpha1", 1); !jsonEqual(t, out, []byte(want)) {
		t.Errorf("AgentMachine: got %s, want %s", out, want)
	}
}

func TestErrors(t *testing.T) {
	c := newConverter(t)
	ctx := t.Context()
	for name, tc := range map[string]struct {
		obj, apiVersion string
		want            []string
		// message is Message's, for a failure of upstream's conversion: upstream's error alone.
		message string
	}{
		"unresolvable reference": {
			obj:        strings.Replace(privateMachine, `"kind":"AWSMachine"`, `"kind":"DockerMachine"`, 1),
			apiVersion: "cluster.hypershift.openshift.io/v1beta1",
			want: []string{`converting Machine.cluster.x-k8s.io "ns/m1" from v1beta2 to v1beta1: spec.infrastructureRef: `,
				"DockerMachine.infrastructure.cluster.x-k8s.io", "no route"},
			message: "failed to convert object: failed to get apiVersion for kind DockerMachine: failed to get CustomResourceDefinition metadata: " +
				"the proxy reads no CustomResourceDefinitions and no route serves DockerMachine.infrastructure.cluster.x-k8s.io",
		},
		"field the Go type lacks": {
			obj:        strings.Replace(privateMachine, `"minReadySeconds":7`, `"minReadySeconds":7,"bogus":true`, 1),
			apiVersion: "cluster.hypershift.openshift.io/v1beta1",
			want:       []string{`"ns/m1"`, `unknown field "spec.bogus"`, "converting would drop them"},
		},
		"wrong type": {
			obj:        strings.Replace(privateMachine, `"minReadySeconds":7`, `"minReadySeconds":"seven"`, 1),
			apiVersion: "cluster.hypershift.openshift.io/v1beta1",
			want:       []string{"decoding", "minReadySeconds"},
		},
		"unknown version": {
			obj: privateMachine, apiVersion: "cluster.hypershift.openshift.io/v1alpha9",
			want: []string{`no version "cluster.hypershift.openshift.io/v1alpha9" of kind Machine`},
		},
		"unknown kind": {
			obj: `{"apiVersion":"example.com/v1","kind":"Foo"}`, apiVersion: "example.com/v2",
			want: []string{"no route for Foo.example.com"},
		},
		"not an object": {obj: `[]`, apiVersion: "v1", want: []string{"decoding the object's apiVersion and kind"}},
	} {
		_, err := c.Private(ctx, []byte(tc.obj), tc.apiVersion)
		var ce *convert.Error
		if !errors.As(err, &ce) {
			t.Errorf("%s: error %v is not a *convert.Error", name, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", name, err, w)
			}
		}
		switch {
		case tc.message != "" && (!ce.Upstream || ce.Message() != tc.message):
			t.Errorf("%s: Upstream %v, Message %q; want upstream's %q", name, ce.Upstream, ce.Message(), tc.message)
		case tc.message == "" && (ce.Upstream || ce.Message() != err.Error()):
			t.Errorf("%s: Upstream %v, Message %q; want the whole error", name, ce.Upstream, ce.Message())
		}
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return string(xs) == string(ys)
}

type ctxKey struct{}

// TestRouteConversions: the Converter runs the conversions the route table gives a spoke (ToHub,
// FromHub), whatever upstream keeps them as, hands them the caller's context, and words a failure between
// two spokes with the routes' ViaHubError; straight to or from the hub, upstream's error is unwrapped.
func TestRouteConversions(t *testing.T) {
	rs := slices.Clone(routes.Routes)
	var calls []string
	fail := ""
	for i := range rs {
		r := &rs[i]
		if r.Upstream.Group != "ipam.cluster.x-k8s.io" || r.Kind != "IPAddress" || r.Conversion != translate.Spoke {
			continue
		}
		v, toHub, fromHub := r.Upstream.Version, r.ToHub, r.FromHub
		r.ToHub = func(ctx context.Context, spoke, hub any) error {
			calls = append(calls, v+"->hub "+ctx.Value(ctxKey{}).(string))
			if fail == v+"->hub" {
				return errors.New("boom")
			}
			return toHub(ctx, spoke, hub)
		}
		r.FromHub = func(ctx context.Context, hub, spoke any) error {
			calls = append(calls, "hub->"+v+" "+ctx.Value(ctxKey{}).(string))
			if fail == "hub->"+v {
				return errors.New("boom")
			}
			return fromHub(ctx, hub, spoke)
		}
		r.ViaHubError = translate.ConverterViaHubError
	}
	c, err := convert.New(translate.NewTable(rs), routes.APIVersionGetterSetters)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(t.Context(), ctxKey{}, "req")
	const address = `{"apiVersion":"ipam.cluster.x-k8s.io/v1alpha1","kind":"IPAddress","metadata":{"name":"a","namespace":"ns"},` +
		`"spec":{"address":"10.0.0.1","prefix":24,"claimRef":{"name":"c"},"poolRef":{"apiGroup":"pools.example.com","kind":"Pool","name":"p"}}}`
	out, _, err := c.Upstream(ctx, []byte(address), "ipam.cluster.x-k8s.io/v1beta1")
	if err != nil || !strings.Contains(string(out), `"apiVersion":"ipam.cluster.x-k8s.io/v1beta1"`) {
		t.Fatalf("converting: %s, %v", out, err)
	}
	if want := []string{"v1alpha1->hub req", "hub->v1beta1 req"}; !slices.Equal(calls, want) {
		t.Errorf("calls %q, want %q", calls, want)
	}
	for leg, want := range map[string]string{
		"v1alpha1->hub": "failed to convert spoke ipam.cluster.x-k8s.io/v1alpha1, Kind=IPAddress to hub ipam.cluster.x-k8s.io/v1beta2, Kind=IPAddress : boom",
		"hub->v1beta1":  "failed to convert hub ipam.cluster.x-k8s.io/v1beta2, Kind=IPAddress to spoke ipam.cluster.x-k8s.io/v1beta1, Kind=IPAddress : boom",
	} {
		fail = leg
		_, _, err := c.Upstream(ctx, []byte(address), "ipam.cluster.x-k8s.io/v1beta1")
		var ce *convert.Error
		if !errors.As(err, &ce) || !ce.Upstream || ce.Message() != want {
			t.Errorf("failing %s: %v; want upstream's %q", leg, err, want)
		}
	}
	fail = "v1alpha1->hub"
	_, _, err = c.Upstream(ctx, []byte(address), "ipam.cluster.x-k8s.io/v1beta2")
	if ce := (*convert.Error)(nil); !errors.As(err, &ce) || ce.Message() != "boom" {
		t.Errorf("failing straight to the hub: %v", err)
	}
}

// TestNewRefusesASpokeWithoutConversions: a spoke route without upstream's conversions cannot convert.
func TestNewRefusesASpokeWithoutConversions(t *testing.T) {
	rs := slices.Clone(routes.Routes)
	for i := range rs {
		if rs[i].Conversion == translate.Spoke && rs[i].Kind == "Machine" && rs[i].Upstream.Group == "cluster.x-k8s.io" {
			rs[i].FromHub = nil
		}
	}
	if _, err := convert.New(translate.NewTable(rs), nil); err == nil ||
		!strings.Contains(err.Error(), "machines: a spoke without upstream's conversions to and from the hub") {
		t.Errorf("New: %v", err)
	}
}
