package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
)

// contentTypes records the Content-Type of every answer a client got.
type contentTypes struct {
	mu   sync.Mutex
	seen map[string]int
}

func (c *contentTypes) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if err == nil {
				mediaType, _, _ := bytes.Cut([]byte(resp.Header.Get("Content-Type")), []byte(";"))
				c.mu.Lock()
				if c.seen == nil {
					c.seen = map[string]int{}
				}
				c.seen[string(mediaType)]++
				c.mu.Unlock()
			}
			return resp, err
		})
	})
	return cfg
}

// onlyProtobuf fails unless every answer was protobuf.
func (c *contentTypes) onlyProtobuf(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.seen) != 1 || c.seen[runtime.ContentTypeProtobuf] == 0 {
		t.Errorf("the client got answers of media types %v, want protobuf only", c.seen)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestProtobufClients: clients that ask for protobuf (client-go for built-in kinds, a metadata-only
// informer of Machines) are answered in protobuf through the proxy, with the groups translated at the
// same paths as in JSON; an answer that names no private group is the apiserver's own bytes.
func TestProtobufClients(t *testing.T) {
	ctx := context.Background()
	c, directClient := clients(t)
	ns := namespace(t, c)
	cluster := mustCreateCluster(t, c, ns)
	ownedByCluster := []metav1.OwnerReference{owner(cluster, "Cluster")}

	t.Run("built-in kinds", func(t *testing.T) {
		var seen contentTypes
		cfg := seen.wrap(proxy.Config(env.AdminToken))
		cfg.ContentType = runtime.ContentTypeProtobuf
		cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		configMaps := cs.CoreV1().ConfigMaps(ns)
		w, err := configMaps.Watch(ctx, metav1.ListOptions{LabelSelector: "protobuf=test"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owned", Labels: map[string]string{"protobuf": "test"},
			OwnerReferences: ownedByCluster}, Data: map[string]string{"k": "v"}}
		created, err := configMaps.Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := configMaps.Get(ctx, "owned", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		list, err := configMaps.List(ctx, metav1.ListOptions{LabelSelector: "protobuf=test"})
		if err != nil {
			t.Fatal(err)
		}
		for what, refs := range map[string][]metav1.OwnerReference{"create": created.OwnerReferences, "get": got.OwnerReferences, "list": list.Items[0].OwnerReferences} {
			if len(refs) != 1 || refs[0].APIVersion != clusterv1.GroupVersion.String() {
				t.Errorf("%s: ownerReferences %+v", what, refs)
			}
		}
		select {
		case e := <-w.ResultChan():
			if e.Type != watch.Added || e.Object.(*corev1.ConfigMap).OwnerReferences[0].APIVersion != clusterv1.GroupVersion.String() {
				t.Errorf("watch event %s %+v", e.Type, e.Object)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no watch event")
		}
		stored := &corev1.ConfigMap{}
		if err := directClient.Get(ctx, client.ObjectKeyFromObject(created), stored); err != nil {
			t.Fatal(err)
		}
		if stored.OwnerReferences[0].APIVersion != privateCore+"/v1beta2" {
			t.Errorf("stored ownerReferences %+v", stored.OwnerReferences)
		}
		seen.onlyProtobuf(t)
	})

	t.Run("the apiserver's bytes", func(t *testing.T) {
		mustCreate(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns}, Data: map[string]string{"k": "v"}})
		mustCreate(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owned-2", Namespace: ns, OwnerReferences: ownedByCluster}})
		accept := "Accept: " + runtime.ContentTypeProtobuf
		path := "/api/v1/namespaces/" + ns + "/configmaps/"
		viaProxyBody := viaProxy(t).mustDo(t, http.StatusOK, http.MethodGet, path+"plain", "", accept)
		directBody := direct(t).mustDo(t, http.StatusOK, http.MethodGet, path+"plain", "", accept)
		if !bytes.Equal(viaProxyBody, directBody) {
			t.Errorf("a ConfigMap naming no private group:\nproxy  %q\ndirect %q", viaProxyBody, directBody)
		}
		// Owned: the apiserver's bytes with the upstream group, as kube-apiserver encodes them.
		viaProxyBody = viaProxy(t).mustDo(t, http.StatusOK, http.MethodGet, path+"owned-2", "", accept)
		directBody = direct(t).mustDo(t, http.StatusOK, http.MethodGet, path+"owned-2", "", accept)
		pb := protobuf.NewSerializer(clientscheme.Scheme, clientscheme.Scheme)
		obj, _, err := pb.Decode(directBody, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		obj.(*corev1.ConfigMap).OwnerReferences[0].APIVersion = clusterv1.GroupVersion.String()
		var want bytes.Buffer
		if err := pb.Encode(obj, &want); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(viaProxyBody, want.Bytes()) {
			t.Errorf("an owned ConfigMap:\nproxy %q\nwant  %q", viaProxyBody, want.Bytes())
		}
	})

	t.Run("metadata-only informer of Machines", func(t *testing.T) {
		mustCreate(t, c, &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m0", Namespace: ns, Labels: map[string]string{clusterNameLabel: "c1"},
			OwnerReferences: ownedByCluster}, Spec: machineSpec("c1", "m0")})
		var seen contentTypes
		mc, err := metadata.NewForConfig(seen.wrap(proxy.Config(env.AdminToken)))
		if err != nil {
			t.Fatal(err)
		}
		machines := schema.GroupVersionResource{Group: clusterv1.GroupVersion.Group, Version: "v1beta2", Resource: "machines"}
		factory := metadatainformer.NewFilteredSharedInformerFactory(mc, 0, ns, nil)
		informer := factory.ForResource(machines).Informer()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		factory.Start(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
			t.Fatal("the informer never synced")
		}
		upstreamOwned := func(name string) bool {
			obj, ok, _ := informer.GetStore().GetByKey(ns + "/" + name)
			if !ok {
				return false
			}
			m := obj.(*metav1.PartialObjectMetadata)
			if m.OwnerReferences[0].APIVersion != clusterv1.GroupVersion.String() {
				t.Errorf("%s: ownerReferences %+v", name, m.OwnerReferences)
			}
			for _, f := range m.ManagedFields {
				if f.APIVersion != clusterv1.GroupVersion.String() {
					t.Errorf("%s: managedFields %+v", name, f)
				}
			}
			return true
		}
		if !upstreamOwned("m0") {
			t.Fatal("the list did not hold m0")
		}
		// A later Machine reaches the informer through its protobuf watch.
		mustCreate(t, c, &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: ns, Labels: map[string]string{clusterNameLabel: "c1"},
			OwnerReferences: ownedByCluster}, Spec: machineSpec("c1", "m1")})
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return upstreamOwned("m1"), nil
		}); err != nil {
			t.Fatalf("the watch never delivered m1: %v", err)
		}
		seen.onlyProtobuf(t)
	})
}

