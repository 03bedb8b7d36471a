package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"k8s.io/apimachinery/pkg/watch"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	privclusterv1 "github.com/openshift/hypershift-capi-proxy/apis/private/core/v1beta2"
)

// gunzipped returns a response body decompressed if it is gzip'ed.
func gunzipped(t *testing.T, resp *http.Response, data []byte) []byte {
	t.Helper()
	if resp.Header.Get("Content-Encoding") != "gzip" {
		return data
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWire covers what lies around the bodies: gzip either side, Content-Length, Warning headers, and
// protobuf and CBOR asked for or sent by clients, negotiated to JSON on the wire.
func TestWire(t *testing.T) {
	ctx := context.Background()
	c, directClient := clients(t)
	ns := namespace(t, c)
	rp, rd := viaProxy(t), direct(t)
	cluster := mustCreateCluster(t, c, ns)
	// One Machine larger than kube-apiserver's gzip threshold (128 KiB), one small.
	big := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: ns,
		Annotations: map[string]string{"e2e/padding": strings.Repeat("x", 150<<10)}}, Spec: machineSpec("c1", "big")}
	mustCreate(t, c, big)
	mustCreate(t, c, &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "small", Namespace: ns}, Spec: machineSpec("c1", "small")})
	machines := "/namespaces/" + ns + "/machines"

	t.Run("gzip and Content-Length", func(t *testing.T) {
		for _, path := range []string{machines + "/big", machines + "/small", machines} {
			// Asking for gzip explicitly, the Go transport leaves the body as it came.
			respProxy, viaProxyBody := rp.do(t, http.MethodGet, "/apis/cluster.x-k8s.io/v1beta2"+path, "", "Accept-Encoding: gzip")
			respDirect, directBody := rd.do(t, http.MethodGet, "/apis/"+privateCore+"/v1beta2"+path, "", "Accept-Encoding: gzip")
			if respProxy.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %d", path, respProxy.StatusCode)
			}
			if got, want := respProxy.Header.Get("Content-Encoding"), respDirect.Header.Get("Content-Encoding"); got != want {
				t.Errorf("GET %s: Content-Encoding %q through the proxy, %q directly", path, got, want)
			}
			if cl := respProxy.Header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(viaProxyBody)) {
				t.Errorf("GET %s: Content-Length %s for %d bytes", path, cl, len(viaProxyBody))
			}
			if path != machines {
				sameButGroups(t, path, gunzipped(t, respProxy, viaProxyBody), gunzipped(t, respDirect, directBody))
			} else if !strings.Contains(string(gunzipped(t, respProxy, viaProxyBody)), `"apiGroup":"infrastructure.cluster.x-k8s.io"`) {
				t.Errorf("the gzip'ed list is not translated")
			}
		}
		// A client that does not ask for gzip never gets it.
		resp, data := rp.do(t, http.MethodGet, "/apis/cluster.x-k8s.io/v1beta2"+machines+"/big", "", "Accept-Encoding: identity")
		if resp.Header.Get("Content-Encoding") != "" || resp.Header.Get("Content-Length") != strconv.Itoa(len(data)) {
			t.Errorf("without gzip: Content-Encoding %q, Content-Length %s for %d bytes", resp.Header.Get("Content-Encoding"), resp.Header.Get("Content-Length"), len(data))
		}
	})

	t.Run("a loopback client is answered uncompressed", func(t *testing.T) {
		// With --gzip-loopback=false, what the proxy would gzip for a client elsewhere
		// goes uncompressed to a client on loopback, as HTTP allows: a translated list and object, a
		// list of a resource of no mapped group (passed through) and OpenAPI v2.
		sidecar := newRawClient(t, startOwnProxy(t, "--gzip-loopback=false").p.Config(env.AdminToken))
		cms := "/api/v1/namespaces/" + ns + "/configmaps"
		for i := range 2 {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "big-" + strconv.Itoa(i), Namespace: ns},
				Data: map[string]string{"padding": strings.Repeat("y", 100<<10)}}
			if err := c.Create(ctx, cm); err != nil {
				t.Fatal(err)
			}
		}
		for _, path := range []string{"/apis/cluster.x-k8s.io/v1beta2" + machines, "/apis/cluster.x-k8s.io/v1beta2" + machines + "/big", cms, "/openapi/v2"} {
			resp, data := sidecar.do(t, http.MethodGet, path, "", "Accept-Encoding: gzip")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %d", path, resp.StatusCode)
			}
			if ce := resp.Header.Get("Content-Encoding"); ce != "" {
				t.Errorf("GET %s: Content-Encoding %q for a loopback client", path, ce)
			}
			if cl := resp.Header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(data)) {
				t.Errorf("GET %s: Content-Length %s for %d bytes", path, cl, len(data))
			}
			if len(data) <= 128<<10 {
				t.Errorf("GET %s: %d bytes, want an answer kube-apiserver would gzip", path, len(data))
			}
			// The framework's proxy (--gzip-loopback) answers as kube-apiserver does.
			if resp, _ := rp.do(t, http.MethodGet, path, "", "Accept-Encoding: gzip"); resp.Header.Get("Content-Encoding") != "gzip" {
				t.Errorf("GET %s with --gzip-loopback: Content-Encoding %q", path, resp.Header.Get("Content-Encoding"))
			}
		}
	})

	t.Run("Warning headers", func(t *testing.T) {
		// v1beta1 is deprecated: the apiserver warns, naming the group, which must be the upstream one.
		respProxy, _ := rp.do(t, http.MethodGet, "/apis/cluster.x-k8s.io/v1beta1"+machines, "")
		respDirect, _ := rd.do(t, http.MethodGet, "/apis/"+privateCore+"/v1beta1"+machines, "")
		got, want := respProxy.Header.Values("Warning"), respDirect.Header.Values("Warning")
		if len(want) == 0 || len(got) != len(want) {
			t.Fatalf("warnings %q through the proxy, %q directly", got, want)
		}
		for i := range got {
			if got[i] != toUpstreamText(want[i]) || !strings.Contains(got[i], "cluster.x-k8s.io/v1beta1") {
				t.Errorf("warning %q, want %q", got[i], toUpstreamText(want[i]))
			}
		}
	})

	t.Run("protobuf asked for and sent by client-go", func(t *testing.T) {
		cs := protobufClientset(t, env.AdminToken)
		w, err := cs.CoreV1().Secrets(ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "c1-kubeconfig", Namespace: ns,
			OwnerReferences: []metav1.OwnerReference{owner(cluster, "Cluster")}}}
		created, err := cs.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if created.OwnerReferences[0].APIVersion != "cluster.x-k8s.io/v1beta2" {
			t.Errorf("created Secret: %+v", created.OwnerReferences)
		}
		stored := &corev1.Secret{}
		if err := directClient.Get(ctx, client.ObjectKeyFromObject(secret), stored); err != nil {
			t.Fatal(err)
		}
		if stored.OwnerReferences[0].APIVersion != privateCore+"/v1beta2" {
			t.Errorf("stored Secret: %+v", stored.OwnerReferences)
		}
		select {
		case ev := <-w.ResultChan():
			s, ok := ev.Object.(*corev1.Secret)
			if ev.Type != watch.Added || !ok || s.OwnerReferences[0].APIVersion != "cluster.x-k8s.io/v1beta2" {
				t.Errorf("watch event %s %T", ev.Type, ev.Object)
			}
		case <-time.After(20 * time.Second):
			t.Error("no watch event")
		}
	})

	t.Run("CBOR asked for and sent", func(t *testing.T) {
		body, err := cbordirect.Marshal(map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
			"metadata": map[string]any{"name": "from-cbor", "namespace": ns},
			"spec": map[string]any{"clusterName": "c1", "bootstrap": map[string]any{"dataSecretName": "s"},
				"infrastructureRef": map[string]any{"apiGroup": upstreamInfra, "kind": "DockerMachine", "name": "from-cbor"}}})
		if err != nil {
			t.Fatal(err)
		}
		// The body reaches the backend in CBOR (translated), so the client gets what the apiserver answers
		// CBOR: here, without the CBOR serving feature, its 415, as directly.
		resp, data := rp.do(t, http.MethodPost, "/apis/cluster.x-k8s.io/v1beta2"+machines, string(body),
			"Content-Type: application/cbor", "Accept: application/cbor;q=1,application/json;q=0.9")
		directResp, directData := rd.do(t, http.MethodPost, "/apis/"+privateCore+"/v1beta2"+machines, string(body),
			"Content-Type: application/cbor", "Accept: application/cbor;q=1,application/json;q=0.9")
		if resp.StatusCode != directResp.StatusCode {
			t.Fatalf("POST in CBOR: %d through the proxy, %d directly: %s", resp.StatusCode, directResp.StatusCode, data)
		}
		sameButGroups(t, "POST in CBOR", data, directData)
		if resp.StatusCode == http.StatusCreated {
			stored := &privclusterv1.Machine{}
			if err := directClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "from-cbor"}, stored); err != nil {
				t.Fatal(err)
			}
			if stored.Spec.InfrastructureRef.APIGroup != privateInfra {
				t.Errorf("stored from CBOR: %+v", stored.Spec.InfrastructureRef)
			}
		}
		mustCreate(t, c, &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "from-cbor", Namespace: ns}, Spec: machineSpec("c1", "from-cbor")})
		// Asked for CBOR only, the apiserver without CBOR serving answers 406; so does the proxy.
		resp, data = rp.do(t, http.MethodGet, "/apis/cluster.x-k8s.io/v1beta2"+machines+"/from-cbor", "", "Accept: application/cbor")
		directResp, directData = rd.do(t, http.MethodGet, "/apis/"+privateCore+"/v1beta2"+machines+"/from-cbor", "", "Accept: application/cbor")
		if resp.StatusCode != directResp.StatusCode {
			t.Errorf("GET asking for CBOR only: %d %s through the proxy, %d directly", resp.StatusCode, data, directResp.StatusCode)
		}
		sameButGroups(t, "GET asking for CBOR only", data, directData)
	})
}
