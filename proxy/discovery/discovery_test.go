package discovery

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apidiscoveryv2beta1 "k8s.io/api/apidiscovery/v2beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	endpointsdiscovery "k8s.io/apiserver/pkg/endpoints/discovery"
	"sigs.k8s.io/randfill"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/routestesting"
)

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gv(group, version string) metav1.GroupVersionForDiscovery {
	return metav1.GroupVersionForDiscovery{GroupVersion: group + "/" + version, Version: version}
}

func TestLegacyGroupList(t *testing.T) {
	in := metav1.APIGroupList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
		Groups: []metav1.APIGroup{
			{Name: "apps", Versions: []metav1.GroupVersionForDiscovery{gv("apps", "v1")}, PreferredVersion: gv("apps", "v1")},
			// The backend also serves the real CAPI group: dropped.
			{Name: "cluster.x-k8s.io", Versions: []metav1.GroupVersionForDiscovery{gv("cluster.x-k8s.io", "v1beta2"), gv("cluster.x-k8s.io", "v1beta1")},
				PreferredVersion: gv("cluster.x-k8s.io", "v1beta2")},
			// v1alpha4 has no route: dropped.
			{Name: "cluster.hypershift.openshift.io", Versions: []metav1.GroupVersionForDiscovery{
				gv("cluster.hypershift.openshift.io", "v1beta2"), gv("cluster.hypershift.openshift.io", "v1beta1"), gv("cluster.hypershift.openshift.io", "v1alpha4")},
				PreferredVersion: gv("cluster.hypershift.openshift.io", "v1beta2")},
			// The preferred version has no route: the first routed one is preferred.
			{Name: "infrastructure.cluster.hypershift.openshift.io", Versions: []metav1.GroupVersionForDiscovery{
				gv("infrastructure.cluster.hypershift.openshift.io", "v1beta3"), gv("infrastructure.cluster.hypershift.openshift.io", "v1beta2")},
				PreferredVersion: gv("infrastructure.cluster.hypershift.openshift.io", "v1beta3")},
			// No route at all: dropped.
			{Name: "ipam.cluster.hypershift.openshift.io", Versions: []metav1.GroupVersionForDiscovery{gv("ipam.cluster.hypershift.openshift.io", "v1beta2")},
				PreferredVersion: gv("ipam.cluster.hypershift.openshift.io", "v1beta2")},
			{Name: "hypershift.openshift.io", Versions: []metav1.GroupVersionForDiscovery{gv("hypershift.openshift.io", "v1beta1")},
				PreferredVersion: gv("hypershift.openshift.io", "v1beta1")},
		},
	}
	want := metav1.APIGroupList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
		Groups: []metav1.APIGroup{
			in.Groups[0],
			{Name: "cluster.x-k8s.io", Versions: []metav1.GroupVersionForDiscovery{gv("cluster.x-k8s.io", "v1beta2"), gv("cluster.x-k8s.io", "v1beta1")},
				PreferredVersion: gv("cluster.x-k8s.io", "v1beta2")},
			{Name: "infrastructure.cluster.x-k8s.io", Versions: []metav1.GroupVersionForDiscovery{gv("infrastructure.cluster.x-k8s.io", "v1beta2")},
				PreferredVersion: gv("infrastructure.cluster.x-k8s.io", "v1beta2")},
			in.Groups[5],
		},
	}
	out, err := New(routestesting.Table()).Rewrite(mustJSON(t, in))
	if err != nil {
		t.Fatal(err)
	}
	var got metav1.APIGroupList
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %s\nwant %s", out, mustJSON(t, want))
	}
}

