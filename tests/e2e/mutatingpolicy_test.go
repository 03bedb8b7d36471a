package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	privclusterv1 "github.com/openshift/hypershift-capi-proxy/apis/private/core/v1beta2"
)

const (
	mutatingPoliciesPath = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies"
	mutatingBindingsPath = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings"
)

// TestMutatingAdmissionPolicyThroughTheProxy creates a MutatingAdmissionPolicy and its binding
// (admissionregistration.k8s.io/v1, which kube-apiserver serves by default from v1.36) naming
// cluster.x-k8s.io through the proxy, proves they are stored on the private group and read back upstream
// in JSON and, for a client that accepts protobuf and JSON as client-go's clientsets do, in whatever the
// proxy answers; that the policy mutates the Machines created through the proxy, and not the platform's
// own Machines.
func TestMutatingAdmissionPolicyThroughTheProxy(t *testing.T) {
	ctx := context.Background()
	c, directClient := clients(t)
	ns := namespace(t, c)
	rp, rd := viaProxy(t), direct(t)
	if resp, _ := rd.do(t, http.MethodGet, mutatingPoliciesPath, ""); resp.StatusCode == http.StatusNotFound {
		t.Skip("the backend serves no MutatingAdmissionPolicy v1 (kube-apiserver before v1.36)")
	}

	policy := fmt.Sprintf(`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingAdmissionPolicy","metadata":{"name":%q},`+
		`"spec":{"failurePolicy":"Fail","reinvocationPolicy":"Never",`+
		`"matchConstraints":{"resourceRules":[{"apiGroups":["cluster.x-k8s.io"],"apiVersions":["*"],"operations":["CREATE"],"resources":["machines"]}]},`+
		`"mutations":[{"patchType":"ApplyConfiguration","applyConfiguration":{"expression":"Object{metadata: Object.metadata{labels: {\"e2e-mutated\": \"yes\"}}}"}}]}}`, ns)
	binding := fmt.Sprintf(`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingAdmissionPolicyBinding","metadata":{"name":%q},`+
		`"spec":{"policyName":%q,"matchResources":{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":%q}},`+
		`"resourceRules":[{"apiGroups":["cluster.x-k8s.io"],"apiVersions":["*"],"operations":["CREATE"],"resources":["machines"]}]}}}`, ns, ns, ns)
	for path, body := range map[string]string{mutatingPoliciesPath: policy, mutatingBindingsPath: binding} {
		created := jsonObject(t, rp.mustDo(t, http.StatusCreated, http.MethodPost, path, body, "Content-Type: application/json"))
		if strings.Contains(fmt.Sprint(created), "hypershift") {
			t.Errorf("created %s answers with a private group: %v", path, created)
		}
		t.Cleanup(func() { rd.do(t, http.MethodDelete, path+"/"+ns, "") })
	}
	rules := map[string]string{mutatingPoliciesPath: "spec.matchConstraints.resourceRules.0.apiGroups.0",
		mutatingBindingsPath: "spec.matchResources.resourceRules.0.apiGroups.0"}
	for path, rule := range rules {
		if got := field(jsonObject(t, rd.mustDo(t, http.StatusOK, http.MethodGet, path+"/"+ns, "")), rule); got != privateCore {
			t.Errorf("%s/%s is stored with apiGroups [%v], want %s", path, ns, got, privateCore)
		}
		if got := field(jsonObject(t, rp.mustDo(t, http.StatusOK, http.MethodGet, path+"/"+ns, "")), rule); got != "cluster.x-k8s.io" {
			t.Errorf("%s/%s reads back through the proxy with apiGroups [%v]", path, ns, got)
		}
		// As a client-go clientset asks: protobuf first, JSON accepted.
		for _, p := range []string{path + "/" + ns, path + query("fieldSelector", "metadata.name="+ns),
			path + query("fieldSelector", "metadata.name="+ns, "watch", "1", "timeoutSeconds", "1")} {
			resp, data := rp.do(t, http.MethodGet, p, "", "Accept: "+runtime.ContentTypeProtobuf+", application/json")
			if resp.StatusCode != http.StatusOK || strings.Contains(string(data), "hypershift") || !strings.Contains(string(data), "cluster.x-k8s.io") {
				t.Errorf("GET %s accepting protobuf: %d %s %q", p, resp.StatusCode, resp.Header.Get("Content-Type"), data)
			}
		}
	}

	// A protobuf body the proxy cannot decode is refused, never forwarded untranslated (where it would
	// match the platform's own Machines); one it can decode is translated.
	pb := protobufPolicy(t, "pb-"+ns)
	resp, data := rp.do(t, http.MethodPost, mutatingPoliciesPath, string(pb), "Content-Type: "+runtime.ContentTypeProtobuf,
		"Accept: application/json")
	decodes := clientscheme.Scheme.Recognizes(admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicy"))
	switch {
	case decodes && resp.StatusCode == http.StatusCreated:
		t.Cleanup(func() { rd.do(t, http.MethodDelete, mutatingPoliciesPath+"/pb-"+ns, "") })
		got := field(jsonObject(t, rd.mustDo(t, http.StatusOK, http.MethodGet, mutatingPoliciesPath+"/pb-"+ns, "")), rules[mutatingPoliciesPath])
		if got != privateCore {
			t.Errorf("the protobuf policy is stored with apiGroups [%v], want %s", got, privateCore)
		}
	case !decodes && resp.StatusCode == http.StatusUnsupportedMediaType:
		if !strings.Contains(string(data), "cannot be translated") {
			t.Errorf("the protobuf policy is refused with %s", data)
		}
		rd.mustDo(t, http.StatusNotFound, http.MethodGet, mutatingPoliciesPath+"/pb-"+ns, "")
	default:
		t.Errorf("create of a protobuf policy (client-go's scheme decodes it: %v): %d %s", decodes, resp.StatusCode, data)
	}

	// The policy mutates a Machine created through the proxy (a dry run until the policy is loaded).
	mutated := func(name string, dryRun []string) (*clusterv1.Machine, error) {
		m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: machineSpec("c1", name)}
		err := c.Create(ctx, m, &client.CreateOptions{DryRun: dryRun})
		return m, err
	}
	poll(t, "the policy to mutate a Machine", func() bool {
		m, err := mutated("probe", []string{metav1.DryRunAll})
		return err == nil && m.Labels["e2e-mutated"] == "yes"
	})
	if m, err := mutated("m1", nil); err != nil || m.Labels["e2e-mutated"] != "yes" {
		t.Fatalf("a Machine created through the proxy: %v, labels %v", err, m.Labels)
	}
	stored := &privclusterv1.Machine{}
	if err := directClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "m1"}, stored); err != nil || stored.Labels["e2e-mutated"] != "yes" {
		t.Errorf("the stored Machine: %v, labels %v", err, stored.Labels)
	}

	// The platform's own Machines (cluster.x-k8s.io on the backend) are not matched.
	platform, err := client.New(env.DirectConfig(env.AdminToken), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	theirs := platformMachine(ns, "platform-unmutated")
	if err := platform.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	if _, ok := theirs.GetLabels()["e2e-mutated"]; ok {
		t.Errorf("the policy created through the proxy mutated the platform's Machine: %v", theirs.GetLabels())
	}
}

// protobufPolicy is a MutatingAdmissionPolicy at admissionregistration.k8s.io/v1 matching
// cluster.x-k8s.io machines, encoded in protobuf as client-go v0.36 sends it: its message is that of
// v1beta1 (k8s.io/api v0.35 has no v1 type; both versions' messages number their fields alike) in a
// v1 envelope.
func protobufPolicy(t *testing.T, name string) []byte {
	t.Helper()
	policy := &admissionregistrationv1beta1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1beta1.MutatingAdmissionPolicySpec{
			FailurePolicy:      ptr.To(admissionregistrationv1beta1.Fail),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			MatchConstraints: &admissionregistrationv1beta1.MatchResources{ResourceRules: []admissionregistrationv1beta1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"cluster.x-k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"machines"}}}}}},
			Mutations: []admissionregistrationv1beta1.Mutation{{PatchType: admissionregistrationv1beta1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1beta1.ApplyConfiguration{Expression: `Object{metadata: Object.metadata{labels: {"e2e-pb": "yes"}}}`}}},
		}}
	msg, err := policy.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	envelope := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicy"}, Raw: msg}
	out, err := envelope.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte("k8s\x00"), out...)
}
