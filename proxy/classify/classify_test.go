package classify

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/fakeroutes"
)

func TestClassify(t *testing.T) {
	c := New(fakeroutes.Table())
	const (
		machines = "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/machines"
		private  = "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/ns/machines"
	)
	for _, tc := range []struct {
		name, method, target string
		header               http.Header
		want                 Request
	}{
		{"get", "GET", machines + "/m1", nil, Request{Class: Mapped, Group: "cluster.x-k8s.io", Version: "v1beta2",
			Resource: "machines", Namespace: "ns", Name: "m1", Verb: "get", IsResource: true, BackendPath: private + "/m1"}},
		{"list with limit", "GET", machines + "?limit=5&continue=abc", nil, Request{Class: Mapped, Group: "cluster.x-k8s.io",
			Version: "v1beta2", Resource: "machines", Namespace: "ns", Verb: "list", IsResource: true, BackendPath: private}},
		{"list all namespaces", "GET", "/apis/cluster.x-k8s.io/v1beta1/machines", nil, Request{Class: Mapped, Group: "cluster.x-k8s.io",
			Version: "v1beta1", Resource: "machines", Verb: "list", IsResource: true,
			BackendPath: "/apis/cluster.hypershift.openshift.io/v1beta1/machines"}},
		{"watch by query", "GET", machines + "?watch=true&resourceVersion=10", nil, Request{Class: Mapped, Group: "cluster.x-k8s.io",
			Version: "v1beta2", Resource: "machines", Namespace: "ns", Verb: "watch", IsResource: true, Watch: true, LongRunning: true,
			BackendPath: private}},
		{"watch by path", "GET", "/apis/cluster.x-k8s.io/v1beta2/watch/namespaces/ns/machines", nil, Request{Class: Mapped,
			Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machines", Namespace: "ns", Verb: "watch", IsResource: true,
			Watch: true, LongRunning: true, BackendPath: "/apis/cluster.hypershift.openshift.io/v1beta2/watch/namespaces/ns/machines"}},
		{"create", "POST", machines + "?fieldValidation=Strict&dryRun=All", nil, Request{Class: Mapped, Group: "cluster.x-k8s.io",
			Version: "v1beta2", Resource: "machines", Namespace: "ns", Verb: "create", IsResource: true, BackendPath: private}},
		{"update status", "PUT", machines + "/m1/status", nil, Request{Class: Mapped, Group: "cluster.x-k8s.io", Version: "v1beta2",
			Resource: "machines", Subresource: "status", Namespace: "ns", Name: "m1", Verb: "update", IsResource: true,
			BackendPath: private + "/m1/status"}},
		{"patch scale", "PATCH", machines + "/m1/scale", nil, Request{Class: Mapped, Group: "cluster.x-k8s.io", Version: "v1beta2",
			Resource: "machines", Subresource: "scale", Namespace: "ns", Name: "m1", Verb: "patch", IsResource: true,
			BackendPath: private + "/m1/scale"}},
		{"delete", "DELETE", machines + "/m1", nil, Request{Class: Mapped, Group: "cluster.x-k8s.io", Version: "v1beta2",
			Resource: "machines", Namespace: "ns", Name: "m1", Verb: "delete", IsResource: true, BackendPath: private + "/m1"}},
		{"deletecollection", "DELETE", machines + "?labelSelector=a%3Db", nil, Request{Class: Mapped, Group: "cluster.x-k8s.io",
			Version: "v1beta2", Resource: "machines", Namespace: "ns", Verb: "deletecollection", IsResource: true, BackendPath: private}},
		{"infrastructure group", "GET", "/apis/infrastructure.cluster.x-k8s.io/v1beta2/namespaces/ns/awsmachines/a", nil,
			Request{Class: Mapped, Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Resource: "awsmachines",
				Namespace: "ns", Name: "a", Verb: "get", IsResource: true,
				BackendPath: "/apis/infrastructure.cluster.hypershift.openshift.io/v1beta2/namespaces/ns/awsmachines/a"}},

		{"unknown resource of a mapped group", "GET", "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/widgets", nil,
			Request{Class: Unrouted, Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "widgets", Namespace: "ns",
				Verb: "list", IsResource: true, BackendPath: "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/widgets"}},
		{"unknown version of a mapped group", "GET", "/apis/cluster.x-k8s.io/v1alpha4", nil,
			Request{Class: Unrouted, Group: "cluster.x-k8s.io", Version: "v1alpha4", Verb: "get",
				BackendPath: "/apis/cluster.x-k8s.io/v1alpha4"}},
		{"mapped group without routes", "GET", "/apis/ipam.cluster.x-k8s.io", nil,
			Request{Class: Unrouted, Group: "ipam.cluster.x-k8s.io", Verb: "get", BackendPath: "/apis/ipam.cluster.x-k8s.io"}},
		{"unparsable watch path in a mapped group", "GET", "/apis/cluster.x-k8s.io/v1beta2/watch", nil,
			Request{Class: Unrouted, Group: "cluster.x-k8s.io", Version: "v1beta2", Verb: "get", BackendPath: "/apis/cluster.x-k8s.io/v1beta2/watch"}},

		{"discovery root", "GET", "/apis", nil, Request{Class: Discovery, Verb: "get", BackendPath: "/apis"}},
		{"discovery group", "GET", "/apis/cluster.x-k8s.io", nil, Request{Class: Discovery, Group: "cluster.x-k8s.io",
			Verb: "get", BackendPath: "/apis/cluster.hypershift.openshift.io"}},
		{"discovery group version", "GET", "/apis/cluster.x-k8s.io/v1beta2", nil, Request{Class: Discovery,
			Group: "cluster.x-k8s.io", Version: "v1beta2", Verb: "get", BackendPath: "/apis/cluster.hypershift.openshift.io/v1beta2"}},

		{"private resource", "GET", private + "/m1", nil, Request{Class: Private, Group: "cluster.hypershift.openshift.io",
			Version: "v1beta2", Resource: "machines", Namespace: "ns", Name: "m1", Verb: "get", IsResource: true, BackendPath: private + "/m1"}},
		{"private discovery", "GET", "/apis/cluster.hypershift.openshift.io/v1beta2", nil, Request{Class: Private,
			Group: "cluster.hypershift.openshift.io", Verb: "get", BackendPath: "/apis/cluster.hypershift.openshift.io/v1beta2"}},

		{"core", "GET", "/api/v1/namespaces/ns/secrets/s", nil, Request{Class: Other, Version: "v1", Resource: "secrets",
			Namespace: "ns", Name: "s", Verb: "get", IsResource: true, BackendPath: "/api/v1/namespaces/ns/secrets/s"}},
		{"other group discovery", "GET", "/apis/apps/v1", nil, Request{Class: Other, Verb: "get", BackendPath: "/apis/apps/v1"}},
		{"version", "GET", "/version", nil, Request{Class: Other, Verb: "get", BackendPath: "/version"}},
		{"exec upgrade", "POST", "/api/v1/namespaces/ns/pods/p/exec?command=sh",
			http.Header{"Connection": {"Upgrade"}, "Upgrade": {"SPDY/3.1"}},
			Request{Class: Upgrade, Version: "v1", Resource: "pods", Subresource: "exec", Namespace: "ns", Name: "p",
				Verb: "create", IsResource: true, LongRunning: true, BackendPath: "/api/v1/namespaces/ns/pods/p/exec"}},
		{"follow logs", "GET", "/api/v1/namespaces/ns/pods/p/log?follow=true", nil, Request{Class: Other, Version: "v1",
			Resource: "pods", Subresource: "log", Namespace: "ns", Name: "p", Verb: "get", IsResource: true, LongRunning: true,
			BackendPath: "/api/v1/namespaces/ns/pods/p/log"}},
		{"service proxy", "POST", "/api/v1/namespaces/ns/services/s/proxy/x", nil, Request{Class: Other, Version: "v1",
			Resource: "services", Subresource: "proxy", Namespace: "ns", Name: "s", Verb: "create", IsResource: true,
			LongRunning: true, BackendPath: "/api/v1/namespaces/ns/services/s/proxy/x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, nil)
			for k, v := range tc.header {
				r.Header[k] = v
			}
			got := c.Classify(r)
			if tc.want.Class == Mapped && got.Route == nil {
				t.Fatalf("Mapped without a route: %+v", got)
			}
			if got.Route != nil {
				if got.Route.Upstream.Resource != got.Resource || got.Route.Upstream.Version != got.Version {
					t.Errorf("route %v for %s/%s", got.Route.Upstream, got.Version, got.Resource)
				}
				got.Route = nil
			}
			if got != tc.want {
				t.Errorf("Classify(%s %s)\n got %+v\nwant %+v", tc.method, tc.target, got, tc.want)
			}
		})
	}
}

