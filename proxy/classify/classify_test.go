package classify

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/routestesting"
)

func TestClassify(t *testing.T) {
	c := New(routestesting.Table())
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
				Verb: "list", IsResource: true, BackendPath: "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/ns/widgets"}},
		{"unknown version of a mapped group", "GET", "/apis/cluster.x-k8s.io/v1alpha4", nil,
			Request{Class: Unrouted, Group: "cluster.x-k8s.io", Version: "v1alpha4", Verb: "get",
				BackendPath: "/apis/cluster.hypershift.openshift.io/v1alpha4"}},
		{"mapped group without routes", "GET", "/apis/ipam.cluster.x-k8s.io", nil,
			Request{Class: Unrouted, Group: "ipam.cluster.x-k8s.io", Verb: "get", BackendPath: "/apis/ipam.cluster.hypershift.openshift.io"}},
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
				Verb: "create", IsResource: true, LongRunning: true, Connect: true, BackendPath: "/api/v1/namespaces/ns/pods/p/exec"}},
		{"follow logs", "GET", "/api/v1/namespaces/ns/pods/p/log?follow=true", nil, Request{Class: Other, Version: "v1",
			Resource: "pods", Subresource: "log", Namespace: "ns", Name: "p", Verb: "get", IsResource: true, LongRunning: true,
			BackendPath: "/api/v1/namespaces/ns/pods/p/log"}},
		{"service proxy", "POST", "/api/v1/namespaces/ns/services/s/proxy/x", nil, Request{Class: Other, Version: "v1",
			Resource: "services", Subresource: "proxy", Namespace: "ns", Name: "s", Verb: "create", IsResource: true,
			LongRunning: true, Connect: true, BackendPath: "/api/v1/namespaces/ns/services/s/proxy/x"}},
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
	c := New(routestesting.Table())
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

