package adapt

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openshift/hypershift-capi-proxy/proxy/convert"
	"github.com/openshift/hypershift-capi-proxy/proxy/discovery"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/inprocess"
	"github.com/openshift/hypershift-capi-proxy/proxy/negotiate"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

// backendDoc is the proxy's aggregated discovery on an older backend: machinepools only at v1beta1,
// machines at both versions.
func backendDoc() *apidiscoveryv2.APIGroupDiscoveryList {
	gvk := func(v, k string) *metav1.GroupVersionKind {
		return &metav1.GroupVersionKind{Group: "cluster.x-k8s.io", Version: v, Kind: k}
	}
	resource := func(v, plural, kind string) apidiscoveryv2.APIResourceDiscovery {
		return apidiscoveryv2.APIResourceDiscovery{Resource: plural, ResponseKind: gvk(v, kind), Scope: apidiscoveryv2.ScopeNamespace,
			SingularResource: strings.ToLower(kind), Verbs: []string{"get", "list"}, ShortNames: []string{"mp"}, Categories: []string{"cluster-api"},
			Subresources: []apidiscoveryv2.APISubresourceDiscovery{
				{Subresource: "status", ResponseKind: gvk(v, kind), Verbs: []string{"get"}},
				{Subresource: "scale", ResponseKind: &metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, Verbs: []string{"get"}},
			}}
	}
	return &apidiscoveryv2.APIGroupDiscoveryList{
		TypeMeta: metav1.TypeMeta{APIVersion: "apidiscovery.k8s.io/v2", Kind: "APIGroupDiscoveryList"},
		Items: []apidiscoveryv2.APIGroupDiscovery{
			{ObjectMeta: metav1.ObjectMeta{Name: "apps"}, Versions: []apidiscoveryv2.APIVersionDiscovery{{Version: "v1"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "cluster.x-k8s.io"}, Versions: []apidiscoveryv2.APIVersionDiscovery{
				{Version: "v1beta2", Resources: []apidiscoveryv2.APIResourceDiscovery{resource("v1beta2", "machines", "Machine")}},
				{Version: "v1beta1", Resources: []apidiscoveryv2.APIResourceDiscovery{
					resource("v1beta1", "machinepools", "MachinePool"), resource("v1beta1", "machines", "Machine")}},
			}},
		},
	}
}

const storedMachinePool = `{"apiVersion":"cluster.x-k8s.io/v1beta1","kind":"MachinePool","metadata":{"name":"mp1","namespace":"ns","resourceVersion":"7",
"annotations":{"cluster.x-k8s.io/conversion-data":"{\"spec\":{\"clusterName\":\"c1\",\"template\":{\"spec\":{\"clusterName\":\"c1\",\"bootstrap\":{\"dataSecretName\":\"s\"},\"infrastructureRef\":{\"apiGroup\":\"infrastructure.cluster.x-k8s.io\",\"kind\":\"AWSMachinePool\",\"name\":\"mp1\"},\"minReadySeconds\":0}}}}"}},
"spec":{"clusterName":"c1","replicas":2,"template":{"spec":{"clusterName":"c1","bootstrap":{"dataSecretName":"s"},
"infrastructureRef":{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta2","kind":"AWSMachinePool","name":"mp1","namespace":"ns"}}}}}`

// fakeProxy stands for the translating proxy behind the Adapter, in upstream terms: it serves backendDoc
// at /apis and storedMachinePool at v1beta1, and records the paths it was asked for.
type fakeProxy struct {
	discoveries atomic.Int32
	paths       []string
}

func (f *fakeProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.paths = append(f.paths, r.Method+" "+r.URL.Path)
	switch r.URL.Path {
	case "/apis":
		f.discoveries.Add(1)
		w.Header().Set("Content-Type", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
		_ = json.NewEncoder(w).Encode(backendDoc())
	case "/apis/cluster.x-k8s.io/v1beta1/namespaces/ns/machinepools":
		// kube-apiserver names the Table shape in the body only, never in Content-Type.
		w.Header().Set("Content-Type", "application/json")
		if negotiate.AsksTable(r.Header.Get("Accept")) { // kube-apiserver's own negotiation
			_, _ = w.Write([]byte(`{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"7"},` +
				`"columnDefinitions":[{"name":"Name","type":"string"}],"rows":[{"cells":["mp1"],"object":` + storedMachinePool + `}]}`))
			return
		}
		_, _ = w.Write([]byte(`{"kind":"MachinePoolList","apiVersion":"cluster.x-k8s.io/v1beta1","metadata":{"resourceVersion":"7"},"items":[` + storedMachinePool + `]}`))
	case "/apis/cluster.x-k8s.io/v1beta1/namespaces/ns/machinepools/mp1":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(storedMachinePool))
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"details":{}}`))
	}
}

func newAdapter(t *testing.T, next http.Handler) *Adapter {
	t.Helper()
	c, err := convert.New(translate.NewTable(routes.Routes), routes.APIVersionGetterSetters)
	if err != nil {
		t.Fatal(err)
	}
	return New(next, c, Options{DiscoveryTTL: time.Hour})
}

func TestGetConvertsInProcess(t *testing.T) {
	f := &fakeProxy{}
	a := newAdapter(t, f)
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/machinepools/mp1", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	var got struct {
		APIVersion string `json:"apiVersion"`
		Metadata   struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			Template struct {
				Spec struct {
					InfrastructureRef map[string]string `json:"infrastructureRef"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	ref := got.Spec.Template.Spec.InfrastructureRef
	if got.APIVersion != "cluster.x-k8s.io/v1beta2" || ref["apiGroup"] != "infrastructure.cluster.x-k8s.io" || ref["apiVersion"] != "" {
		t.Errorf("converted: %s", rec.Body)
	}
	if len(got.Metadata.Annotations) != 0 {
		t.Errorf("the conversion data was not used up: %s", rec.Body)
	}
	if want := "GET /apis/cluster.x-k8s.io/v1beta1/namespaces/ns/machinepools/mp1"; f.paths[len(f.paths)-1] != want {
		t.Errorf("asked the proxy for %v, want %s last", f.paths, want)
	}

	// Served versions pass through untouched, and discovery was read once.
	rec = httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/apis/cluster.x-k8s.io/v1beta1/namespaces/ns/machinepools/mp1", nil))
	if rec.Body.String() != storedMachinePool {
		t.Errorf("a served version was changed: %s", rec.Body)
	}
	if n := f.discoveries.Load(); n != 1 {
		t.Errorf("discovery read %d times", n)
	}
}

func TestServerSideApplyRefused(t *testing.T) {
	a := newAdapter(t, &fakeProxy{})
	req := httptest.NewRequest(http.MethodPatch, "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/machinepools/mp1?fieldManager=x",
		strings.NewReader(`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachinePool"}`))
	req.Header.Set("Content-Type", "application/apply-patch+yaml")
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	var s metav1.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil || rec.Code != http.StatusUnsupportedMediaType ||
		!strings.Contains(s.Message, "server-side apply") || !strings.Contains(s.Message, "managedFields") {
		t.Errorf("%d %s", rec.Code, rec.Body)
	}
}

func TestDiscoveryListsConvertedVersions(t *testing.T) {
	a := newAdapter(t, &fakeProxy{})
	l := backendDoc()
	if !a.augmentAggregated(l, a.extras(index(l))) {
		t.Fatal("nothing added")
	}
	v1beta2 := l.Items[1].Versions[0]
	if v1beta2.Version != "v1beta2" || len(v1beta2.Resources) != 2 || v1beta2.Resources[0].Resource != "machinepools" {
		t.Fatalf("v1beta2: %+v", v1beta2)
	}
	mp := v1beta2.Resources[0]
	if mp.ResponseKind.Version != "v1beta2" || mp.Subresources[0].ResponseKind.Version != "v1beta2" ||
		*mp.Subresources[1].ResponseKind != (metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}) {
		t.Errorf("machinepools at v1beta2: %+v", mp)
	}
	if len(l.Items[1].Versions[1].Resources) != 2 {
		t.Errorf("v1beta1 changed: %+v", l.Items[1].Versions[1])
	}

	g := &metav1.APIGroup{Name: "cluster.x-k8s.io", Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: "cluster.x-k8s.io/v1beta1", Version: "v1beta1"}},
		PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "cluster.x-k8s.io/v1beta1", Version: "v1beta1"}}
	extras := a.extras(map[schema.GroupResource]map[string]apidiscoveryv2.APIResourceDiscovery{
		{Group: "cluster.x-k8s.io", Resource: "machinepools"}: {"v1beta1": l.Items[1].Versions[1].Resources[0]}})
	if !addLegacyVersions(g, extras["cluster.x-k8s.io"]) || len(g.Versions) != 2 || g.PreferredVersion.Version != "v1beta2" {
		t.Errorf("legacy group: %+v", g)
	}
	rl := &metav1.APIResourceList{GroupVersion: "cluster.x-k8s.io/v1beta2"}
	addLegacyResources(rl, "cluster.x-k8s.io", extras["cluster.x-k8s.io"]["v1beta2"], a.storageVersionHash(
		map[schema.GroupResource]map[string]apidiscoveryv2.APIResourceDiscovery{{Group: "cluster.x-k8s.io", Resource: "machinepools"}: {"v1beta1": {}}}))
	// The backend serves (and so stores) v1beta1 only.
	if want := discovery.StorageVersionHash("cluster.x-k8s.io", "v1beta1", "MachinePool"); rl.APIResources[0].StorageVersionHash != want {
		t.Errorf("storageVersionHash %q, want %q", rl.APIResources[0].StorageVersionHash, want)
	}
	var got []string
	for _, r := range rl.APIResources {
		got = append(got, r.Name+":"+r.Kind+":"+r.Group)
	}
	if strings.Join(got, ",") != "machinepools:MachinePool:,machinepools/status:MachinePool:,machinepools/scale:Scale:autoscaling" {
		t.Errorf("legacy resources: %v", got)
	}
}

