package e2e

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// TestAnswersAsTheAPIServer holds the small differences an attacker found between the proxy and
// kube-apiserver to the apiserver's answer: each request is sent through the proxy in the upstream group
// and straight to the apiserver in the private group, and the answers compared.
func TestAnswersAsTheAPIServer(t *testing.T) {
	p, d := viaProxy(t), direct(t)

	t.Run("OpenAPI headers", func(t *testing.T) {
		// Headers whose presence and value are the apiserver's; ETag and Last-Modified present alike.
		same := []string{"Content-Type", "Cache-Control", "Vary", "Content-Encoding", "Expires"}
		present := []string{"ETag", "Last-Modified"}
		for _, tc := range []struct {
			name, proxied, direct string
			header                []string
		}{
			{"v3 index", "/openapi/v3", "/openapi/v3", nil},
			{"v3 index, gzip", "/openapi/v3", "/openapi/v3", []string{"Accept-Encoding: gzip"}},
			{"v3 group", "/openapi/v3/apis/cluster.x-k8s.io/v1beta2", "/openapi/v3/apis/cluster.hypershift.openshift.io/v1beta2", nil},
			{"v3 group, gzip", "/openapi/v3/apis/cluster.x-k8s.io/v1beta2", "/openapi/v3/apis/cluster.hypershift.openshift.io/v1beta2", []string{"Accept-Encoding: gzip"}},
			{"v3 group, protobuf", "/openapi/v3/apis/cluster.x-k8s.io/v1beta2", "/openapi/v3/apis/cluster.hypershift.openshift.io/v1beta2",
				[]string{"Accept: application/com.github.proto-openapi.spec.v3@v1.0+protobuf"}},
			{"v2", "/openapi/v2", "/openapi/v2", nil},
			{"v2, gzip", "/openapi/v2", "/openapi/v2", []string{"Accept-Encoding: gzip"}},
			{"v2, protobuf and gzip", "/openapi/v2", "/openapi/v2",
				[]string{"Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf", "Accept-Encoding: gzip"}},
		} {
			resp, _ := rawDo(t, p, tc.proxied, tc.header...)
			want, _ := rawDo(t, d, tc.direct, tc.header...)
			if resp.StatusCode != want.StatusCode {
				t.Errorf("%s: %d, the apiserver's %d", tc.name, resp.StatusCode, want.StatusCode)
			}
			for _, h := range same {
				if got, w := resp.Header.Values(h), want.Header.Values(h); !slices.Equal(got, w) {
					t.Errorf("%s: %s %q, the apiserver's %q", tc.name, h, got, w)
				}
			}
			for _, h := range present {
				if (resp.Header.Get(h) == "") != (want.Header.Get(h) == "") {
					t.Errorf("%s: %s %q, the apiserver's %q", tc.name, h, resp.Header.Get(h), want.Header.Get(h))
				}
			}
		}
	})

	t.Run("slashes at the end of a path", func(t *testing.T) {
		const name = "parity-trailing-slashes"
		body := `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","metadata":{"name":"` + name + `"},"spec":{"paused":false}}`
		p.mustDo(t, http.StatusCreated, http.MethodPost, "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/clusters", body, "Content-Type: application/json")
		t.Cleanup(func() {
			p.do(t, http.MethodDelete, "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/clusters/"+name, "")
		})
		for _, tail := range []string{"/", "//", "///", "//status", "/status//"} {
			resp, data := p.do(t, http.MethodGet, "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/clusters/"+name+tail, "")
			want, _ := d.do(t, http.MethodGet, "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/default/clusters/"+name+tail, "")
			if resp.StatusCode != want.StatusCode || strings.Contains(string(data), "hypershift") {
				t.Errorf("GET .../%s%s: %d, the apiserver's %d: %.300s", name, tail, resp.StatusCode, want.StatusCode, data)
			}
		}
	})

	t.Run("kube-apiserver's metrics", func(t *testing.T) {
		resp, data := p.do(t, http.MethodGet, "/metrics", "")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %.300s", resp.StatusCode, data)
		}
		if strings.Contains(string(data), "hypershift.openshift.io") {
			t.Errorf("/metrics through the proxy names a private group")
		}
		// The proxy's requests above were counted by the apiserver in the private group: through the
		// proxy they are counted in the upstream group.
		if !strings.Contains(string(data), `group="cluster.x-k8s.io"`) {
			t.Errorf("/metrics through the proxy counts no request of cluster.x-k8s.io")
		}
	})

	t.Run("a namespace being deleted names what remains in upstream terms", func(t *testing.T) {
		ctx := context.Background()
		kube, err := kubernetes.NewForConfig(env.DirectConfig(env.AdminToken))
		if err != nil {
			t.Fatal(err)
		}
		ns := "parity-terminating-" + rand.String(5)
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cluster := "/apis/cluster.x-k8s.io/v1beta2/namespaces/" + ns + "/clusters"
		p.mustDo(t, http.StatusCreated, http.MethodPost, cluster,
			`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","metadata":{"name":"held","finalizers":["parity.example.com/hold"]},"spec":{"paused":false}}`,
			"Content-Type: application/json")
		t.Cleanup(func() {
			p.do(t, http.MethodPatch, cluster+"/held", `{"metadata":{"finalizers":null}}`, "Content-Type: application/merge-patch+json")
		})
		if err := kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// kube-controller-manager's namespace controller reports what remains in the Namespace's conditions.
		var direct, proxied string
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
			_, data := d.do(t, http.MethodGet, "/api/v1/namespaces/"+ns, "")
			direct = string(data)
			return strings.Contains(direct, "clusters.cluster.hypershift.openshift.io"), nil
		}); err != nil {
			t.Fatalf("the namespace's conditions never named the Cluster left: %s", direct)
		}
		for _, accept := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
			_, data := p.do(t, http.MethodGet, "/api/v1/namespaces/"+ns, "", "Accept: "+accept)
			proxied = string(data)
			if strings.Contains(proxied, "hypershift") || !strings.Contains(proxied, "clusters.cluster.x-k8s.io") {
				t.Errorf("in %s through the proxy: %s", accept, proxied)
			}
		}
	})
}

// rawDo sends a GET with header lines, leaving compression to the caller (an Accept-Encoding header asks
// for it; none is added).
func rawDo(t *testing.T, c *rawClient, path string, header ...string) (*http.Response, []byte) {
	t.Helper()
	return c.do(t, http.MethodGet, path, "", append([]string{"Accept-Encoding: identity"}, header...)...)
}
