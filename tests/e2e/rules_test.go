package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	privclusterv1 "github.com/openshift/hypershift-capi-proxy/apis/private/core/v1beta2"
)

func init() {
	// Admission configurations, which name the groups of the objects they admit.
	if err := admissionregistrationv1.AddToScheme(upstreamScheme); err != nil {
		panic(err)
	}
	if err := admissionregistrationv1.AddToScheme(privateScheme); err != nil {
		panic(err)
	}
}

// poll calls cond until it is true, for at most 30 seconds: RBAC, admission policies and quotas reach the
// apiserver's caches asynchronously.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// TestRolesGrantThroughTheProxy creates Roles and a ClusterRole naming cluster.x-k8s.io through the proxy
// in each encoding a client sends (JSON, YAML, protobuf), proves from the apiserver that they are stored
// on the private groups (and the CRD names in resourceNames private), that they read back with the
// upstream groups, and that they grant what they say: alice, bound to them, may list the Machines,
// MachineSets and MachineDeployments the proxy serves and get the CRD machines.cluster.x-k8s.io through
// it, and nothing of the platform's own CAPI objects or CRDs directly.
func TestRolesGrantThroughTheProxy(t *testing.T) {
	ctx := context.Background()
	c, _ := clients(t)
	ns := namespace(t, c)
	pb := protobufClientset(t, env.AdminToken)
	admin := kubernetes.NewForConfigOrDie(env.DirectConfig(env.AdminToken))
	rule := func(resource string) []rbacv1.PolicyRule {
		return []rbacv1.PolicyRule{{APIGroups: []string{"cluster.x-k8s.io"}, Resources: []string{resource}, Verbs: []string{"list"}}}
	}

	// JSON (controller-runtime), YAML (raw), protobuf (client-go as controllers send built-in kinds).
	mustCreate(t, c, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "machines", Namespace: ns}, Rules: rule("machines")})
	viaProxy(t).mustDo(t, http.StatusCreated, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/roles",
		"apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: machinesets\nrules:\n- apiGroups: [cluster.x-k8s.io]\n  resources: [machinesets]\n  verbs: [list]\n",
		"Content-Type: application/yaml")
	if _, err := pb.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "machinedeployments"}, Rules: rule("machinedeployments")},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	clusterRole := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ns + "-crd"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"},
			ResourceNames: []string{"machines.cluster.x-k8s.io"}, Verbs: []string{"get"}},
	}}
	if _, err := pb.RbacV1().ClusterRoles().Create(ctx, clusterRole, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.RbacV1().ClusterRoles().Delete(ctx, clusterRole.Name, metav1.DeleteOptions{}) })

	// Stored on the private groups.
	for _, name := range []string{"machines", "machinesets", "machinedeployments"} {
		stored, err := admin.RbacV1().Roles(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := stored.Rules[0].APIGroups; len(got) != 1 || got[0] != privateCore {
			t.Errorf("Role %s is stored with apiGroups %q, want [%s]", name, got, privateCore)
		}
		// Read back through the proxy, in JSON and in protobuf.
		viaJSON := &rbacv1.Role{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, viaJSON); err != nil {
			t.Fatal(err)
		}
		viaPB, err := pb.RbacV1().Roles(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range [][]string{viaJSON.Rules[0].APIGroups, viaPB.Rules[0].APIGroups} {
			if len(got) != 1 || got[0] != "cluster.x-k8s.io" {
				t.Errorf("Role %s reads back through the proxy with apiGroups %q", name, got)
			}
		}
	}
	storedCR, err := admin.RbacV1().ClusterRoles().Get(ctx, clusterRole.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := storedCR.Rules[0].ResourceNames; len(got) != 1 || got[0] != "machines."+privateCore {
		t.Errorf("ClusterRole is stored with resourceNames %q, want the private CRD", got)
	}
	list := &rbacv1.ClusterRoleList{}
	if err := c.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	for _, cr := range list.Items {
		if cr.Name == clusterRole.Name && (len(cr.Rules) != 1 || cr.Rules[0].ResourceNames[0] != "machines.cluster.x-k8s.io") {
			t.Errorf("ClusterRole lists through the proxy with rules %+v", cr.Rules)
		}
	}

	// Bound to alice, they grant what they say through the proxy, and nothing on the platform's CAPI.
	alice := rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}
	for _, name := range []string{"machines", "machinesets", "machinedeployments"} {
		mustCreate(t, c, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}, Subjects: []rbacv1.Subject{alice}})
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: clusterRole.Name},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole.Name}, Subjects: []rbacv1.Subject{alice}}
	mustCreate(t, c, crb)
	t.Cleanup(func() { _ = admin.RbacV1().ClusterRoleBindings().Delete(ctx, crb.Name, metav1.DeleteOptions{}) })

	aliceViaProxy, aliceDirect := withToken(proxy.Config(""), env.UserToken), withToken(env.DirectConfig(""), env.UserToken)
	for _, resource := range []string{"machines", "machinesets", "machinedeployments"} {
		path := "/apis/cluster.x-k8s.io/v1beta2/namespaces/" + ns + "/" + resource
		poll(t, "alice to list "+resource+" through the proxy", func() bool {
			code, _ := raw(t, aliceViaProxy, "GET", path, "", nil)
			return code == http.StatusOK
		})
		// The platform's own CRDs serve cluster.x-k8s.io v1beta1.
		if code, body := raw(t, aliceDirect, "GET", "/apis/cluster.x-k8s.io/v1beta1/namespaces/"+ns+"/"+resource, "", nil); code != http.StatusForbidden {
			t.Errorf("alice lists the platform's %s directly: %d %s", resource, code, body)
		}
	}
	crdPath := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
	poll(t, "alice to get the CRD machines.cluster.x-k8s.io through the proxy", func() bool {
		code, _ := raw(t, aliceViaProxy, "GET", crdPath+"machines.cluster.x-k8s.io", "", nil)
		return code == http.StatusOK
	})
	if code, body := raw(t, aliceViaProxy, "GET", crdPath+"machinesets.cluster.x-k8s.io", "", nil); code != http.StatusForbidden {
		t.Errorf("alice gets the CRD machinesets.cluster.x-k8s.io through the proxy: %d %s", code, body)
	}
	if code, body := raw(t, aliceDirect, "GET", crdPath+"machines.cluster.x-k8s.io", "", nil); code != http.StatusForbidden {
		t.Errorf("alice gets the platform's CRD machines.cluster.x-k8s.io directly: %d %s", code, body)
	}
	// kubectl auth can-i asks about the CRD the proxy serves under the name, and reads the name back.
	aliceClient := kubernetes.NewForConfigOrDie(aliceViaProxy)
	for crd, want := range map[string]bool{"machines.cluster.x-k8s.io": true, "machinesets.cluster.x-k8s.io": false} {
		review, err := aliceClient.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: "get", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: crd}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if review.Status.Allowed != want || review.Spec.ResourceAttributes.Name != crd {
			t.Errorf("can alice get the CRD %s through the proxy: %v (%s), want %v", crd, review.Status.Allowed, review.Spec.ResourceAttributes.Name, want)
		}
	}
}