func TestPatcher(t *testing.T) {
	doc := []byte(`{"spec":{"replicas":1}}`)
	for _, tc := range []struct {
		mediaType, patch string
		want             string
		code             int32
	}{
		{"application/merge-patch+json", `{"spec":{"replicas":2}}`, `{"spec":{"replicas":2}}`, 0},
		{"application/json-patch+json", `[{"op":"replace","path":"/spec/replicas","value":3}]`, `{"spec":{"replicas":3}}`, 0},
		{"application/json-patch+json", `[{"op":"test","path":"/spec/replicas","value":9}]`, "", 422},
		{"application/json-patch+json", `{`, "", 400},
		{"application/merge-patch+json", `[`, "", 400},
	} {
		apply, err := patcher(tc.mediaType, []byte(tc.patch))
		var out []byte
		if err == nil {
			out, err = apply(doc)
		}
		if tc.code != 0 {
			var s apierrors.APIStatus
			if !errors.As(err, &s) || s.Status().Code != tc.code {
				t.Errorf("%s %s: %v, want %d", tc.mediaType, tc.patch, err, tc.code)
			}
			continue
		}
		if err != nil || string(out) != tc.want {
			t.Errorf("%s %s: %s %v", tc.mediaType, tc.patch, out, err)
		}
	}
}