// TestUpgrades: only a request kube-apiserver switches protocols for is a genuine upgrade; a watch over a
// websocket is translated; any other request's upgrade headers change nothing.
func TestUpgrades(t *testing.T) {
	c := New(routestesting.Table())
	spdy := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"SPDY/3.1"}}
	ws := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}, "Sec-Websocket-Version": {"13"}}
	for _, tc := range []struct {
		name, method, target string
		header               http.Header
		class                Class
		webSocket            bool
	}{
		// Every connect subresource, with and without upgrade headers.
		{"pods/exec SPDY", "POST", "/api/v1/namespaces/ns/pods/p/exec?command=sh", spdy, Upgrade, false},
		{"pods/exec websocket", "GET", "/api/v1/namespaces/ns/pods/p/exec?command=sh", ws, Upgrade, false},
		{"pods/exec plain", "POST", "/api/v1/namespaces/ns/pods/p/exec?command=sh", nil, Other, false},
		{"pods/attach SPDY", "POST", "/api/v1/namespaces/ns/pods/p/attach", spdy, Upgrade, false},
		{"pods/attach plain", "POST", "/api/v1/namespaces/ns/pods/p/attach", nil, Other, false},
		{"pods/portforward SPDY", "POST", "/api/v1/namespaces/ns/pods/p/portforward", spdy, Upgrade, false},
		{"pods/portforward websocket", "GET", "/api/v1/namespaces/ns/pods/p/portforward", ws, Upgrade, false},
		{"pods/portforward plain", "GET", "/api/v1/namespaces/ns/pods/p/portforward", nil, Other, false},
		{"pods/proxy websocket", "GET", "/api/v1/namespaces/ns/pods/p/proxy/ws", ws, Upgrade, false},
		{"pods/proxy plain", "GET", "/api/v1/namespaces/ns/pods/p/proxy/x", nil, Other, false},
		{"services/proxy websocket", "GET", "/api/v1/namespaces/ns/services/s:80/proxy/ws", ws, Upgrade, false},
		{"services/proxy plain", "GET", "/api/v1/namespaces/ns/services/s/proxy/", nil, Other, false},
		{"nodes/proxy upgrade", "GET", "/api/v1/nodes/n/proxy/x", spdy, Upgrade, false},
		{"nodes/proxy plain", "GET", "/api/v1/nodes/n/proxy/stats/summary", nil, Other, false},
		{"pods/log websocket", "GET", "/api/v1/namespaces/ns/pods/p/log?follow=true", ws, Upgrade, false},
		{"pods/log SPDY", "GET", "/api/v1/namespaces/ns/pods/p/log?follow=true", spdy, Other, false},
		{"pods/log plain", "GET", "/api/v1/namespaces/ns/pods/p/log", nil, Other, false},

		// Connect subresource names where kube-apiserver has no connecter.
		{"configmaps/exec", "POST", "/api/v1/namespaces/ns/configmaps/c/exec", spdy, Other, false},
		{"apps deployments/proxy", "GET", "/apis/apps/v1/namespaces/ns/deployments/d/proxy", ws, Other, false},
		{"mapped machines/exec", "POST", "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/machines/m/exec", spdy, Mapped, false},
		{"the proxy verb", "GET", "/api/v1/proxy/namespaces/ns/pods/p", spdy, Other, false},
		{"pods/exec without a name", "POST", "/api/v1/namespaces/ns/pods/exec", spdy, Other, false},

		// Watches over a websocket, of every class.
		{"websocket watch of machines", "GET", "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/machines?watch=true", ws, Mapped, true},
		{"websocket watch by path", "GET", "/apis/cluster.x-k8s.io/v1beta2/watch/namespaces/ns/machines", ws, Mapped, true},
		{"websocket watch of configmaps", "GET", "/api/v1/namespaces/ns/configmaps?watch=1", ws, Other, true},
		{"websocket watch of CRDs", "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?watch=true", ws, CRD, true},
		{"websocket watch of the private group", "GET", "/apis/cluster.hypershift.openshift.io/v1beta2/machines?watch=true", ws, Private, true},
		{"websocket watch of an unrouted resource", "GET", "/apis/cluster.x-k8s.io/v1beta2/widgets?watch=true", ws, Unrouted, true},
		{"SPDY watch", "GET", "/api/v1/namespaces/ns/configmaps?watch=true", spdy, Other, false},
		{"websocket list", "GET", "/api/v1/namespaces/ns/configmaps", ws, Other, false},
		{"websocket without Connection", "GET", "/api/v1/namespaces/ns/configmaps?watch=true", http.Header{"Upgrade": {"websocket"}}, Other, false},

		// Anything else with upgrade headers.
		{"create a configmap", "POST", "/api/v1/namespaces/ns/configmaps", http.Header{"Connection": {"upgrade"}, "Upgrade": {"foo"}}, Other, false},
		{"get the CRD of machines", "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/machines.cluster.x-k8s.io", spdy, CRD, false},
		{"get a machine", "GET", "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/machines/m", ws, Mapped, false},
		{"discovery", "GET", "/apis/cluster.x-k8s.io/v1beta2", ws, Discovery, false},
		{"version", "GET", "/version", ws, Other, false},
		{"private", "GET", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/ns/machines/m", spdy, Private, false},
		{"Connection without Upgrade", "GET", "/api/v1/namespaces/ns/secrets", http.Header{"Connection": {"upgrade"}}, Other, false},

		// Header spellings kube-apiserver accepts (httpstream.IsUpgradeRequest: Connection contains
		// "upgrade", in any case; wsstream.IsWebSocketRequest: Upgrade is "websocket" in any case).
		{"keep-alive, Upgrade", "POST", "/api/v1/namespaces/ns/pods/p/exec", http.Header{"Connection": {"keep-alive, Upgrade"}, "Upgrade": {"SPDY/3.1"}}, Upgrade, false},
		{"UPGRADE", "POST", "/api/v1/namespaces/ns/pods/p/attach", http.Header{"Connection": {"UPGRADE"}, "Upgrade": {"SPDY/3.1"}}, Upgrade, false},
		{"two Connection headers", "POST", "/api/v1/namespaces/ns/pods/p/exec", http.Header{"Connection": {"keep-alive", "upgrade"}, "Upgrade": {"SPDY/3.1"}}, Upgrade, false},
		{"WebSocket watch, mixed case", "GET", "/api/v1/configmaps?watch=true", http.Header{"Connection": {"keep-alive, Upgrade"}, "Upgrade": {"WebSocket"}}, Other, true},
		{"UPGRADE websocket watch", "GET", "/api/v1/configmaps?watch=true", http.Header{"Connection": {"UPGRADE"}, "Upgrade": {"WEBSOCKET"}}, Other, true},
		{"keep-alive, Upgrade on a configmap", "GET", "/api/v1/namespaces/ns/configmaps/c", http.Header{"Connection": {"keep-alive, Upgrade"}, "Upgrade": {"foo"}}, Other, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, nil)
			for k, v := range tc.header {
				r.Header[k] = v
			}
			got := c.Classify(r)
			if got.Class != tc.class || got.WebSocket != tc.webSocket {
				t.Errorf("Classify(%s %s, %v): class %s, WebSocket %v; want %s, %v", tc.method, tc.target, tc.header, got.Class, got.WebSocket, tc.class, tc.webSocket)
			}
			if got.Class == Upgrade && !got.LongRunning {
				t.Errorf("an upgrade that is not long-running: %+v", got)
			}
			if got.WebSocket && (!got.Watch || !got.LongRunning) {
				t.Errorf("a websocket watch that is not a long-running watch: %+v", got)
			}
			if !got.Watch && got.Class != Upgrade && got.LongRunning && got.Subresource == "" && got.Verb != "proxy" {
				t.Errorf("upgrade headers made an ordinary request long-running: %+v", got)
			}
		})
	}
}