func TestLegacyGroup(t *testing.T) {
	in := metav1.APIGroup{
		TypeMeta:         metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
		Name:             "cluster.hypershift.openshift.io",
		Versions:         []metav1.GroupVersionForDiscovery{gv("cluster.hypershift.openshift.io", "v1beta2"), gv("cluster.hypershift.openshift.io", "v1beta1")},
		PreferredVersion: gv("cluster.hypershift.openshift.io", "v1beta2"),
	}
	out, err := New(routestesting.Table()).Rewrite(mustJSON(t, in))
	if err != nil {
		t.Fatal(err)
	}
	var got metav1.APIGroup
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	want := metav1.APIGroup{
		TypeMeta:         in.TypeMeta,
		Name:             "cluster.x-k8s.io",
		Versions:         []metav1.GroupVersionForDiscovery{gv("cluster.x-k8s.io", "v1beta2"), gv("cluster.x-k8s.io", "v1beta1")},
		PreferredVersion: gv("cluster.x-k8s.io", "v1beta2"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %s\nwant %s", out, mustJSON(t, want))
	}
}

func TestLegacyResourceList(t *testing.T) {
	in := metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: "cluster.hypershift.openshift.io/v1beta2",
		APIResources: []metav1.APIResource{
			{Name: "machines", SingularName: "machine", Namespaced: true, Kind: "Machine", Verbs: metav1.Verbs{"get", "list"},
				ShortNames: []string{"hsma"}, Categories: []string{"hypershift-cluster-api"},
				StorageVersionHash: StorageVersionHash("cluster.hypershift.openshift.io", "v1beta1", "Machine")},
			{Name: "machines/status", Namespaced: true, Kind: "Machine", Verbs: metav1.Verbs{"get", "patch", "update"}},
			{Name: "machines/scale", Namespaced: true, Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: metav1.Verbs{"get", "patch", "update"}},
			{Name: "widgets", Namespaced: true, Kind: "Widget", Verbs: metav1.Verbs{"get"}},
		},
	}
	want := in
	want.GroupVersion = "cluster.x-k8s.io/v1beta2"
	want.APIResources = append([]metav1.APIResource(nil), in.APIResources[:3]...)
	want.APIResources[0].ShortNames, want.APIResources[0].Categories = []string{"ma"}, []string{"cluster-api"}
	// The private CRD stores v1beta1: the hash is of the upstream group at v1beta1.
	want.APIResources[0].StorageVersionHash = StorageVersionHash("cluster.x-k8s.io", "v1beta1", "Machine")

	out, err := New(routestesting.Table()).Rewrite(mustJSON(t, in))
	if err != nil {
		t.Fatal(err)
	}
	var got metav1.APIResourceList
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %s\nwant %s", out, mustJSON(t, want))
	}
}

// v2Input is an aggregated /apis document of a backend that serves both the real CAPI group and the
// private one.
func v2Input() apidiscoveryv2.APIGroupDiscoveryList {
	resource := func(group, version, name, kind string, shortNames, categories []string) apidiscoveryv2.APIResourceDiscovery {
		return apidiscoveryv2.APIResourceDiscovery{
			Resource: name, SingularResource: name[:len(name)-1], Scope: apidiscoveryv2.ScopeNamespace,
			ResponseKind: &metav1.GroupVersionKind{Group: group, Version: version, Kind: kind},
			Verbs:        []string{"get", "list", "watch"}, ShortNames: shortNames, Categories: categories,
			Subresources: []apidiscoveryv2.APISubresourceDiscovery{
				{Subresource: "status", ResponseKind: &metav1.GroupVersionKind{Group: group, Version: version, Kind: kind}, Verbs: []string{"get", "patch"}},
				{Subresource: "scale", ResponseKind: &metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"},
					AcceptedTypes: []metav1.GroupVersionKind{{Group: "autoscaling", Version: "v1", Kind: "Scale"}}, Verbs: []string{"get"}},
			},
		}
	}
	group := func(name string, versions ...apidiscoveryv2.APIVersionDiscovery) apidiscoveryv2.APIGroupDiscovery {
		return apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: name}, Versions: versions}
	}
	version := func(v string, resources ...apidiscoveryv2.APIResourceDiscovery) apidiscoveryv2.APIVersionDiscovery {
		return apidiscoveryv2.APIVersionDiscovery{Version: v, Resources: resources, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
	}
	const capi, private, privateInfra = "cluster.x-k8s.io", "cluster.hypershift.openshift.io", "infrastructure.cluster.hypershift.openshift.io"
	return apidiscoveryv2.APIGroupDiscoveryList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"},
		Items: []apidiscoveryv2.APIGroupDiscovery{
			group("apps", version("v1", resource("apps", "v1", "deployments", "Deployment", []string{"deploy"}, []string{"all"}))),
			group(capi, version("v1beta2", resource(capi, "v1beta2", "machines", "Machine", []string{"ma"}, []string{"cluster-api"}),
				resource(capi, "v1beta2", "clusters", "Cluster", []string{"cl"}, []string{"cluster-api"}))),
			group(private,
				version("v1beta2",
					resource(private, "v1beta2", "machines", "Machine", []string{"hsma"}, []string{"hypershift-cluster-api"}),
					resource(private, "v1beta2", "widgets", "Widget", nil, nil)),
				version("v1beta1", resource(private, "v1beta1", "machines", "Machine", []string{"hsma"}, []string{"hypershift-cluster-api"})),
				version("v1alpha4", resource(private, "v1alpha4", "machines", "Machine", nil, nil))),
			group(privateInfra, version("v1beta2", resource(privateInfra, "v1beta2", "awsmachines", "AWSMachine", nil, []string{"hypershift-cluster-api"}))),
			group("ipam.cluster.hypershift.openshift.io", version("v1beta2", resource("ipam.cluster.hypershift.openshift.io", "v1beta2", "ipaddresses", "IPAddress", nil, nil))),
		},
	}
}