func TestStatusOnto(t *testing.T) {
	current := []byte(`{"metadata":{"name":"a","resourceVersion":"5"},"spec":{"x":1},"status":{"old":true}}`)
	obj := []byte(`{"metadata":{"name":"a","resourceVersion":"4"},"spec":{"x":2},"status":{"new":true}}`)
	out, err := statusOnto(current, obj)
	if err != nil || string(out) != `{"metadata":{"name":"a","resourceVersion":"4"},"spec":{"x":1},"status":{"new":true}}` {
		t.Errorf("statusOnto: %s %v", out, err)
	}
	out, err = withMember(obj, current, "status")
	if err != nil || string(out) != `{"metadata":{"name":"a","resourceVersion":"4"},"spec":{"x":2},"status":{"old":true}}` {
		t.Errorf("withMember: %s %v", out, err)
	}
	out, err = withMember(obj, nil, "status")
	if err != nil || strings.Contains(string(out), "status") {
		t.Errorf("withMember without: %s %v", out, err)
	}
}

func TestTableRows(t *testing.T) {
	table := []byte(`{"kind":"Table","apiVersion":"meta.k8s.io/v1","rows":[{"cells":["a"],"object":{"kind":"X"}},{"cells":["b"]}]}`)
	out, err := tableRows(table, func(obj []byte) ([]byte, error) { return []byte(`{"kind":"Y"}`), nil })
	if err != nil || !strings.Contains(string(out), `"object":{"kind":"Y"}`) || strings.Count(string(out), "object") != 1 {
		t.Errorf("%s %v", out, err)
	}
}