func TestToPrivatePath(t *testing.T) {
	for _, tc := range []struct {
		path, want string
		ok         bool
	}{
		{"/apis/cluster.x-k8s.io", "/apis/cluster.hypershift.openshift.io", true},
		{"/apis/cluster.x-k8s.io/v1beta2/machines", "/apis/cluster.hypershift.openshift.io/v1beta2/machines", true},
		{"//apis/cluster.x-k8s.io/v1beta2/machines", "", false},
		{"/apis/cluster.x-k8s.iox/v1beta2", "", false},
	} {
		got, ok := toPrivatePath(tc.path, "cluster.x-k8s.io", "cluster.hypershift.openshift.io")
		if got != tc.want || ok != tc.ok {
			t.Errorf("toPrivatePath(%q) = %q, %v; want %q, %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
}

func TestUncleanPathsIntoMappedGroups(t *testing.T) {
	c := New(fakeroutes.Table())
	for target, want := range map[string]Class{
		"/apis/apps/v1/../../cluster.x-k8s.io/v1beta2/namespaces/ns/machines":                      Unrouted,
		"/apis/cluster.hypershift.openshift.io/../cluster.x-k8s.io/v1beta2/namespaces/ns/machines": Unrouted,
		"/apis//cluster.x-k8s.io":                           Unrouted,
		"/apis/cluster.x-k8s.io/./v1beta2":                  Unrouted,
		"/api/v1/namespaces/ns/secrets/../configmaps":       Other,
		"/apis/cluster.hypershift.openshift.io/./v1beta2/x": Private,
	} {
		if got := c.Classify(httptest.NewRequest("GET", target, nil)); got.Class != want {
			t.Errorf("Classify(%s) = %s, want %s", target, got.Class, want)
		}
	}
}
