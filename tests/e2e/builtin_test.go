package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// protobufClientset is a client-go clientset through the proxy that sends and asks for protobuf, as
// controllers do for built-in kinds.
func protobufClientset(t *testing.T, token string) *kubernetes.Clientset {
	t.Helper()
	cfg := proxy.Config(token)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestBuiltinKindsPointingAtCAPI covers built-in kinds whose own fields name a CAPI object or group: core
// and events.k8s.io Events (what kubectl describe shows), HorizontalPodAutoscalers targeting a scale
// subresource, and the access reviews (kubectl auth can-i, controllers checking their access), in
// protobuf as controllers send them.
func TestBuiltinKindsPointingAtCAPI(t *testing.T) {
	ctx := context.Background()
	c, directClient := clients(t)
	ns := namespace(t, c)
	cs := protobufClientset(t, env.AdminToken)
	machineRef := corev1.ObjectReference{APIVersion: "cluster.x-k8s.io/v1beta2", Kind: "Machine", Namespace: ns, Name: "m1"}

	t.Run("core Event", func(t *testing.T) {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "m1.1", Namespace: ns}, InvolvedObject: machineRef,
			Related: &corev1.ObjectReference{APIVersion: "cluster.x-k8s.io/v1beta2", Kind: "MachineSet", Namespace: ns, Name: "ms"},
			Reason:  "Provisioning", Message: "m1", Type: corev1.EventTypeNormal, Source: corev1.EventSource{Component: "capi"}}
		got, err := cs.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.InvolvedObject.APIVersion != "cluster.x-k8s.io/v1beta2" {
			t.Errorf("created Event came back with %+v", got.InvolvedObject)
		}
		stored := &corev1.Event{}
		if err := directClient.Get(ctx, client.ObjectKeyFromObject(ev), stored); err != nil {
			t.Fatal(err)
		}
		if stored.InvolvedObject.APIVersion != privateCore+"/v1beta2" || stored.Related.APIVersion != privateCore+"/v1beta2" {
			t.Errorf("stored Event: %+v %+v", stored.InvolvedObject, stored.Related)
		}
		list, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.apiVersion=cluster.x-k8s.io/v1beta2,involvedObject.name=m1"})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 1 || list.Items[0].InvolvedObject.APIVersion != "cluster.x-k8s.io/v1beta2" || list.Items[0].Related.APIVersion != "cluster.x-k8s.io/v1beta2" {
			t.Errorf("listed Events (by involvedObject.apiVersion): %+v", list.Items)
		}
	})

	t.Run("events.k8s.io Event", func(t *testing.T) {
		ev := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "m1.2", Namespace: ns}, Regarding: machineRef,
			EventTime: metav1.NowMicro(), ReportingController: "cluster.x-k8s.io/machine-controller", ReportingInstance: "capi-1",
			Action: "Provision", Reason: "Provisioning", Type: corev1.EventTypeNormal}
		got, err := cs.EventsV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Regarding.APIVersion != "cluster.x-k8s.io/v1beta2" || got.ReportingController != "cluster.x-k8s.io/machine-controller" {
			t.Errorf("created Event came back with %+v %q", got.Regarding, got.ReportingController)
		}
		stored := &corev1.Event{}
		if err := directClient.Get(ctx, client.ObjectKeyFromObject(ev), stored); err != nil {
			t.Fatal(err)
		}
		if stored.InvolvedObject.APIVersion != privateCore+"/v1beta2" {
			t.Errorf("stored Event: %+v", stored.InvolvedObject)
		}
		list, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=m1"})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range list.Items {
			if e.Regarding.APIVersion != "cluster.x-k8s.io/v1beta2" {
				t.Errorf("listed Event %s: %+v", e.Name, e.Regarding)
			}
		}
		// kubectl describe shows them (the kubectl session covers the rest of describe).
		if out := kubectl(t, "get", "events", "-n", ns, "-o", "jsonpath={.items[*].involvedObject.apiVersion}"); strings.Contains(out, "hypershift") {
			t.Errorf("kubectl get events: %s", out)
		}
	})

	t.Run("HorizontalPodAutoscaler of a MachineDeployment", func(t *testing.T) {
		hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "md1", Namespace: ns},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 3,
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "cluster.x-k8s.io/v1beta2", Kind: "MachineDeployment", Name: "md1"}}}
		got, err := cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, hpa, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.ScaleTargetRef.APIVersion != "cluster.x-k8s.io/v1beta2" {
			t.Errorf("created HPA came back with %+v", got.Spec.ScaleTargetRef)
		}
		stored := &autoscalingv2.HorizontalPodAutoscaler{}
		if err := directClient.Get(ctx, client.ObjectKeyFromObject(hpa), stored); err != nil {
			t.Fatal(err)
		}
		if stored.Spec.ScaleTargetRef.APIVersion != privateCore+"/v1beta2" {
			t.Errorf("stored HPA: %+v", stored.Spec.ScaleTargetRef)
		}
	})

	t.Run("access reviews", func(t *testing.T) {
		directCS := kubernetes.NewForConfigOrDie(env.DirectConfig(env.AdminToken))
		// What the generator's RBAC grants: the private group. Through the proxy, alice asks about the
		// upstream group and must get the answer for the private one.
		for _, obj := range []client.Object{
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "machines-reader", Namespace: ns},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{privateCore}, Resources: []string{"machines"}, Verbs: []string{"get", "list"}}}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice", Namespace: ns},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "machines-reader"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "alice"}}},
		} {
			if err := directClient.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
		}
		// RBAC is cached by the authorizer: wait until the grant shows directly, on the private group.
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			sar, err := directCS.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: ns, Verb: "list", Group: privateCore, Resource: "machines"}}}, metav1.CreateOptions{})
			return err == nil && sar.Status.Allowed, nil
		}); err != nil {
			t.Fatalf("alice's grant does not show: %v", err)
		}
		attrs := &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Group: clusterv1.GroupVersion.Group, Resource: "machines"}
		alice := protobufClientset(t, env.UserToken)
		ssar, err := alice.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !ssar.Status.Allowed || ssar.Spec.ResourceAttributes.Group != "cluster.x-k8s.io" {
			t.Errorf("SelfSubjectAccessReview through the proxy: %+v %+v", ssar.Spec.ResourceAttributes, ssar.Status)
		}
		sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx,
			&authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: attrs}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !sar.Status.Allowed {
			t.Errorf("SubjectAccessReview through the proxy: %+v", sar.Status)
		}
		lsar, err := cs.AuthorizationV1().LocalSubjectAccessReviews(ns).Create(ctx,
			&authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: ns},
				Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "delete", Group: "cluster.x-k8s.io", Resource: "machines"}}},
			metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if lsar.Status.Allowed {
			t.Errorf("LocalSubjectAccessReview of a verb alice lacks: allowed")
		}
		rules, err := alice.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx,
			&authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range rules.Status.ResourceRules {
			for _, g := range r.APIGroups {
				found = found || g == "cluster.x-k8s.io"
				if strings.Contains(g, "hypershift") {
					t.Errorf("SelfSubjectRulesReview names %s", g)
				}
			}
		}
		if !found {
			t.Errorf("SelfSubjectRulesReview lacks the machines rule: %+v", rules.Status.ResourceRules)
		}
		// kubectl auth can-i, as alice.
		if out := kubectlAs(t, env.UserToken, "auth", "can-i", "list", "machines.cluster.x-k8s.io", "-n", ns); strings.TrimSpace(out) != "yes" {
			t.Errorf("kubectl auth can-i list machines.cluster.x-k8s.io: %q", out)
		}
		// Directly, the upstream group is the platform's: alice may not.
		resp, body := direct(t).do(t, http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews",
			`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"alice","resourceAttributes":{"namespace":"`+ns+`","verb":"list","group":"cluster.x-k8s.io","resource":"machines"}}}`,
			"Content-Type: application/json")
		if resp.StatusCode != http.StatusCreated || field(jsonObject(t, body), "status.allowed") == true {
			t.Errorf("direct SubjectAccessReview of the upstream group: %d %s", resp.StatusCode, body)
		}
	})
}