func TestNotFoundInvalidates(t *testing.T) {
	s := &served{ttl: time.Hour}
	s.observe(backendDoc())
	write := func(body string) {
		w := &notFoundSniffer{ResponseWriter: httptest.NewRecorder(), served: s}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(body))
	}
	s.attempted = time.Now().Add(-time.Minute)
	write(`{"kind":"Status","apiVersion":"v1","code":404,"details":{"name":"mp1","kind":"machinepools"}}`)
	if s.attempted.IsZero() {
		t.Error("a missing object invalidated the view")
	}
	write(`{"kind":"Status","apiVersion":"v1","code":404,"details":{}}`)
	if !s.attempted.IsZero() {
		t.Error("a missing resource did not invalidate the view")
	}
}

func TestServedRemembersFailures(t *testing.T) {
	var calls atomic.Int32
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
	})
	s := &served{next: next, ttl: time.Hour}
	req := httptest.NewRequest(http.MethodGet, "/apis/cluster.x-k8s.io/v1beta2/machines", nil)
	for i := 0; i < 3; i++ {
		if _, known := s.versions(req, schema.GroupResource{Group: "cluster.x-k8s.io", Resource: "machines"}); known {
			t.Fatal("known without discovery")
		}
	}
	if calls.Load() != 1 {
		t.Errorf("discovery read %d times within the TTL", calls.Load())
	}
}

// TestUnservedVersionsAreNotAdded: CAPA's v1beta1 is in upstream's CRDs but not served, so kube-apiserver
// serving them answers it 404 and lists it nowhere; the Adapter must not serve it from v1beta2.
func TestUnservedVersionsAreNotAdded(t *testing.T) {
	gr := schema.GroupResource{Group: "infrastructure.cluster.x-k8s.io", Resource: "awsmachines"}
	route, ok := translate.NewTable(routes.Routes).ByUpstream(gr.WithVersion("v1beta1"))
	if !ok || !route.Unserved {
		t.Fatalf("the route table does not mark %s v1beta1 unserved: %+v", gr, route)
	}
	f := &fakeProxy{}
	a := newAdapter(t, f)
	view := map[schema.GroupResource]map[string]apidiscoveryv2.APIResourceDiscovery{
		gr: {"v1beta2": {Resource: "awsmachines", ResponseKind: &metav1.GroupVersionKind{Group: gr.Group, Version: "v1beta2", Kind: "AWSMachine"}}},
	}
	if extras := a.extras(view); len(extras[gr.Group]["v1beta1"]) != 0 {
		t.Errorf("discovery would list an unserved version: %+v", extras[gr.Group]["v1beta1"])
	}
	a.served.observe(&apidiscoveryv2.APIGroupDiscoveryList{Items: []apidiscoveryv2.APIGroupDiscovery{{
		ObjectMeta: metav1.ObjectMeta{Name: gr.Group},
		Versions:   []apidiscoveryv2.APIVersionDiscovery{{Version: "v1beta2", Resources: []apidiscoveryv2.APIResourceDiscovery{view[gr]["v1beta2"]}}},
	}}})
	rec := httptest.NewRecorder()
	path := "/apis/infrastructure.cluster.x-k8s.io/v1beta1/namespaces/ns/awsmachines/m1"
	a.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != http.StatusNotFound || f.paths[len(f.paths)-1] != "GET "+path {
		t.Errorf("GET of an unserved version: %d %s, the proxy was asked for %v", rec.Code, rec.Body, f.paths)
	}
}