// TestAdmissionRulesThroughTheProxy creates a ValidatingWebhookConfiguration and a
// ValidatingAdmissionPolicy with its binding, all naming cluster.x-k8s.io, through the proxy, proves they
// are stored on the private group and read back upstream, and that the policy denies, through the proxy,
// a Machine it matches, while the platform's own Machines are not its business.
func TestAdmissionRulesThroughTheProxy(t *testing.T) {
	ctx := context.Background()
	c, directClient := clients(t)
	ns := namespace(t, c)
	admin := kubernetes.NewForConfigOrDie(env.DirectConfig(env.AdminToken))

	// A webhook that can never be called (its objectSelector matches nothing): only its rules matter.
	webhook := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "machines.e2e.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/validate")},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"cluster.x-k8s.io", "apps"}, APIVersions: []string{"*"}, Resources: []string{"machines"}}}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"e2e-never": ns}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}}}
	mustCreate(t, c, webhook)
	t.Cleanup(func() {
		_ = admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, webhook.Name, metav1.DeleteOptions{})
	})
	storedWebhook, err := admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, webhook.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := storedWebhook.Webhooks[0].Rules[0].APIGroups; len(got) != 2 || got[0] != privateCore || got[1] != "apps" {
		t.Errorf("the webhook is stored with apiGroups %q", got)
	}
	readWebhook := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: webhook.Name}, readWebhook); err != nil {
		t.Fatal(err)
	}
	if got := readWebhook.Webhooks[0].Rules[0].APIGroups; len(got) != 2 || got[0] != "cluster.x-k8s.io" {
		t.Errorf("the webhook reads back through the proxy with apiGroups %q", got)
	}

	// A policy denying Machines labelled e2e-deny, bound in this namespace.
	machines := admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"cluster.x-k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"machines"}}}}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{machines}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "!has(object.metadata.labels) || !('e2e-deny' in object.metadata.labels)",
				Message:    "e2e-deny is set"}},
		}}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
				ResourceRules:     []admissionregistrationv1.NamedRuleWithOperations{machines}},
		}}
	mustCreate(t, c, policy)
	t.Cleanup(func() {
		_ = admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(ctx, policy.Name, metav1.DeleteOptions{})
	})
	mustCreate(t, c, binding)
	t.Cleanup(func() {
		_ = admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})
	})
	storedPolicy, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, policy.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := storedPolicy.Spec.MatchConstraints.ResourceRules[0].APIGroups; len(got) != 1 || got[0] != privateCore {
		t.Errorf("the policy is stored with apiGroups %q", got)
	}
	storedBinding, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, binding.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := storedBinding.Spec.MatchResources.ResourceRules[0].APIGroups; len(got) != 1 || got[0] != privateCore {
		t.Errorf("the binding is stored with apiGroups %q", got)
	}
	readPolicy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := c.Get(ctx, client.ObjectKey{Name: policy.Name}, readPolicy); err != nil {
		t.Fatal(err)
	}
	if got := readPolicy.Spec.MatchConstraints.ResourceRules[0].APIGroups; len(got) != 1 || got[0] != "cluster.x-k8s.io" {
		t.Errorf("the policy reads back through the proxy with apiGroups %q", got)
	}

	// The policy denies a labelled Machine created through the proxy (a dry run until the policy is
	// loaded, then for real), and lets an unlabelled one through.
	denied := func(name string, dryRun []string) error {
		m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"e2e-deny": "yes"}},
			Spec: machineSpec("c1", name)}
		return c.Create(ctx, m, &client.CreateOptions{DryRun: dryRun})
	}
	poll(t, "the policy to deny a Machine", func() bool { return denied("probe", []string{metav1.DryRunAll}) != nil })
	err = denied("m-denied", nil)
	if err == nil || !strings.Contains(err.Error(), "e2e-deny is set") {
		t.Fatalf("creating a labelled Machine through the proxy: %v, want the policy's denial", err)
	}
	if strings.Contains(err.Error(), privateCore) {
		t.Errorf("the denial names the private group: %v", err)
	}
	mustCreate(t, c, &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m-allowed", Namespace: ns}, Spec: machineSpec("c1", "m-allowed")})
	if err := directClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "m-denied"}, &privclusterv1.Machine{}); !apierrors.IsNotFound(err) {
		t.Errorf("the denied Machine exists: %v", err)
	}

	// The platform's own Machines (cluster.x-k8s.io on the backend) are not matched.
	platform, err := client.New(env.DirectConfig(env.AdminToken), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	theirs := platformMachine(ns, "platform-labelled")
	theirs.SetLabels(map[string]string{"e2e-deny": "yes"})
	if err := platform.Create(ctx, theirs); err != nil {
		t.Errorf("the policy created through the proxy denies the platform's Machine: %v", err)
	}
}

