package server_test

import (
	"bufio"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"golang.org/x/net/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/openshift/hypershift-capi-proxy/proxy/auth"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/backendtesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/metricstesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/routestesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/proxy/server"
)

// serveWebSocketWatch answers a websocket request as kube-apiserver's watch handler does
// (k8s.io/apiserver/pkg/endpoints/handlers/watch.go): golang.org/x/net/websocket's Handler, which refuses a
// request without an Origin with 403, and every event as one text message ending in a newline. It sends
// events, then waits for the client to go away. Other requests get 400.
func serveWebSocketWatch(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			http.Error(w, "want a websocket", http.StatusBadRequest)
			return
		}
		websocket.Handler(func(ws *websocket.Conn) {
			defer ws.Close()
			for _, e := range events {
				if err := websocket.Message.Send(ws, e+"\n"); err != nil {
					return
				}
			}
			var discard []byte
			for websocket.Message.Receive(ws, &discard) == nil {
			}
		}).ServeHTTP(w, r)
	}
}

// dialWatch opens a websocket watch of target through the proxy at proxyURL.
func dialWatch(t *testing.T, proxyURL, target string, header http.Header) *websocket.Conn {
	t.Helper()
	cfg, err := websocket.NewConfig("ws"+strings.TrimPrefix(proxyURL, "http")+target, "http://localhost/")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Header = header
	ws, err := websocket.DialConfig(cfg)
	if err != nil {
		t.Fatalf("dialing %s: %v", target, err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

// receive reads one message; it must be a text frame.
func receive(t *testing.T, ws *websocket.Conn) string {
	t.Helper()
	var msg string
	if err := websocket.Message.Receive(ws, &msg); err != nil {
		t.Fatalf("receiving: %v", err)
	}
	if ws.PayloadType != websocket.TextFrame {
		t.Errorf("payload type %d, want a text frame", ws.PayloadType)
	}
	return msg
}

// receiveEnd expects the end of the watch: a close frame, which Receive reports as io.EOF.
func receiveEnd(t *testing.T, ws *websocket.Conn) {
	t.Helper()
	var msg string
	if err := websocket.Message.Receive(ws, &msg); !errors.Is(err, io.EOF) {
		t.Errorf("after the last event: %q, %v; want the end of the watch", msg, err)
	}
}

func TestWebSocketWatchOfMappedResource(t *testing.T) {
	bookmark := `{"type":"BOOKMARK","object":{"kind":"Machine","apiVersion":"%s","metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}`
	gone := `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old","reason":"Expired","details":{"group":"%s","kind":"machines"},"code":410}}`
	b := backendtesting.New(t, serveWebSocketWatch(
		`{"type":"ADDED","object":`+privateMachine+`}`,
		strings.ReplaceAll(bookmark, "%s", "cluster.hypershift.openshift.io/v1beta2"),
		`{"type":"MODIFIED","object":`+privateMachine+`}`,
		strings.ReplaceAll(gone, "%s", "cluster.hypershift.openshift.io"),
		`{"type":"ADDED","object":{"apiVersion":}}`, // malformed
	))
	p := newProxy(t, b.URL)
	ws := dialWatch(t, p.URL, upstreamMachines+"?watch=true&resourceVersion=5&labelSelector=a%3Db",
		http.Header{"Authorization": {"Bearer client-token"}, "Accept": {"application/vnd.kubernetes.protobuf, application/json"}})

	for _, want := range []string{
		`{"type":"ADDED","object":` + upstreamMachine + `}`,
		strings.ReplaceAll(bookmark, "%s", "cluster.x-k8s.io/v1beta2"),
		`{"type":"MODIFIED","object":` + upstreamMachine + `}`,
		strings.ReplaceAll(gone, "%s", "cluster.x-k8s.io"),
	} {
		got := receive(t, ws)
		if !strings.HasSuffix(got, "}\n") {
			t.Errorf("event %q does not end in a newline, as kube-apiserver's do", got)
		}
		backendtesting.EqualJSON(t, []byte(got), want)
	}
	var event struct {
		Type   string        `json:"type"`
		Object metav1.Status `json:"object"`
	}
	if got := receive(t, ws); json.Unmarshal([]byte(got), &event) != nil || event.Type != "ERROR" || event.Object.Code != 500 {
		t.Errorf("after a malformed event: %q, want an ERROR event", got)
	}
	receiveEnd(t, ws)

	last := b.Last(t)
	if last.Path != privateMachines || last.RawQuery != "watch=true&resourceVersion=5&labelSelector=a%3Db" {
		t.Errorf("the backend got %s?%s", last.Path, last.RawQuery)
	}
	for name, want := range map[string]string{"Authorization": "Bearer client-token", "Upgrade": "websocket",
		"Connection": "Upgrade", "Origin": "http://localhost/", "Accept": "application/json"} {
		if got := last.Header.Get(name); got != want {
			t.Errorf("the backend got %s %q, want %q", name, got, want)
		}
	}
}

func TestWebSocketWatchOfOtherResource(t *testing.T) {
	const (
		privateConfigMap  = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns","ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Cluster","name":"c","uid":"u"}]}}`
		upstreamConfigMap = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns","ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","name":"c","uid":"u"}]}}`
	)
	b := backendtesting.New(t, serveWebSocketWatch(`{"type":"ADDED","object":`+privateConfigMap+`}`, `{"type":"DELETED","object":`+privateConfigMap+`}`))
	p := newProxy(t, b.URL)
	ws := dialWatch(t, p.URL, "/api/v1/namespaces/ns/configmaps?watch=true", nil)
	backendtesting.EqualJSON(t, []byte(receive(t, ws)), `{"type":"ADDED","object":`+upstreamConfigMap+`}`)
	backendtesting.EqualJSON(t, []byte(receive(t, ws)), `{"type":"DELETED","object":`+upstreamConfigMap+`}`)
	if got := b.Last(t).Path; got != "/api/v1/namespaces/ns/configmaps" {
		t.Errorf("the backend got %s", got)
	}
}

// TestWebSocketRefused: the backend's refusal of the handshake reaches the client as it is.
func TestWebSocketRefused(t *testing.T) {
	b := backendtesting.New(t, serveWebSocketWatch())
	p := newProxy(t, b.URL)
	req, _ := http.NewRequest("GET", p.URL+upstreamMachines+"?watch=true", nil)
	req.Header = http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}, "Sec-Websocket-Version": {"13"},
		"Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}} // no Origin: x/net/websocket refuses it
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("status %d, want the backend's 403", resp.StatusCode)
	}
}

// TestWebSocketFrames: a message in fragments is put together and translated, control frames pass both
// ways, and a backend connection that breaks off ends the client's watch with a close frame.
func TestWebSocketFrames(t *testing.T) {
	pongs := make(chan []byte, 1)
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close() // without a close frame
		sum := sha1.Sum([]byte(r.Header.Get("Sec-Websocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
			base64.StdEncoding.EncodeToString(sum[:]) + "\r\n\r\n")
		event := []byte(`{"type":"ADDED","object":` + privateMachine + "}\n")
		rw.Write(frame(false, 0x1, event[:10]))
		rw.Write(frame(true, 0x9, []byte("ping")))
		rw.Write(frame(true, 0x0, event[10:]))
		rw.Flush()
		// The client answers the ping (x/net/websocket does when it reads the frames).
		fin, op, payload := readClientFrame(t, rw.Reader)
		if !fin || op != 0xA {
			t.Errorf("the backend got frame %#x (fin %v), want a pong", op, fin)
		}
		pongs <- payload
	})
	p := newProxy(t, b.URL)
	ws := dialWatch(t, p.URL, upstreamMachines+"?watch=true", nil)
	backendtesting.EqualJSON(t, []byte(receive(t, ws)), `{"type":"ADDED","object":`+upstreamMachine+`}`)
	if got := string(<-pongs); got != "ping" {
		t.Errorf("pong %q", got)
	}
	receiveEnd(t, ws)
}

// TestWebSocketUntranslatable: a binary (protobuf) message, or a frame a server must not send (masked),
// ends the client's watch with an ERROR event and a close, never with the backend's bytes.
func TestWebSocketUntranslatable(t *testing.T) {
	for name, bad := range map[string][]byte{
		"binary message": frame(true, 0x2, []byte("k8s\x00cluster.hypershift.openshift.io")),
		"masked frame":   {0x81, 0x80 | 4, 1, 2, 3, 4, 'x' ^ 1, 'y' ^ 2, 'z' ^ 3, '!' ^ 4},
		"reserved bits":  {0xC1, 1, 'x'},
	} {
		t.Run(name, func(t *testing.T) {
			b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
				conn, rw, err := http.NewResponseController(w).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				defer conn.Close()
				sum := sha1.Sum([]byte(r.Header.Get("Sec-Websocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
				rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
					base64.StdEncoding.EncodeToString(sum[:]) + "\r\n\r\n")
				rw.Write(bad)
				rw.Flush()
				io.Copy(io.Discard, rw) // until the proxy lets go
			})
			p := newProxy(t, b.URL)
			ws := dialWatch(t, p.URL, upstreamMachines+"?watch=true", nil)
			var event struct {
				Type   string        `json:"type"`
				Object metav1.Status `json:"object"`
			}
			got := receive(t, ws)
			if json.Unmarshal([]byte(got), &event) != nil || event.Type != "ERROR" || event.Object.Code != 500 {
				t.Errorf("got %q, want an ERROR event", got)
			}
			receiveEnd(t, ws)
		})
	}
}

// frame is one unmasked frame, as a server sends it.
func frame(fin bool, op byte, payload []byte) []byte {
	b := []byte{op, byte(len(payload))} // the tests' payloads are short
	if fin {
		b[0] |= 0x80
	}
	if len(payload) >= 126 {
		b = append([]byte{b[0], 126}, binary.BigEndian.AppendUint16(nil, uint16(len(payload)))...)
	}
	return append(b, payload...)
}

// readClientFrame reads one short masked frame, as a client sends it.
func readClientFrame(t *testing.T, r *bufio.Reader) (fin bool, op byte, payload []byte) {
	t.Helper()
	head := make([]byte, 6)
	if _, err := io.ReadFull(r, head); err != nil {
		t.Fatal(err)
	}
	if head[1]&0x80 == 0 || head[1]&0x7F > 125 {
		t.Fatalf("frame header %x: want a short masked frame", head)
	}
	payload = make([]byte, head[1]&0x7F)
	if _, err := io.ReadFull(r, payload); err != nil {
		t.Fatal(err)
	}
	for i := range payload {
		payload[i] ^= head[2+i%4]
	}
	return head[0]&0x80 != 0, head[0] & 0x0F, payload
}

// TestUpgradeHeadersOfOrdinaryRequests: a request that is no genuine upgrade is translated as if it had
// no upgrade headers, and reaches the backend without them.
func TestUpgradeHeadersOfOrdinaryRequests(t *testing.T) {
	const (
		privateConfigMap  = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Cluster","name":"c","uid":"u"}]}}`
		upstreamConfigMap = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","name":"c","uid":"u"}]}}`
	)
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.URL.Path, "machines") {
			io.WriteString(w, privateMachine)
			return
		}
		io.WriteString(w, privateConfigMap)
	})
	p := newProxy(t, b.URL)
	for _, header := range []http.Header{
		{"Connection": {"upgrade"}, "Upgrade": {"foo"}},
		{"Connection": {"keep-alive, Upgrade, X-Hop"}, "Upgrade": {"SPDY/3.1"}, "X-Hop": {"x"}},
		{"Connection": {"UPGRADE"}, "Upgrade": {"websocket"}, "Sec-Websocket-Version": {"13"}, "Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}},
		{"Upgrade": {"h2c"}},
	} {
		h := header.Clone()
		h.Set("Content-Type", "application/json")
		resp, data := backendtesting.Do(t, "POST", p.URL+"/api/v1/namespaces/ns/configmaps", upstreamConfigMap, h)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%v: status %d: %s", header, resp.StatusCode, data)
		}
		last := b.Last(t)
		backendtesting.EqualJSON(t, last.Body, privateConfigMap)
		backendtesting.EqualJSON(t, data, upstreamConfigMap)
		for _, name := range []string{"Upgrade", "Connection", "X-Hop"} {
			if v, ok := last.Header[name]; ok {
				t.Errorf("%v: the backend got %s: %q", header, name, v)
			}
		}

		resp, data = backendtesting.Do(t, "GET", p.URL+upstreamMachines+"/m1", "", header)
		if resp.StatusCode != http.StatusOK || b.Last(t).Path != privateMachines+"/m1" {
			t.Fatalf("%v: status %d, backend path %s", header, resp.StatusCode, b.Last(t).Path)
		}
		backendtesting.EqualJSON(t, data, upstreamMachine)
	}
}