// TestProtobufMetadataListGzip: a metadata-only list in protobuf larger than kube-apiserver's gzip
// threshold (128 KiB), asked for gzip'ed as client-go's metadata client asks, is one gzip member whose
// content is the list the proxy answers uncompressed, with the groups translated.
func TestProtobufMetadataListGzip(t *testing.T) {
	c, _ := clients(t)
	ns := namespace(t, c)
	cluster := mustCreateCluster(t, c, ns)
	big := strings.Repeat("x", 20<<10)
	for i := range 8 {
		name := fmt.Sprintf("m%d", i)
		mustCreate(t, c, &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{clusterNameLabel: "c1"},
			Annotations: map[string]string{"big": big}, OwnerReferences: []metav1.OwnerReference{owner(cluster, "Cluster")}}, Spec: machineSpec("c1", name)})
	}
	path := "/apis/" + clusterv1.GroupVersion.String() + "/namespaces/" + ns + "/machines"
	accept := "Accept: application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	pb := protobuf.NewSerializer(scheme, scheme)
	decode := func(data []byte) *metav1.PartialObjectMetadataList {
		t.Helper()
		obj, _, err := pb.Decode(data, nil, nil)
		if err != nil {
			t.Fatalf("decoding the list: %v", err)
		}
		return obj.(*metav1.PartialObjectMetadataList)
	}
	resp, zipped := viaProxy(t).do(t, http.MethodGet, path, "", accept, "Accept-Encoding: gzip")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("Content-Type") != runtime.ContentTypeProtobuf {
		t.Fatalf("%d, headers %v", resp.StatusCode, resp.Header)
	}
	br := bufio.NewReader(bytes.NewReader(zipped))
	zr, err := gzip.NewReader(br)
	if err != nil {
		t.Fatal(err)
	}
	zr.Multistream(false)
	content, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("decompressing the answer: %v", err)
	}
	if rest, _ := io.ReadAll(br); len(rest) > 0 {
		t.Errorf("%d bytes after the gzip member", len(rest))
	}
	resp, plain := viaProxy(t).do(t, http.MethodGet, path, "", accept, "Accept-Encoding: identity")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "" {
		t.Fatalf("%d, headers %v", resp.StatusCode, resp.Header)
	}
	got, want := decode(content), decode(plain)
	if len(got.Items) != 8 || !equality.Semantic.DeepEqual(got.Items, want.Items) {
		t.Fatalf("the gzip'ed list's %d items differ from the uncompressed list's %d", len(got.Items), len(want.Items))
	}
	for _, m := range got.Items {
		if m.OwnerReferences[0].APIVersion != clusterv1.GroupVersion.String() || m.Annotations["big"] != big {
			t.Errorf("%s: ownerReferences %+v", m.Name, m.OwnerReferences)
		}
	}
}

