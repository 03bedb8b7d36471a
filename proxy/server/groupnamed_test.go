package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/backendtesting"
)

const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

// crdList is a backend's list of CRDs of the given names.
func crdList(names ...string) string {
	items := make([]string, len(names))
	for i, n := range names {
		items[i] = `{"metadata":{"name":"` + n + `"}}`
	}
	return `{"kind":"CustomResourceDefinitionList","apiVersion":"apiextensions.k8s.io/v1","metadata":{"resourceVersion":"7"},"items":[` + strings.Join(items, ",") + `]}`
}

// TestCRDDeleteCollection follows a deletecollection of CRDs to the backend: a deletecollection that
// selects nothing (authorization and validation), a list, then one deletecollection narrowed to each
// CRD the client sees, every one with the client's credentials, query and DeleteOptions.
func TestCRDDeleteCollection(t *testing.T) {
	for _, tc := range []struct {
		name, query string
		listed      []string
		// wantListQuery is the fieldSelector of the list; wantDeleted the names deleted one by one.
		wantSelector string
		wantDeleted  []string
		wantCode     int
		wantAnswer   string
	}{
		{"hidden CRDs are not deleted", "labelSelector=a%3Db",
			[]string{"widgets.example.com", "gadgets.cluster.x-k8s.io", "gizmos.cluster.hypershift.openshift.io", "pods.example.org"},
			"", []string{"widgets.example.com", "pods.example.org"}, http.StatusOK, crdList("widgets.example.com", "pods.example.org")},
		{"a private CRD is refused", "labelSelector=a%3Db",
			[]string{"widgets.example.com", "machines.cluster.hypershift.openshift.io"},
			"", nil, http.StatusForbidden, ""},
		{"the upstream name of a private CRD selects it", "fieldSelector=metadata.name%3Dmachines.cluster.x-k8s.io",
			[]string{"machines.cluster.hypershift.openshift.io"},
			"metadata.name=machines.cluster.hypershift.openshift.io", nil, http.StatusForbidden, ""},
		{"a hidden name selects nothing", "fieldSelector=metadata.name%3Dmachines.cluster.hypershift.openshift.io",
			nil, "metadata.name=", nil, http.StatusOK, crdList()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if r.Method == http.MethodGet {
					_, _ = w.Write([]byte(crdList(tc.listed...)))
					return
				}
				_, _ = w.Write([]byte(crdList()))
			})
			p := newProxy(t, b.URL)
			resp, data := backendtesting.Do(t, http.MethodDelete, p.URL+crds+"?"+tc.query+"&limit=5&watch=1", `{"propagationPolicy":"Foreground"}`,
				http.Header{"Authorization": {"Bearer client"}, "Content-Type": {"application/json"}})
			if resp.StatusCode != tc.wantCode {
				t.Fatalf("deletecollection: %d %s, want %d", resp.StatusCode, data, tc.wantCode)
			}
			if tc.wantAnswer != "" {
				backendtesting.EqualJSON(t, data, tc.wantAnswer)
			}

			requests := b.Requests()
			var deleted []string
			for i, r := range requests {
				if r.Header.Get("Authorization") != "Bearer client" {
					t.Errorf("request %d: Authorization %q", i, r.Header.Get("Authorization"))
				}
				q, _ := url.ParseQuery(r.RawQuery)
				selector := q.Get("fieldSelector")
				switch {
				case i == 0:
					// The no-op deletecollection, the client's query but the narrowed selector.
					if r.Method != http.MethodDelete || !strings.HasSuffix(selector, "metadata.name=") || q.Get("limit") != "5" ||
						string(r.Body) != `{"propagationPolicy":"Foreground"}` {
						t.Errorf("first request: %s %s %s, want a deletecollection selecting nothing", r.Method, r.RawQuery, r.Body)
					}
				case i == 1:
					if r.Method != http.MethodGet || selector != tc.wantSelector || q.Get("limit") != "5" || q.Has("watch") || len(r.Body) != 0 {
						t.Errorf("second request: %s %s, want the list, selector %q", r.Method, r.RawQuery, tc.wantSelector)
					}
				default:
					// A deletecollection of one name: the client's selectors ANDed with metadata.name=<name>.
					at := strings.LastIndex(selector, "metadata.name=")
					if r.Method != http.MethodDelete || at < 0 || q.Get("labelSelector") != "a=b" || q.Has("limit") || q.Has("watch") ||
						string(r.Body) != `{"propagationPolicy":"Foreground"}` {
						t.Errorf("request %d: %s %s %s, want a deletecollection of one name", i, r.Method, r.RawQuery, r.Body)
						continue
					}
					deleted = append(deleted, selector[at+len("metadata.name="):])
				}
			}
			if strings.Join(deleted, ",") != strings.Join(tc.wantDeleted, ",") {
				t.Errorf("deleted %v, want %v", deleted, tc.wantDeleted)
			}
		})
	}

	t.Run("the backend's refusal is the answer", func(t *testing.T) {
		b := forbidding(t, func(*http.Request) string {
			return `customresourcedefinitions.apiextensions.k8s.io is forbidden: User \"alice\" cannot deletecollection resource \"customresourcedefinitions\"`
		})
		p := newProxy(t, b.URL)
		resp, data := backendtesting.Do(t, http.MethodDelete, p.URL+crds, "", nil)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(data), "alice") || b.Count() != 1 {
			t.Errorf("deletecollection: %d %s after %d backend requests, want the backend's 403 after one", resp.StatusCode, data, b.Count())
		}
	})
}