func TestWebSocketWatchMetrics(t *testing.T) {
	b := backendtesting.New(t, serveWebSocketWatch(`{"type":"ADDED","object":`+privateMachine+`}`))
	m := metrics.New()
	h, err := server.New(server.Options{Backend: &rest.Config{Host: b.URL}, Routes: routestesting.Table(), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	// httptest.Server.Close does not wait for hijacked connections: the test waits for the handler.
	served := make(chan struct{}, 1)
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		served <- struct{}{}
	}))
	defer p.Close()
	open := map[string]string{"group": "cluster.x-k8s.io", "resource": "machines"}

	ws := dialWatch(t, p.URL, upstreamMachines+"?watch=true", nil)
	receive(t, ws)
	if got := metricstesting.Value(t, m.Registry(), "capi_proxy_open_watches", open); got != 1 {
		t.Errorf("open watches %v during the watch, want 1", got)
	}
	ws.Close()
	<-served
	if got := metricstesting.Value(t, m.Registry(), "capi_proxy_open_watches", open); got != 0 {
		t.Errorf("open watches %v after the watch, want 0", got)
	}
	labels := map[string]string{"class": "Mapped", "verb": "watch", "group": "cluster.x-k8s.io", "resource": "machines", "subresource": "", "code": "101"}
	if got := metricstesting.Value(t, m.Registry(), "capi_proxy_requests_total", labels); got != 1 {
		t.Errorf("requests %v %v, want 1", labels, got)
	}
}

// TestSidecarWebSocketWatch: in sidecar mode a websocket watch reaches the backend with the pod's
// credentials only, as any other request.
func TestSidecarWebSocketWatch(t *testing.T) {
	b := backendtesting.New(t, serveWebSocketWatch(`{"type":"ADDED","object":`+privateMachine+`}`))
	p := proxyFor(t, &rest.Config{Host: b.URL, BearerToken: "pod-token"}, auth.Sidecar)
	ws := dialWatch(t, p.URL, upstreamMachines+"?watch=true", http.Header{
		"Authorization":          {"Bearer client-token"},
		"Sec-Websocket-Protocol": {"base64url.bearer.authorization.k8s.io.Y2xpZW50LXRva2Vu"},
	})
	backendtesting.EqualJSON(t, []byte(receive(t, ws)), `{"type":"ADDED","object":`+upstreamMachine+`}`)
	last := b.Last(t)
	if a := last.Header.Values("Authorization"); len(a) != 1 || a[0] != "Bearer pod-token" {
		t.Errorf("the backend got Authorization %q", a)
	}
	if p := last.Header.Values("Sec-Websocket-Protocol"); len(p) != 0 {
		t.Errorf("the backend got the client's token as a subprotocol: %q", p)
	}
}