// checkV2 checks the rewritten v2Input.
func checkV2(t *testing.T, got apidiscoveryv2.APIGroupDiscoveryList) {
	t.Helper()
	var names []string
	for _, g := range got.Items {
		names = append(names, g.Name)
	}
	if want := []string{"apps", "cluster.x-k8s.io", "infrastructure.cluster.x-k8s.io"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("groups %v, want %v", names, want)
	}
	in := v2Input()
	if !reflect.DeepEqual(got.Items[0], in.Items[0]) {
		t.Errorf("apps changed: %+v", got.Items[0])
	}
	capi := got.Items[1]
	if len(capi.Versions) != 2 || capi.Versions[0].Version != "v1beta2" || capi.Versions[1].Version != "v1beta1" {
		t.Fatalf("cluster.x-k8s.io versions: %+v", capi.Versions)
	}
	if len(capi.Versions[0].Resources) != 1 {
		t.Fatalf("cluster.x-k8s.io/v1beta2 resources: %+v (the native clusters and the unrouted widgets must be gone)", capi.Versions[0].Resources)
	}
	m := capi.Versions[0].Resources[0]
	if m.Resource != "machines" || *m.ResponseKind != (metav1.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Machine"}) {
		t.Errorf("machines: %+v", m)
	}
	if !reflect.DeepEqual(m.ShortNames, []string{"ma"}) || !reflect.DeepEqual(m.Categories, []string{"cluster-api"}) {
		t.Errorf("machines shortNames %v categories %v", m.ShortNames, m.Categories)
	}
	if m.Subresources[0].ResponseKind.Group != "cluster.x-k8s.io" || m.Subresources[1].ResponseKind.Group != "autoscaling" ||
		m.Subresources[1].AcceptedTypes[0].Group != "autoscaling" {
		t.Errorf("machines subresources: %+v", m.Subresources)
	}
	if a := got.Items[2].Versions[0].Resources[0]; a.ResponseKind.Group != "infrastructure.cluster.x-k8s.io" || a.ShortNames != nil ||
		!reflect.DeepEqual(a.Categories, []string{"cluster-api"}) {
		t.Errorf("awsmachines: %+v", a)
	}
}

func TestAggregatedV2(t *testing.T) {
	in := v2Input()
	out, err := New(routestesting.Table()).Rewrite(mustJSON(t, in))
	if err != nil {
		t.Fatal(err)
	}
	var got apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.APIVersion != "apidiscovery.k8s.io/v2" || got.Kind != "APIGroupDiscoveryList" {
		t.Errorf("type %v", got.TypeMeta)
	}
	checkV2(t, got)
}

func TestAggregatedV2beta1(t *testing.T) {
	in := v2ToV2beta1(ptr(v2Input()))
	in.APIVersion = "apidiscovery.k8s.io/v2beta1"
	out, err := New(routestesting.Table()).Rewrite(mustJSON(t, in))
	if err != nil {
		t.Fatal(err)
	}
	var got apidiscoveryv2beta1.APIGroupDiscoveryList
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.APIVersion != "apidiscovery.k8s.io/v2beta1" {
		t.Errorf("apiVersion %q", got.APIVersion)
	}
	checkV2(t, *v2beta1ToV2(&got))
}

func ptr[T any](v T) *T { return &v }

// TestV2beta1RoundTrip fills every field of a v2beta1 document at random: a field added upstream and not
// copied by the converters makes it fail.
func TestV2beta1RoundTrip(t *testing.T) {
	f := randfill.NewWithSeed(1).NilChance(0.2).NumElements(1, 3)
	for i := 0; i < 50; i++ {
		var in apidiscoveryv2beta1.APIGroupDiscoveryList
		f.Fill(&in)
		if got := v2ToV2beta1(v2beta1ToV2(&in)); !reflect.DeepEqual(*got, in) {
			t.Fatalf("round trip changed the document:\n got %+v\nwant %+v", *got, in)
		}
	}
}

func TestRewriteOther(t *testing.T) {
	rw := New(routestesting.Table())
	in := []byte(`{"kind":"APIVersions","versions":["v1"]}`)
	if out, err := rw.Rewrite(in); err != nil || string(out) != string(in) {
		t.Errorf("Rewrite(APIVersions) = %s, %v; want it unchanged", out, err)
	}
	if _, err := rw.Rewrite([]byte(`{"kind":"APIGroupList","apiVersion":"v1","groups":[`)); err == nil {
		t.Error("malformed document: want an error")
	}
	if _, err := rw.Rewrite([]byte(`{"kind":"APIGroupList","apiVersion":"v1","groups":{}}`)); err == nil {
		t.Error("ill-typed document: want an error")
	}
}