// TestCRDPrivateNames covers requests naming a private CRD or a hidden one: the proxy answers as for a
// CRD that does not exist, after the backend authorized the client's verb on a request that cannot change
// anything (a GET, or a body of a type no apiserver decodes); watches see nothing.
func TestCRDPrivateNames(t *testing.T) {
	var forbid atomic.Bool
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case forbid.Load():
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"Forbidden","code":403,` +
				`"message":"customresourcedefinitions.apiextensions.k8s.io \"machines.cluster.hypershift.openshift.io\" is forbidden: User \"alice\" cannot get"}`))
		case r.Method == http.MethodGet:
			_, _ = w.Write([]byte(`{"kind":"CustomResourceDefinition","metadata":{"name":"machines.cluster.hypershift.openshift.io"}}`))
		default:
			w.WriteHeader(http.StatusUnsupportedMediaType)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"UnsupportedMediaType","code":415}`))
		}
	})
	p := newProxy(t, b.URL)
	for _, name := range []string{"machines.cluster.hypershift.openshift.io", "widgets.cluster.hypershift.openshift.io", "widgets.cluster.x-k8s.io"} {
		for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			resp, data := backendtesting.Do(t, method, p.URL+crds+"/"+name, `{}`, http.Header{"Content-Type": {"application/merge-patch+json"}})
			if s := backendtesting.Status(t, data); resp.StatusCode != http.StatusNotFound || s.Details == nil || s.Details.Name != name || s.Details.Kind != "customresourcedefinitions" {
				t.Errorf("%s %s: %d %s, want 404", method, name, resp.StatusCode, data)
			}
			sent := b.Last(t)
			if sent.Method != method || sent.Path != crds+"/"+name ||
				method != http.MethodGet && (sent.Header.Get("Content-Type") != "application/x-hypershift-capi-proxy-probe" || strings.Contains(string(sent.Body), "{}")) {
				t.Errorf("%s %s sent %s %s %s %s", method, name, sent.Method, sent.Path, sent.Header.Get("Content-Type"), sent.Body)
			}
		}
	}
	forbid.Store(true)
	resp, data := backendtesting.Do(t, http.MethodDelete, p.URL+crds+"/machines.cluster.hypershift.openshift.io", "", nil)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(data), `\"machines.cluster.hypershift.openshift.io\" is forbidden`) {
		t.Errorf("delete refused by the backend: %d %s, want its 403 as it is", resp.StatusCode, data)
	}
	forbid.Store(false)

	resp, data = backendtesting.Do(t, http.MethodGet, p.URL+crds+"?fieldSelector=metadata.name%3Dmachines.cluster.hypershift.openshift.io", "", nil)
	if resp.StatusCode != http.StatusOK || b.Last(t).RawQuery != "fieldSelector=metadata.name%3D" {
		t.Errorf("list by a private name: %d %s, sent ?%s", resp.StatusCode, data, b.Last(t).RawQuery)
	}
}

const apiServices = "/apis/apiregistration.k8s.io/v1/apiservices"