// TestClassesOfTheProxysOwn: OpenAPI documents naming the mapped groups, CRDs, APIServices and the
// conversion webhook are classes of their own, so that the server dispatches on the class alone.
func TestClassesOfTheProxysOwn(t *testing.T) {
	c := New(routestesting.Table())
	for _, tc := range []struct {
		method, target string
		want           Class
	}{
		{"GET", "/openapi/v2", OpenAPI},
		{"GET", "/openapi/v3", OpenAPI},
		{"GET", "/openapi/v3/", OpenAPI},
		{"GET", "/openapi/v3/apis/cluster.x-k8s.io/v1beta2", OpenAPI},
		{"GET", "/openapi/v3/apis/cluster.x-k8s.io/v1alpha3", OpenAPI},
		{"GET", "/openapi/v3/apis/cluster.hypershift.openshift.io/v1beta2", OpenAPI},
		{"GET", "/openapi/v3/apis/apps/v1", Other},
		{"GET", "/openapi/v3/api/v1", Other},
		{"GET", "/openapi/v4", Other},
		{"GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD},
		{"DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?labelSelector=a", CRD},
		{"GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/machines.cluster.x-k8s.io/status", CRD},
		{"GET", "/apis/apiextensions.k8s.io/v1", Other},
		{"GET", "/apis/apiregistration.k8s.io/v1/apiservices", APIService},
		{"GET", "/apis/apiregistration.k8s.io/v1/watch/apiservices/v1beta2.cluster.x-k8s.io", APIService},
		{"PUT", "/apis/apiregistration.k8s.io/v1/apiservices/v1beta2.cluster.x-k8s.io/status", APIService},
		{"GET", "/apis/apiregistration.k8s.io/v1", Other},
		{"GET", "/apis/apiregistration.k8s.io/v1/apiservice", Other},
		{"POST", "/convert", Webhook},
		{"POST", "/admission/cluster-api/validate-cluster-x-k8s-io-v1beta2-machine", Admission},
		{"POST", "/admission", Other},
		{"POST", "/convert/x", Other},
		{"POST", "/convert/", Other},
		{"POST", "/converts", Other},
		{"POST", "/apis/convert", Other},
	} {
		r := httptest.NewRequest(tc.method, tc.target, nil)
		if got := c.Classify(r).Class; got != tc.want {
			t.Errorf("Classify(%s %s) = %s, want %s", tc.method, tc.target, got, tc.want)
		}
	}
}

func TestContext(t *testing.T) {
	if _, ok := FromContext(context.Background()); ok {
		t.Error("FromContext of an empty context: ok")
	}
	want := &Request{Class: Mapped, Verb: "get"}
	if got, ok := FromContext(NewContext(context.Background(), want)); !ok || got != want {
		t.Errorf("FromContext = %+v, %v; want the value NewContext was given", got, ok)
	}
}

// TestVerbSets pins the verb sets every step of the proxy reads (Request.Writes and the others) to
// kube-apiserver's verbs, as classified from real requests.
func TestVerbSets(t *testing.T) {
	c := New(routestesting.Table())
	const machines = "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/machines"
	for _, tc := range []struct {
		method, target                                         string
		writes, sendsObject, listOrWatch, selects, answersList bool
	}{
		{"GET", machines + "/m1", false, false, false, false, false},
		{"GET", machines, false, false, true, true, true},
		{"GET", machines + "?watch=true", false, false, true, true, false},
		{"POST", machines, true, true, false, false, false},
		{"PUT", machines + "/m1/status", true, true, false, false, false},
		{"PATCH", machines + "/m1", true, true, false, false, false},
		{"DELETE", machines + "/m1", true, false, false, false, false},
		{"DELETE", machines, true, false, false, true, true},
	} {
		req := c.Classify(httptest.NewRequest(tc.method, tc.target, nil))
		got := [5]bool{req.Writes(), req.SendsObject(), req.ListOrWatch(), req.Selects(), req.AnswersList()}
		want := [5]bool{tc.writes, tc.sendsObject, tc.listOrWatch, tc.selects, tc.answersList}
		if got != want {
			t.Errorf("%s %s (verb %s): Writes, SendsObject, ListOrWatch, Selects, AnswersList = %v, want %v", tc.method, tc.target, req.Verb, got, want)
		}
	}
}