// TestListConvertsInProcess: a list and a Table of the same collection, told apart as kube-apiserver's
// negotiation tells them apart (by Accept: its answers have the same Content-Type).
func TestListConvertsInProcess(t *testing.T) {
	a := newAdapter(t, &fakeProxy{})
	for _, tc := range []struct {
		accept, kind string
	}{
		{"", "MachinePoolList"},
		{"application/json", "MachinePoolList"},
		{"application/json;as=Table;v=v1;g=meta.k8s.io,application/json", "Table"},
		{"application/json;as=Table;v=v1;g=meta.k8s.io;q=0.5,application/json", "MachinePoolList"},
	} {
		req := httptest.NewRequest(http.MethodGet, "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/machinepools", nil)
		if tc.accept != "" {
			req.Header.Set("Accept", tc.accept)
		}
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		var got struct {
			Kind, APIVersion string
			Items            []struct{ APIVersion string }
			Rows             []struct{ Object struct{ APIVersion string } }
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != http.StatusOK || got.Kind != tc.kind {
			t.Errorf("Accept %q: %d %s %v", tc.accept, rec.Code, rec.Body, err)
			continue
		}
		var versions []string
		for _, i := range got.Items {
			versions = append(versions, i.APIVersion)
		}
		for _, r := range got.Rows {
			versions = append(versions, r.Object.APIVersion)
		}
		if len(versions) != 1 || versions[0] != "cluster.x-k8s.io/v1beta2" {
			t.Errorf("Accept %q: objects at %v: %s", tc.accept, versions, rec.Body)
		}
	}
}

// TestDiscoveryETag: the ETag of the aggregated document the Adapter writes (with the versions it adds),
// and 304 Not Modified for a client that has it, as kube-apiserver answers.
func TestDiscoveryETag(t *testing.T) {
	var ifNoneMatch []string
	f := &fakeProxy{}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ifNoneMatch = append(ifNoneMatch, r.Header.Get("If-None-Match"))
		f.ServeHTTP(w, r)
	})
	a := newAdapter(t, next)
	get := func(header ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/apis", nil)
		req.Header.Set("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
		for i := 0; i < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		return rec
	}
	rec := get()
	etag := rec.Header().Get("ETag")
	if want, ok := discovery.ETag(rec.Body.Bytes()); rec.Code != http.StatusOK || !ok || etag != want {
		t.Fatalf("%d ETag %q, want %q of the document written: %s", rec.Code, etag, want, rec.Body)
	}
	if !strings.Contains(rec.Body.String(), `"version":"v1beta2","resources":[{"resource":"machinepools"`) {
		t.Errorf("the document lacks the versions the Adapter adds: %s", rec.Body)
	}
	if rec = get("If-None-Match", etag); rec.Code != http.StatusNotModified || rec.Body.Len() != 0 || rec.Header().Get("ETag") != etag ||
		rec.Header().Get("Content-Type") != "" {
		t.Errorf("If-None-Match: %d %v %q", rec.Code, rec.Header(), rec.Body)
	}
	if rec = get("If-None-Match", `"other"`); rec.Code != http.StatusOK || rec.Header().Get("ETag") != etag {
		t.Errorf("another If-None-Match: %d %v", rec.Code, rec.Header())
	}
	for _, v := range ifNoneMatch {
		if v != "" {
			t.Errorf("the proxy behind was asked with If-None-Match %q", v)
		}
	}
	// Legacy discovery has no ETag, as kube-apiserver's has none.
	req := httptest.NewRequest(http.MethodGet, "/apis/cluster.x-k8s.io/v1beta2", nil)
	rec = httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	if rec.Header().Get("ETag") != "" {
		t.Errorf("legacy discovery: %d %v", rec.Code, rec.Header())
	}
}