// TestAPIServices follows requests of APIServices to the backend: the upstream name of a served group
// version reads the private APIService, renamed; no write of it reaches the backend; a private or a hidden
// name is probed (authorization) and answered 404; creates in a mapped group are refused before the
// backend sees them; lists are filtered and renamed, their fieldSelector translated.
func TestAPIServices(t *testing.T) {
	const privateName = "v1beta2.cluster.hypershift.openshift.io"
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/apiservices"):
			_, _ = w.Write([]byte(`{"kind":"APIServiceList","apiVersion":"apiregistration.k8s.io/v1","metadata":{},"items":[` +
				`{"metadata":{"name":"v1.apps"},"spec":{"group":"apps","version":"v1"}},` +
				`{"metadata":{"name":"v1beta1.infrastructure.cluster.x-k8s.io"},"spec":{"group":"infrastructure.cluster.x-k8s.io","version":"v1beta1"}},` +
				`{"metadata":{"name":"` + privateName + `"},"spec":{"group":"cluster.hypershift.openshift.io","version":"v1beta2"}}]}`))
		case strings.HasSuffix(r.URL.Path, "/v1beta1.cluster.hypershift.openshift.io"):
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"apiservices.apiregistration.k8s.io \"v1beta1.cluster.hypershift.openshift.io\" not found",` +
				`"reason":"NotFound","details":{"name":"v1beta1.cluster.hypershift.openshift.io","group":"apiregistration.k8s.io","kind":"apiservices"},"code":404}`))
		case r.Method == http.MethodGet:
			_, _ = w.Write([]byte(`{"kind":"APIService","apiVersion":"apiregistration.k8s.io/v1","metadata":{"name":"` + privateName + `"},` +
				`"spec":{"group":"cluster.hypershift.openshift.io","version":"v1beta2"}}`))
		default:
			w.WriteHeader(http.StatusUnsupportedMediaType)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"UnsupportedMediaType","code":415}`))
		}
	})
	p := newProxy(t, b.URL)

	resp, data := backendtesting.Do(t, http.MethodGet, p.URL+apiServices+"/v1beta2.cluster.x-k8s.io", "", nil)
	if resp.StatusCode != http.StatusOK || b.Last(t).Path != apiServices+"/"+privateName {
		t.Errorf("GET by the upstream name: %d %s, sent %s", resp.StatusCode, data, b.Last(t).Path)
	}
	backendtesting.EqualJSON(t, data, `{"kind":"APIService","apiVersion":"apiregistration.k8s.io/v1","metadata":{"name":"v1beta2.cluster.x-k8s.io"},`+
		`"spec":{"group":"cluster.x-k8s.io","version":"v1beta2"}}`)

	// The backend's Status for the private name names it as the client did.
	resp, data = backendtesting.Do(t, http.MethodGet, p.URL+apiServices+"/v1beta1.cluster.x-k8s.io", "", nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET of a missing private APIService: %d %s", resp.StatusCode, data)
	}
	backendtesting.EqualJSON(t, data, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"apiservices.apiregistration.k8s.io \"v1beta1.cluster.x-k8s.io\" not found",`+
		`"reason":"NotFound","details":{"name":"v1beta1.cluster.x-k8s.io","group":"apiregistration.k8s.io","kind":"apiservices"},"code":404}`)

	// Refused writes send the backend only a probe of the client's verb on the path it named, which
	// authorizes it and changes nothing.
	for _, tc := range []struct{ method, path, contentType, body string }{
		{http.MethodPut, "/v1beta2.cluster.x-k8s.io", "application/json", `{"metadata":{"name":"v1beta2.cluster.x-k8s.io"}}`},
		{http.MethodPut, "/v1beta2.cluster.x-k8s.io/status", "application/json", `{"metadata":{"name":"v1beta2.cluster.x-k8s.io"}}`},
		{http.MethodPatch, "/v1beta2.cluster.x-k8s.io", "application/merge-patch+json", `{"metadata":{"labels":{"a":"b"}}}`},
		{http.MethodPatch, "/v1beta2.cluster.x-k8s.io?fieldManager=x", "application/apply-patch+yaml", `{"metadata":{"labels":{"a":"b"}}}`},
		{http.MethodDelete, "/v1beta2.cluster.x-k8s.io", "", ""},
		{http.MethodPost, "", "application/json", `{"metadata":{"name":"v1alpha9.cluster.x-k8s.io"},"spec":{"group":"cluster.x-k8s.io","version":"v1alpha9"}}`},
		{http.MethodPost, "", "application/json", `{"metadata":{"name":"v1alpha9.example.com"},"spec":{"group":"cluster.hypershift.openshift.io","version":"v1alpha9"}}`},
	} {
		resp, data := backendtesting.Do(t, tc.method, p.URL+apiServices+tc.path, tc.body, http.Header{"Content-Type": {tc.contentType}})
		if s := backendtesting.Status(t, data); resp.StatusCode != http.StatusForbidden || s.Details == nil || s.Details.Kind != "apiservices" {
			t.Errorf("%s %s: %d %s, want 403", tc.method, tc.path, resp.StatusCode, data)
		}
		path, _, _ := strings.Cut(tc.path, "?")
		if sent := b.Last(t); sent.Method != tc.method || sent.Path != apiServices+path ||
			sent.Header.Get("Content-Type") != "application/x-hypershift-capi-proxy-probe" || strings.Contains(string(sent.Body), "metadata") {
			t.Errorf("%s %s sent %s %s %s %s, want a probe", tc.method, tc.path, sent.Method, sent.Path, sent.Header.Get("Content-Type"), sent.Body)
		}
	}

	for _, name := range []string{privateName, "v1beta1.infrastructure.cluster.x-k8s.io", "v1alpha9.cluster.x-k8s.io"} {
		for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			resp, data := backendtesting.Do(t, method, p.URL+apiServices+"/"+name, `{}`, http.Header{"Content-Type": {"application/merge-patch+json"}})
			if s := backendtesting.Status(t, data); resp.StatusCode != http.StatusNotFound || s.Details == nil || s.Details.Name != name || s.Details.Kind != "apiservices" {
				t.Errorf("%s %s: %d %s, want 404", method, name, resp.StatusCode, data)
			}
			if sent := b.Last(t); sent.Method != method || sent.Path != apiServices+"/"+name ||
				method != http.MethodGet && sent.Header.Get("Content-Type") != "application/x-hypershift-capi-proxy-probe" {
				t.Errorf("%s %s sent %s %s %s", method, name, sent.Method, sent.Path, sent.Header.Get("Content-Type"))
			}
		}
	}

	resp, data = backendtesting.Do(t, http.MethodGet, p.URL+apiServices+"?fieldSelector=metadata.name%21%3Dv1beta2.cluster.x-k8s.io", "", nil)
	if resp.StatusCode != http.StatusOK || b.Last(t).RawQuery != "fieldSelector=metadata.name%21%3D"+privateName {
		t.Errorf("list: %d %s, sent ?%s", resp.StatusCode, data, b.Last(t).RawQuery)
	}
	backendtesting.EqualJSON(t, data, `{"kind":"APIServiceList","apiVersion":"apiregistration.k8s.io/v1","metadata":{},"items":[`+
		`{"metadata":{"name":"v1.apps"},"spec":{"group":"apps","version":"v1"}},`+
		`{"metadata":{"name":"v1beta2.cluster.x-k8s.io"},"spec":{"group":"cluster.x-k8s.io","version":"v1beta2"}}]}`)
}

// TestRefusalsAreAuthorizedFirst: a write the proxy refuses itself (of a mapped CRD or APIService, or a
// create in a mapped group) is answered with the backend's refusal where the backend does not authorize
// the client, as kube-apiserver authorizes before it looks at the object.
func TestRefusalsAreAuthorizedFirst(t *testing.T) {
	b := forbidding(t, func(r *http.Request) string { return `User \"alice\" cannot ` + strings.ToLower(r.Method) })
	p := newProxy(t, b.URL)
	for _, tc := range []struct{ method, path, contentType, body string }{
		{http.MethodDelete, apiServices + "/v1beta2.cluster.x-k8s.io", "", ""},
		{http.MethodPatch, apiServices + "/v1beta2.cluster.x-k8s.io", "application/merge-patch+json", `{}`},
		{http.MethodPost, apiServices, "application/json", `{"metadata":{"name":"v1alpha9.cluster.x-k8s.io"}}`},
		{http.MethodPost, apiServices, "application/json", `{`},
		{http.MethodDelete, crds + "/machines.cluster.x-k8s.io", "", ""},
		{http.MethodPatch, crds + "/machines.cluster.x-k8s.io", "application/merge-patch+json", `{"spec":{}}`},
		{http.MethodPost, crds, "application/json", `{"metadata":{"name":"widgets.cluster.x-k8s.io"}}`},
	} {
		resp, data := backendtesting.Do(t, tc.method, p.URL+tc.path, tc.body, http.Header{"Content-Type": {tc.contentType}})
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(data), `User \"alice\" cannot `+strings.ToLower(tc.method)) {
			t.Errorf("%s %s: %d %s, want the backend's 403", tc.method, tc.path, resp.StatusCode, data)
		}
	}
}

// forbidding is a backend that refuses every request with a 403 Status whose message (JSON-escaped) is
// message's.
func forbidding(t *testing.T, message func(*http.Request) string) *backendtesting.Backend {
	return backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"Forbidden","code":403,` +
			`"message":"` + message(r) + `"}`))
	})
}
