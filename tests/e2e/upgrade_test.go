package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// http1 is a raw client that speaks HTTP/1.1 only: HTTP/2 forbids Connection and Upgrade headers.
func http1(t *testing.T, cfg *rest.Config) *rawClient {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.NextProtos = []string{"http/1.1"}
	return newRawClient(t, cfg)
}

// upgradeHeaders are upgrade headers of requests kube-apiserver does not upgrade, spelled as clients
// and proxies spell them.
var upgradeHeaders = [][]string{
	{"Connection: upgrade", "Upgrade: foo"},
	{"Connection: keep-alive, Upgrade", "Upgrade: SPDY/3.1"},
	{"Connection: UPGRADE", "Upgrade: websocket", "Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Origin: https://127.0.0.1"},
}

// TestUpgradeHeadersAreIgnored: a request with upgrade headers that kube-apiserver does not upgrade is
// answered by it as if they were not there; through the proxy it is translated and guarded as such.
func TestUpgradeHeadersAreIgnored(t *testing.T) {
	c, _ := clients(t)
	ns := namespace(t, c)
	cluster := mustCreateCluster(t, c, ns)
	rp, rd := http1(t, proxy.Config(env.AdminToken)), http1(t, env.DirectConfig(env.AdminToken))

	for i, header := range upgradeHeaders {
		name := fmt.Sprintf("owned-%d", i)
		t.Run(header[0]+"/ConfigMap with an ownerReference", func(t *testing.T) {
			cm := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"ownerReferences":[`+
				`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","name":"c1","uid":%q}]},"data":{"a":"b"}}`, name, cluster.UID)
			got := jsonObject(t, rp.mustDo(t, http.StatusCreated, http.MethodPost, "/api/v1/namespaces/"+ns+"/configmaps", cm,
				append([]string{"Content-Type: application/json"}, header...)...))
			if v := field(got, "metadata.ownerReferences.0.apiVersion"); v != "cluster.x-k8s.io/v1beta2" {
				t.Errorf("the proxy answered with ownerReference apiVersion %v", v)
			}
			stored := rd.mustDo(t, http.StatusOK, http.MethodGet, "/api/v1/namespaces/"+ns+"/configmaps/"+name, "")
			if v := field(jsonObject(t, stored), "metadata.ownerReferences.0.apiVersion"); v != privateCore+"/v1beta2" {
				t.Errorf("stored with ownerReference apiVersion %v, want %s/v1beta2", v, privateCore)
			}

			// kube-apiserver answers a GET with upgrade headers as any GET; so does the proxy.
			direct := rd.mustDo(t, http.StatusOK, http.MethodGet, "/api/v1/namespaces/"+ns+"/configmaps/"+name, "", header...)
			via := rp.mustDo(t, http.StatusOK, http.MethodGet, "/api/v1/namespaces/"+ns+"/configmaps/"+name, "", header...)
			sameButGroups(t, "ConfigMap", via, direct)
		})

		t.Run(header[0]+"/the CRD of machines is the private one", func(t *testing.T) {
			const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
			got := jsonObject(t, rp.mustDo(t, http.StatusOK, http.MethodGet, crds+"machines.cluster.x-k8s.io", "", header...))
			private := jsonObject(t, rd.mustDo(t, http.StatusOK, http.MethodGet, crds+"machines."+privateCore, ""))
			platform := jsonObject(t, rd.mustDo(t, http.StatusOK, http.MethodGet, crds+"machines.cluster.x-k8s.io", ""))
			if field(got, "metadata.uid") != field(private, "metadata.uid") || field(got, "metadata.uid") == field(platform, "metadata.uid") {
				t.Errorf("the proxy served the CRD with uid %v; the private one has %v, the platform's %v",
					field(got, "metadata.uid"), field(private, "metadata.uid"), field(platform, "metadata.uid"))
			}
			if v, want := versions(got), versions(private); !reflect.DeepEqual(v, want) {
				t.Errorf("versions %v, want the private CRD's %v (the platform's: %v)", v, want, versions(platform))
			}
			if g := field(got, "spec.group"); g != "cluster.x-k8s.io" || field(got, "metadata.name") != "machines.cluster.x-k8s.io" {
				t.Errorf("served as %v in group %v", field(got, "metadata.name"), g)
			}
		})
	}

	t.Run("answers as kube-apiserver's to requests it does not upgrade", func(t *testing.T) {
		for _, path := range []string{
			"/api/v1/proxy/namespaces/" + ns + "/pods/nothing", // the proxy verb: no route serves it
			"/api/v1/namespaces/" + ns + "/configmaps/nothing/exec",
			"/version",
		} {
			for _, header := range upgradeHeaders {
				d, _ := rd.do(t, http.MethodGet, path, "", header...)
				v, _ := rp.do(t, http.MethodGet, path, "", header...)
				if d.StatusCode != v.StatusCode {
					t.Errorf("GET %s with %q: %d through the proxy, %d directly", path, header, v.StatusCode, d.StatusCode)
				}
			}
		}
	})
}

// versions returns the names of a decoded CRD's spec.versions.
func versions(crd map[string]any) []string {
	var names []string
	list, _ := field(crd, "spec.versions").([]any)
	for _, v := range list {
		names = append(names, fmt.Sprint(field(v, "name")))
	}
	return names
}

// dialWatch opens a watch of path over a websocket through the proxy, as the admin, as a browser does it
// (with an Origin, which kube-apiserver requires).
func dialWatch(t *testing.T, path string) *websocket.Conn {
	t.Helper()
	cfg, err := websocket.NewConfig("wss"+strings.TrimPrefix(proxy.URL, "https")+path, "https://127.0.0.1/")
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(proxy.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	cfg.TlsConfig = &tls.Config{RootCAs: pool}
	cfg.Header = http.Header{"Authorization": {"Bearer " + env.AdminToken}}
	ws, err := websocket.DialConfig(cfg)
	if err != nil {
		t.Fatalf("websocket watch of %s: %v", path, err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

// receiveEvent reads the next event of a websocket watch: one text message.
func receiveEvent(t *testing.T, ws *websocket.Conn) watchEvent {
	t.Helper()
	if err := ws.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	var msg string
	if err := websocket.Message.Receive(ws, &msg); err != nil {
		t.Fatalf("no websocket watch event: %v", err)
	}
	if ws.PayloadType != websocket.TextFrame {
		t.Errorf("a message of payload type %d, want text", ws.PayloadType)
	}
	var ev watchEvent
	if err := json.Unmarshal([]byte(msg), &ev); err != nil {
		t.Fatalf("event %q: %v", msg, err)
	}
	return ev
}

// TestWebSocketWatch: watches over a websocket, as kube-apiserver serves them, are translated event by
// event, for CAPI kinds and for others.
func TestWebSocketWatch(t *testing.T) {
	ctx := context.Background()
	c, _ := clients(t)
	ns := namespace(t, c)
	cluster := mustCreateCluster(t, c, ns)

	t.Run("Machines", func(t *testing.T) {
		ws := dialWatch(t, "/apis/cluster.x-k8s.io/v1beta2/namespaces/"+ns+"/machines?watch=true")
		m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "ws", Namespace: ns}, Spec: machineSpec("c1", "ws")}
		mustCreate(t, c, m)
		check := func(ev watchEvent, wantType string) {
			t.Helper()
			if ev.Type != wantType || ev.Object["apiVersion"] != "cluster.x-k8s.io/v1beta2" || field(ev.Object, "metadata.name") != "ws" ||
				field(ev.Object, "spec.infrastructureRef.apiGroup") != upstreamInfra {
				t.Errorf("event %s %v, want %s of Machine ws in upstream terms", ev.Type, ev.Object, wantType)
			}
			for _, mf := range field(ev.Object, "metadata.managedFields").([]any) {
				if v := fmt.Sprint(field(mf, "apiVersion")); strings.Contains(v, "hypershift") {
					t.Errorf("managedFields apiVersion %s", v)
				}
			}
		}
		check(receiveEvent(t, ws), "ADDED")
		m.Labels = map[string]string{"changed": "true"}
		if err := c.Update(ctx, m); err != nil {
			t.Fatal(err)
		}
		check(receiveEvent(t, ws), "MODIFIED")
	})

	t.Run("ConfigMaps owned by a Cluster", func(t *testing.T) {
		ws := dialWatch(t, "/api/v1/namespaces/"+ns+"/configmaps?watch=true&labelSelector=ws%3Dtrue")
		viaProxy(t).mustDo(t, http.StatusCreated, http.MethodPost, "/api/v1/namespaces/"+ns+"/configmaps",
			fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"owned","labels":{"ws":"true"},"ownerReferences":[`+
				`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","name":"c1","uid":%q}]}}`, cluster.UID),
			"Content-Type: application/json")
		ev := receiveEvent(t, ws)
		if ev.Type != "ADDED" || field(ev.Object, "metadata.name") != "owned" ||
			field(ev.Object, "metadata.ownerReferences.0.apiVersion") != "cluster.x-k8s.io/v1beta2" {
			t.Errorf("event %s %v, want ADDED of owned with its ownerReference in upstream terms", ev.Type, ev.Object)
		}
	})

	t.Run("the private group answers as over HTTP", func(t *testing.T) {
		path := "/apis/" + privateCore + "/v1beta2/namespaces/" + ns + "/machines?watch=true"
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		resp, events := openWatch(ctx, t, viaProxy(t), path)
		if resp.StatusCode != http.StatusOK {
			// The proxy refuses the private group: a websocket watch of it must get the same answer.
			got, _ := http1(t, proxy.Config(env.AdminToken)).do(t, http.MethodGet, path, "",
				"Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
				"Origin: https://127.0.0.1")
			if got.StatusCode != resp.StatusCode {
				t.Errorf("a websocket watch of the private group: %d, over HTTP %d", got.StatusCode, resp.StatusCode)
			}
			return
		}
		// The proxy forwards the private group as it is: the websocket watch shows what the HTTP one does.
		want := nextEvent(t, events)
		got := receiveEvent(t, dialWatch(t, path))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("websocket watch of the private group: %s %v\nover HTTP: %s %v", got.Type, got.Object, want.Type, want.Object)
		}
	})
}