// TestWriteBodyGzip: answers written whole are gzip'ed as kube-apiserver gzips them: above 128 KiB, for a
// client that accepts gzip.
func TestWriteBodyGzip(t *testing.T) {
	large := []byte(`{"kind":"Status","message":"` + strings.Repeat("x", gzipThreshold) + `"}`)
	for _, tc := range []struct {
		acceptEncoding string
		body           []byte
		gzipped        bool
	}{
		{"gzip", large, true},
		{"deflate, gzip", large, true},
		{"", large, false},
		{"gzip", large[:gzipThreshold], false},
	} {
		req := httptest.NewRequest(http.MethodGet, "/apis", nil)
		if tc.acceptEncoding != "" {
			req.Header.Set("Accept-Encoding", tc.acceptEncoding)
		}
		rec := httptest.NewRecorder()
		writeBody(gzipping(rec, req), http.Header{"Content-Type": {"application/json"}}, http.StatusOK, tc.body)
		got := rec.Body.Bytes()
		if tc.gzipped {
			if rec.Header().Get("Content-Encoding") != "gzip" || rec.Header().Get("Vary") != "Accept-Encoding" {
				t.Errorf("%q, %d bytes: headers %v", tc.acceptEncoding, len(tc.body), rec.Header())
				continue
			}
			zr, err := gzip.NewReader(bytes.NewReader(got))
			if err != nil {
				t.Fatal(err)
			}
			if got, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		} else if rec.Header().Get("Content-Encoding") != "" {
			t.Errorf("%q, %d bytes: compressed", tc.acceptEncoding, len(tc.body))
		}
		if !bytes.Equal(got, tc.body) {
			t.Errorf("%q, %d bytes: the body changed", tc.acceptEncoding, len(tc.body))
		}
	}
}

// breakingProxy is fakeProxy, but it breaks off its answers to GETs of mp1 after their first bytes, as
// the proxy's ReverseProxy does when the backend's body fails.
type breakingProxy struct{ fakeProxy }

func (b *breakingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/machinepools/mp1") {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(storedMachinePool[:10]))
		panic(http.ErrAbortHandler)
	}
	b.fakeProxy.ServeHTTP(w, r)
}

// TestBrokenOffAnswerAbortsTheClients: when the proxy breaks off an answer the Adapter needs whole (the
// object a patch applies to, a single object it converts), the client's response is aborted
// (inprocess.Abort, carried out by package server's outermost stage), with nothing written: never a
// Status or a half object taken for an answer.
func TestBrokenOffAnswerAbortsTheClients(t *testing.T) {
	const path = "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/machinepools/mp1"
	for name, newRequest := range map[string]func() *http.Request{
		"get": func() *http.Request { return httptest.NewRequest(http.MethodGet, path, nil) },
		"patch": func() *http.Request {
			r := httptest.NewRequest(http.MethodPatch, path, strings.NewReader(`{"spec":{"replicas":3}}`))
			r.Header.Set("Content-Type", "application/merge-patch+json")
			return r
		},
	} {
		t.Run(name, func(t *testing.T) {
			a := newAdapter(t, &breakingProxy{})
			r, aborted := inprocess.Abortable(newRequest())
			rec := httptest.NewRecorder()
			a.ServeHTTP(rec, r)
			if err := aborted(); !errors.Is(err, inprocess.ErrBrokenOff) {
				t.Errorf("aborted with %v, want inprocess.ErrBrokenOff", err)
			}
			if rec.Body.Len() > 0 || len(rec.Header()) > 0 {
				t.Errorf("wrote %v %q before the abort", rec.Header(), rec.Body)
			}
		})
	}
}