// protobufAsJSON returns the JSON form of a protobuf-encoded object (of client-go's scheme or a
// meta.k8s.io shape), with its apiVersion and kind, and any other data as it is.
func protobufAsJSON(t *testing.T, data []byte) []byte {
	t.Helper()
	if !bytes.HasPrefix(data, []byte("k8s\x00")) {
		return data
	}
	s := runtime.NewScheme()
	if err := clientscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := metav1.AddMetaToScheme(s); err != nil {
		t.Fatal(err)
	}
	obj, gvk, err := protobuf.NewSerializer(s, s).Decode(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(*gvk)
	out, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestProtobufKindsFollowDiscovery proves that the proxy keeps protobuf for exactly the built-in
// resources whose kinds it decodes (body.DecodesProtobuf), as the backend's aggregated discovery names
// them: a resource of a group client-go's scheme knows, whose kind it lacks (the backend is newer than
// the proxy's libraries), is asked for in JSON instead of failing to translate.
func TestProtobufKindsFollowDiscovery(t *testing.T) {
	d := direct(t)
	var docs apidiscoveryv2.APIGroupDiscoveryList
	for _, path := range []string{"/api", "/apis"} {
		var doc apidiscoveryv2.APIGroupDiscoveryList
		mustJSON(t, d.mustDo(t, http.StatusOK, http.MethodGet, path, "", aggregatedV2), &doc)
		docs.Items = append(docs.Items, doc.Items...)
	}
	checked := 0
	for _, g := range docs.Items {
		if !clientscheme.Scheme.IsGroupRegistered(g.Name) {
			continue
		}
		for _, v := range g.Versions {
			for _, r := range v.Resources {
				if r.ResponseKind == nil {
					continue
				}
				gvr := schema.GroupVersionResource{Group: g.Name, Version: v.Version, Resource: r.Resource}
				want := clientscheme.Scheme.Recognizes(gvr.GroupVersion().WithKind(r.ResponseKind.Kind))
				if got := body.DecodesProtobuf(gvr); got != want {
					t.Errorf("DecodesProtobuf(%v) = %v; client-go's scheme knows its kind %s: %v", gvr, got, r.ResponseKind.Kind, want)
				}
				checked++
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked %d built-in resources: the discovery documents lack them", checked)
	}
}