func TestRequestResponseHeaders(t *testing.T) {
	h := http.Header{}
	h.Set("If-None-Match", `"abc"`)
	h.Set("Accept", "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"+
		"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json")
	Request(h)
	if h.Get("If-None-Match") != "" {
		t.Error("If-None-Match kept")
	}
	if want := "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"; h.Get("Accept") != want {
		t.Errorf("Accept %q, want %q", h.Get("Accept"), want)
	}
	resp := http.Header{"Etag": {`"abc"`}}
	Response(resp)
	if resp.Get("ETag") != "" {
		t.Error("ETag kept")
	}
}

func TestStorageVersionHash(t *testing.T) {
	// Equal to the apiserver's own function, which this copies.
	for _, gvk := range [][3]string{{"cluster.x-k8s.io", "v1beta2", "Machine"}, {"", "v1", "Pod"}, {"a.b", "v1alpha1", "X"}} {
		if got, want := StorageVersionHash(gvk[0], gvk[1], gvk[2]), endpointsdiscovery.StorageVersionHash(gvk[0], gvk[1], gvk[2]); got != want {
			t.Errorf("StorageVersionHash%q = %q, want %q", gvk, got, want)
		}
	}

	rw := New(routestesting.Table())
	route, _ := routestesting.Table().ByUpstream(routestesting.MachinesV1beta1)
	for _, tc := range []struct{ backend, want string }{
		{"", ""},
		{StorageVersionHash("cluster.hypershift.openshift.io", "v1beta2", "Machine"), StorageVersionHash("cluster.x-k8s.io", "v1beta2", "Machine")},
		{StorageVersionHash("cluster.hypershift.openshift.io", "v1beta1", "Machine"), StorageVersionHash("cluster.x-k8s.io", "v1beta1", "Machine")},
		// A storage version the table does not know: upstream's storage version, never the private group.
		{StorageVersionHash("cluster.hypershift.openshift.io", "v1alpha4", "Machine"), StorageVersionHash("cluster.x-k8s.io", storageVersion(t), "Machine")},
	} {
		if got := rw.storageVersionHash(route, tc.backend); got != tc.want {
			t.Errorf("backend %q: got %q, want %q", tc.backend, got, tc.want)
		}
	}
}

// storageVersion is the storage version of the fake Machine routes.
func storageVersion(t *testing.T) string {
	for _, r := range routestesting.Table().Routes() {
		if r.Kind == "Machine" && r.Storage {
			return r.Upstream.Version
		}
	}
	t.Fatal("no storage version of Machine")
	return ""
}

func TestETag(t *testing.T) {
	v2 := v2Input()
	data := mustJSON(t, v2)
	etag, ok := ETag(data)
	if !ok || len(etag) != 2+128 || etag[0] != '"' || strings.ToUpper(etag) != etag {
		t.Fatalf("ETag = %s, %v", etag, ok)
	}
	// kube-apiserver hashes the document without its TypeMeta, so that v2beta1 has the same ETag.
	bare := v2
	bare.TypeMeta = metav1.TypeMeta{}
	serialized := mustJSON(t, bare)
	if want := fmt.Sprintf("%q", fmt.Sprintf("%X", sha512.Sum512(serialized))); etag != want {
		t.Errorf("ETag = %s, want %s", etag, want)
	}
	beta := v2ToV2beta1(&v2)
	beta.APIVersion = "apidiscovery.k8s.io/v2beta1"
	if got, ok := ETag(mustJSON(t, beta)); !ok || got != etag {
		t.Errorf("v2beta1 ETag = %s, want the v2 one %s", got, etag)
	}
	v2.Items = v2.Items[1:]
	if got, _ := ETag(mustJSON(t, v2)); got == etag {
		t.Error("another document has the same ETag")
	}
	for _, doc := range []string{`{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`, `{`, `{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","items":{}}`} {
		if got, ok := ETag([]byte(doc)); ok {
			t.Errorf("ETag(%s) = %s", doc, got)
		}
	}

	h := http.Header{}
	if NotModified(h, etag) {
		t.Error("no If-None-Match is not modified")
	}
	h.Set("If-None-Match", etag)
	if !NotModified(h, etag) {
		t.Error("the same ETag is modified")
	}
	h.Set("If-None-Match", "W/"+etag)
	if NotModified(h, etag) {
		t.Error("a weak validator matched: kube-apiserver compares the whole value")
	}
}
