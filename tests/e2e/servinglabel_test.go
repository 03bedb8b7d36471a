package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/openshift/hypershift-capi-proxy/install"
	"github.com/openshift/hypershift-capi-proxy/migration/serving"
)

// TestServingLabelGuard attacks the per-namespace cut-over as a user who may only patch Namespaces (a
// common grant): alice labels the platform's own namespace serve-from=upstream, through the proxy and
// directly, to make HyperShift's clients (the admin here) read and write the platform's Cluster. The
// admission policy of the install assets (framework.Main installs it) refuses her, whichever way she
// goes; while the policy's binding is deleted she may label, but the proxy, which follows the label only
// while it is guarded, holds the namespace's writes and keeps serving its reads from the private groups,
// so the platform's Cluster stays out of reach; once the binding is back and the label removed, nothing
// is held.
func TestServingLabelGuard(t *testing.T) {
	ctx := context.Background()
	o := startOwnProxy(t)
	p, admin, directDyn, proxyDyn := o.p, o.kube, o.directDyn, o.proxyDyn

	// The platform's namespace and Cluster, straight in the platform's upstream CRD.
	platform := "platform-capi-" + rand.String(5)
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: platform}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.CoreV1().Namespaces().Delete(context.Background(), platform, metav1.DeleteOptions{}) })
	if _, err := directDyn.Resource(upstreamClusters).Namespace(platform).Create(ctx, clusterObject(upstreamClusters, platform, "platform1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// alice may get, list and patch Namespaces, nothing else.
	role := "namespace-labeller-" + rand.String(5)
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "patch", "update"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), role, metav1.DeleteOptions{})
		_ = admin.RbacV1().ClusterRoles().Delete(context.Background(), role, metav1.DeleteOptions{})
	})
	aliceProxy := newRawClient(t, p.Config(env.UserToken))
	aliceDirect := newRawClient(t, env.DirectConfig(env.UserToken))
	label := func(c *rawClient, value string, dryRun bool) (int, []byte) {
		query := ""
		if dryRun {
			query = "?dryRun=All"
		}
		v := "null"
		if value != "" {
			v = fmt.Sprintf("%q", value)
		}
		resp, body := c.do(t, http.MethodPatch, "/api/v1/namespaces/"+platform+query, fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, serving.Label, v),
			"Content-Type: application/merge-patch+json")
		return resp.StatusCode, body
	}
	// waitLabel waits until alice's dry-run label is answered want directly (the apiserver enforces a
	// policy, or stops enforcing it, once its informers have seen the change).
	waitLabel := func(t *testing.T, want int) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
			code, _ := label(aliceDirect, string(serving.Upstream), true)
			return code == want, nil
		}); err != nil {
			t.Fatalf("alice's dry-run label never answered %d: %v", want, err)
		}
	}
	platformVisible := func(t *testing.T) {
		t.Helper()
		if _, err := proxyDyn.Resource(upstreamClusters).Namespace(platform).Get(ctx, "platform1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("GET of the platform's Cluster through the proxy: %v, want 404", err)
		}
		// Reads served from a watch cache are left out: at v1beta1 they convert every private Cluster, and
		// other tests leave Clusters whose references name kinds no CRD serves (their conversion fails, as
		// directly). A GET reads etcd.
	}

	t.Run("guarded: alice cannot label, through the proxy or directly", func(t *testing.T) {
		waitLabel(t, http.StatusForbidden)
		for _, c := range []struct {
			name string
			c    *rawClient
		}{{"proxy", aliceProxy}, {"direct", aliceDirect}} {
			for _, v := range []string{string(serving.Upstream), string(serving.UpstreamHeld), "private"} {
				code, body := label(c.c, v, false)
				if code != http.StatusForbidden || !strings.Contains(string(body), "only the identity that runs the CAPI migration") {
					t.Errorf("%s: alice labels %s: %d %s, want 403 from the policy", c.name, v, code, body)
				}
			}
		}
		// A patch of anything else of the Namespace is hers to make.
		resp, body := aliceProxy.do(t, http.MethodPatch, "/api/v1/namespaces/"+platform, `{"metadata":{"labels":{"team":"platform"}}}`,
			"Content-Type: application/merge-patch+json")
		if resp.StatusCode != http.StatusOK {
			t.Errorf("alice's other label: %d %s", resp.StatusCode, body)
		}
		platformVisible(t)
	})

	t.Run("unguarded: the proxy does not follow the label", func(t *testing.T) {
		if err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, serving.PolicyName, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			// The label alice could write stays: an administrator removes it before the guard comes back.
			patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, serving.Label)
			if _, err := admin.CoreV1().Namespaces().Patch(context.Background(), platform, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Error(err)
			}
			_, binding, err := install.ServingPolicy(install.ServingGuard{})
			if err == nil {
				_, err = admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(context.Background(), binding, metav1.CreateOptions{})
			}
			if err != nil {
				t.Error(err)
			}
			waitLabel(t, http.StatusForbidden)
		})
		waitLabel(t, http.StatusOK)
		if code, body := label(aliceProxy, string(serving.Upstream), false); code != http.StatusOK {
			t.Fatalf("alice labels without the policy: %d %s", code, body)
		}
		// Once the proxy has seen the label, it holds the namespace's writes (429)...
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := proxyDyn.Resource(upstreamClusters).Namespace(platform).Create(ctx, clusterObject(upstreamClusters, platform, "probe"),
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return apierrors.IsTooManyRequests(err), nil
		}); err != nil {
			t.Fatalf("the proxy never held the unguarded namespace's writes: %v", err)
		}
		// ... and serves its reads from the private groups, where the platform's Cluster is not.
		platformVisible(t)
		patch := []byte(`{"metadata":{"labels":{"owned":"by-hypershift"}}}`)
		if _, err := proxyDyn.Resource(upstreamClusters).Namespace(platform).Patch(ctx, "platform1", types.MergePatchType, patch, metav1.PatchOptions{}); !apierrors.IsTooManyRequests(err) {
			t.Errorf("patch of the platform's Cluster through the proxy: %v, want 429", err)
		}
		stored, err := directDyn.Resource(upstreamClusters).Namespace(platform).Get(ctx, "platform1", metav1.GetOptions{})
		if err != nil || stored.GetLabels()["owned"] != "" {
			t.Errorf("the platform's Cluster: %v %v", err, stored.GetLabels())
		}
	})
}