// TestResourceQuotaThroughTheProxy creates a ResourceQuota limiting count/machines.cluster.x-k8s.io
// through the proxy, proves it is stored with the private resource name and reads back (status too) with
// the upstream one, that it limits the Machines created through the proxy with an error naming the
// upstream resource, and that a JSON patch addressing the key by a pointer reaches the private key.
func TestResourceQuotaThroughTheProxy(t *testing.T) {
	ctx := context.Background()
	c, directClient := clients(t)
	ns := namespace(t, c)
	admin := kubernetes.NewForConfigOrDie(env.DirectConfig(env.AdminToken))
	pb := protobufClientset(t, env.AdminToken)
	const upstreamKey, privateKey = corev1.ResourceName("count/machines.cluster.x-k8s.io"), corev1.ResourceName("count/machines." + privateCore)

	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{upstreamKey: resource.MustParse("1"), "count/configmaps": resource.MustParse("10")}}}
	mustCreate(t, c, quota)
	stored, err := admin.CoreV1().ResourceQuotas(ns).Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := stored.Spec.Hard[privateKey]; !ok || len(stored.Spec.Hard) != 2 {
		t.Fatalf("the quota is stored with spec.hard %v, want %s", stored.Spec.Hard, privateKey)
	}

	// The e2e kube-controller-manager runs no resourcequota controller: write the status it would, through
	// the proxy (status keys are translated on the way in too).
	quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{upstreamKey: resource.MustParse("0"), "count/configmaps": resource.MustParse("0")}}
	if err := c.Status().Update(ctx, quota); err != nil {
		t.Fatal(err)
	}
	stored, err = admin.CoreV1().ResourceQuotas(ns).Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := stored.Status.Used[privateKey]; !ok {
		t.Fatalf("the quota's status is stored as %+v, want %s", stored.Status, privateKey)
	}

	mustCreate(t, c, &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: ns}, Spec: machineSpec("c1", "m1")})
	err = c.Create(ctx, &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m2", Namespace: ns}, Spec: machineSpec("c1", "m2")})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota") {
		t.Fatalf("creating a second Machine through the proxy: %v, want the quota's refusal", err)
	}
	if msg := err.Error(); !strings.Contains(msg, string(upstreamKey)+"=1") || strings.Contains(msg, privateCore) {
		t.Errorf("the quota's refusal does not name the upstream resource only: %s", msg)
	}
	if err := directClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "m2"}, &privclusterv1.Machine{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused Machine exists: %v", err)
	}

	// Read back through the proxy, in JSON and in protobuf: the admission plugin counted m1.
	viaJSON := &corev1.ResourceQuota{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(quota), viaJSON); err != nil {
		t.Fatal(err)
	}
	viaPB, err := pb.CoreV1().ResourceQuotas(ns).Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range []*corev1.ResourceQuota{viaJSON, viaPB} {
		used := got.Status.Used[upstreamKey]
		if _, ok := got.Spec.Hard[upstreamKey]; !ok || used.Value() != 1 || len(got.Status.Hard) != 2 || len(got.Status.Used) != 2 {
			t.Errorf("the quota reads back through the proxy as %+v %+v", got.Spec, got.Status)
		}
		// The managed fields sets name the keys too.
		named := false
		for _, mf := range got.ManagedFields {
			fields := mf.FieldsV1.GetRawString()
			named = named || strings.Contains(fields, `"f:`+string(upstreamKey)+`"`)
			if strings.Contains(fields, privateCore) {
				t.Errorf("the quota's managed fields of %s read back through the proxy as %s", mf.Manager, fields)
			}
		}
		if !named {
			t.Errorf("no managed fields set of the quota names %s: %+v", upstreamKey, got.ManagedFields)
		}
	}

	// A JSON patch addressing the key: the private key changes, and the second Machine fits.
	patch := []map[string]any{{"op": "replace", "path": "/spec/hard/count~1machines.cluster.x-k8s.io", "value": "2"}}
	data, _ := json.Marshal(patch)
	if err := c.Patch(ctx, viaJSON, client.RawPatch(types.JSONPatchType, data)); err != nil {
		t.Fatal(err)
	}
	stored, err = admin.CoreV1().ResourceQuotas(ns).Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if hard := stored.Spec.Hard[privateKey]; hard.Value() != 2 || len(stored.Spec.Hard) != 2 {
		t.Fatalf("after the JSON patch the quota is stored with spec.hard %v", stored.Spec.Hard)
	}
	// status.hard follows spec.hard only by the controller: write it as it would.
	viaJSON.Status.Hard = corev1.ResourceList{upstreamKey: resource.MustParse("2"), "count/configmaps": resource.MustParse("10")}
	if err := c.Status().Update(ctx, viaJSON); err != nil {
		t.Fatal(err)
	}
	// The quota admission plugin reads quotas from its informer, which sees the new status.hard a moment
	// after the update returned: until then it refuses m2 as before.
	m2 := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m2", Namespace: ns}, Spec: machineSpec("c1", "m2")}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := c.Create(ctx, m2.DeepCopy())
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota") {
			return false, nil
		}
		return err == nil, err
	}); err != nil {
		t.Fatalf("creating m2 after the quota was raised: %v", err)
	}
}

// platformMachine is a Machine of the platform's own CAPI (cluster.x-k8s.io v1beta1 on the backend).
func platformMachine(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"clusterName": "platform", "bootstrap": map[string]any{"dataSecretName": "x"},
			"infrastructureRef": map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "AWSMachine", "name": "p"}},
	}}
}
