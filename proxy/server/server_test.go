package server_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/backendtesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/routestesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/server"
)

// newProxy serves the proxy in front of backendURL. The backend config carries credentials of its own,
// which the proxy must never use. Its clients are on loopback but stand for any (GzipLoopback).
func newProxy(t *testing.T, backendURL string) *httptest.Server {
	t.Helper()
	h, err := server.New(server.Options{
		Backend:      &rest.Config{Host: backendURL, BearerToken: "proxy-own-token", Username: "u", Password: "p"},
		Routes:       routestesting.Table(),
		GzipLoopback: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	p := httptest.NewServer(h)
	t.Cleanup(p.Close)
	return p
}

const (
	upstreamMachines = "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/machines"
	privateMachines  = "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/ns/machines"
	privateMachine   = `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m1","namespace":"ns"},` +
		`"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"AWSMachine","name":"a"}}}`
	upstreamMachine = `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"m1","namespace":"ns"},` +
		`"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"AWSMachine","name":"a"}}}`
)

func TestGet(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("ETag", `"x"`)
		w.Header().Add("Warning", `299 - "cluster.hypershift.openshift.io/v1beta2 Machine is fine"`)
		io.WriteString(w, privateMachine)
	})
	p := newProxy(t, b.URL)
	resp, data := backendtesting.Do(t, "GET", p.URL+upstreamMachines+"/m1?resourceVersion=0", "", http.Header{
		"Authorization":   {"Bearer client-token"},
		"Accept":          {"application/vnd.kubernetes.protobuf, application/json"},
		"Accept-Encoding": {"identity"},
	})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	backendtesting.EqualJSON(t, data, upstreamMachine)
	if cl := resp.Header.Get("Content-Length"); cl != strconv.Itoa(len(data)) {
		t.Errorf("Content-Length %q for %d bytes", cl, len(data))
	}
	if w := resp.Header.Get("Warning"); w != `299 - "cluster.x-k8s.io/v1beta2 Machine is fine"` {
		t.Errorf("Warning %q", w)
	}

	got := b.Last(t)
	if got.Path != privateMachines+"/m1" || got.RawQuery != "resourceVersion=0" {
		t.Errorf("backend got %s?%s", got.Path, got.RawQuery)
	}
	if a := got.Header.Values("Authorization"); !reflect.DeepEqual(a, []string{"Bearer client-token"}) {
		t.Errorf("backend got Authorization %q, want the client's only", a)
	}
	if a := got.Header.Get("Accept"); a != "application/json" {
		t.Errorf("backend got Accept %q", a)
	}
}

func TestNoCredentialsOfItsOwn(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":401,"reason":"Unauthorized"}`)
	})
	p := newProxy(t, b.URL)
	backendtesting.Do(t, "GET", p.URL+"/api/v1/namespaces", "", nil)
	if a := b.Last(t).Header.Get("Authorization"); a != "" {
		t.Errorf("backend got Authorization %q from a client that sent none", a)
	}
}

func TestListStreams(t *testing.T) {
	const n = 1000
	release := make(chan struct{})
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineList","metadata":{"resourceVersion":"5"},"items":[`)
		for i := 0; i < n; i++ {
			if i > 0 {
				io.WriteString(w, ",")
			}
			fmt.Fprintf(w, `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m%d","namespace":"ns"}}`, i)
			if i == n/2 {
				// Hold the rest back until the client has read the first item.
				w.(http.Flusher).Flush()
				<-release
			}
		}
		io.WriteString(w, `]}`)
	})
	p := newProxy(t, b.URL)
	// Without gzip: a client that accepts it gets a list below 128 KiB whole (as kube-apiserver's deferred
	// response writer does), see TestGzipToClient.
	hc := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	resp, err := hc.Get(p.URL + upstreamMachines + "?limit=1000")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got bytes.Buffer
	buf := make([]byte, 4096)
	first := `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"m0","namespace":"ns"}}`
	timeout := time.AfterFunc(5*time.Second, func() { close(release) })
	for !strings.Contains(got.String(), first) {
		k, err := resp.Body.Read(buf)
		got.Write(buf[:k])
		if err != nil {
			t.Fatalf("read %d bytes without the first item translated: %v", got.Len(), err)
		}
	}
	if !timeout.Stop() {
		t.Fatal("the first item arrived only after the backend sent the whole list")
	}
	close(release)
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	got.Write(rest)
	var list struct {
		APIVersion string            `json:"apiVersion"`
		Metadata   map[string]any    `json:"metadata"`
		Items      []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(got.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if list.APIVersion != "cluster.x-k8s.io/v1beta2" || len(list.Items) != n || list.Metadata["resourceVersion"] != "5" {
		t.Errorf("apiVersion %q, %d items, metadata %v", list.APIVersion, len(list.Items), list.Metadata)
	}
	if bytes.Contains(got.Bytes(), []byte("hypershift")) {
		t.Error("the list still names a private group")
	}
	if q := b.Last(t).RawQuery; q != "limit=1000" {
		t.Errorf("backend query %q", q)
	}
}

func TestWatchStreams(t *testing.T) {
	next := make(chan struct{})
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		fmt.Fprintln(w, `{"type":"ADDED","object":`+privateMachine+`}`)
		w.(http.Flusher).Flush()
		<-next
		fmt.Fprintln(w, `{"type":"BOOKMARK","object":{"kind":"Machine","apiVersion":"cluster.hypershift.openshift.io/v1beta2","metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}`)
		w.(http.Flusher).Flush()
		<-next
		fmt.Fprintln(w, `{"type":"ADDED","object":{"apiVersion":}}`) // malformed
	})
	p := newProxy(t, b.URL)
	for _, target := range []string{
		upstreamMachines + "?watch=true&sendInitialEvents=true&allowWatchBookmarks=true",
		"/apis/cluster.x-k8s.io/v1beta2/watch/namespaces/ns/machines",
	} {
		resp, err := http.Get(p.URL + target)
		if err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewReader(resp.Body)
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		backendtesting.EqualJSON(t, []byte(line), `{"type":"ADDED","object":`+upstreamMachine+`}`)
		next <- struct{}{}
		line, err = lines.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		backendtesting.EqualJSON(t, []byte(line), `{"type":"BOOKMARK","object":{"kind":"Machine","apiVersion":"cluster.x-k8s.io/v1beta2","metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}`)
		next <- struct{}{}
		line, _ = lines.ReadString('\n')
		var event struct {
			Type   string        `json:"type"`
			Object metav1.Status `json:"object"`
		}
		if err := json.Unmarshal([]byte(line), &event); err != nil || event.Type != "ERROR" || event.Object.Code != 500 {
			t.Errorf("after a malformed event: %q (%v), want an ERROR event", line, err)
		}
		resp.Body.Close()
		if got := b.Last(t).Path; !strings.HasPrefix(got, "/apis/cluster.hypershift.openshift.io/v1beta2/") {
			t.Errorf("backend path %s", got)
		}
	}
}

// TestCreateKeepsEveryByte: a create reaches the backend with its bytes as the client sent them but for the
// group-carrying values, and field validation is the backend's (the query is forwarded as it is).
func TestCreateKeepsEveryByte(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, privateMachine)
	})
	p := newProxy(t, b.URL)
	body := `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine", "metadata":{"name":"m1"},"bogus":true,` +
		`"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.x\u002dk8s.io","kind":"AWSMachine","name":"a"},` +
		`"enabled":false,"count":0,"text":"","nothing":null,"empty":{},"n":1.50e3}}`
	wantBackend := `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine", "metadata":{"name":"m1"},"bogus":true,` +
		`"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"AWSMachine","name":"a"},` +
		`"enabled":false,"count":0,"text":"","nothing":null,"empty":{},"n":1.50e3}}`
	for _, query := range []string{"", "?fieldValidation=Strict&dryRun=All", "?fieldValidation=Ignore"} {
		for _, contentType := range []string{"application/json", "application/json; charset=utf-8", ""} {
			h := http.Header{}
			if contentType != "" {
				h.Set("Content-Type", contentType)
			}
			resp, data := backendtesting.Do(t, "POST", p.URL+upstreamMachines+query, body, h)
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("%s: status %d: %s", query, resp.StatusCode, data)
			}
			backendtesting.EqualJSON(t, data, upstreamMachine)
			got := b.Last(t)
			if string(got.Body) != wantBackend {
				t.Errorf("%s %q: backend got\n%s\nwant\n%s", query, contentType, got.Body, wantBackend)
			}
			if got.ContentLength != int64(len(got.Body)) || got.Path != privateMachines || got.RawQuery != strings.TrimPrefix(query, "?") {
				t.Errorf("%s: backend got %s?%s with Content-Length %d for %d bytes", query, got.Path, got.RawQuery, got.ContentLength, len(got.Body))
			}
		}
	}
}

func TestUpdateStatusYAML(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, privateMachine)
	})
	p := newProxy(t, b.URL)
	body := "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Machine\nmetadata:\n  name: m1\nstatus:\n  phase: Running\n"
	resp, data := backendtesting.Do(t, "PUT", p.URL+upstreamMachines+"/m1/status", body, http.Header{"Content-Type": {"application/yaml"}})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	got := b.Last(t)
	if got.Path != privateMachines+"/m1/status" || got.Header.Get("Content-Type") != "application/json" {
		t.Errorf("backend got %s, Content-Type %q", got.Path, got.Header.Get("Content-Type"))
	}
	backendtesting.EqualJSON(t, got.Body, `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m1"},"status":{"phase":"Running"}}`)
}

func TestPatch(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Type") == "application/strategic-merge-patch+json" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnsupportedMediaType)
			io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml","reason":"UnsupportedMediaType","code":415}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, privateMachine)
	})
	p := newProxy(t, b.URL)
	for _, tc := range []struct {
		name, contentType, body, wantBackend string
		wantStatus                           int
	}{
		{"merge patch", "application/merge-patch+json",
			`{"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io"}},"metadata":{"labels":{"cluster.x-k8s.io/cluster-name":"c"}}}`,
			`{"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io"}},"metadata":{"labels":{"cluster.x-k8s.io/cluster-name":"c"}}}`, 200},
		{"json patch", "application/json-patch+json",
			`[{"op":"replace","path":"/spec/infrastructureRef/apiGroup","value":"infrastructure.cluster.x-k8s.io"},{"op":"move","from":"/spec/a","path":"/spec/b"}]`,
			`[{"op":"replace","path":"/spec/infrastructureRef/apiGroup","value":"infrastructure.cluster.hypershift.openshift.io"},{"op":"move","from":"/spec/a","path":"/spec/b"}]`, 200},
		{"apply patch", "application/apply-patch+yaml",
			"apiVersion: cluster.x-k8s.io/v1beta2\nkind: Machine\nmetadata:\n  name: m1\n",
			`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m1"}}`, 200},
		{"strategic merge patch is translated too (the backend refuses it for custom resources)", "application/strategic-merge-patch+json",
			`{"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io"}}}`,
			`{"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io"}}}`, 415},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, data := backendtesting.Do(t, "PATCH", p.URL+upstreamMachines+"/m1?fieldManager=capi&force=true", tc.body, http.Header{"Content-Type": {tc.contentType}})
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d: %s", resp.StatusCode, data)
			}
			got := b.Last(t)
			backendtesting.EqualJSON(t, got.Body, tc.wantBackend)
			if got.ContentLength != int64(len(got.Body)) || got.Header.Get("Content-Type") != tc.contentType || got.RawQuery != "fieldManager=capi&force=true" {
				t.Errorf("backend got Content-Length %d for %d bytes, Content-Type %q, query %q", got.ContentLength, len(got.Body), got.Header.Get("Content-Type"), got.RawQuery)
			}
			if tc.wantStatus == 200 {
				backendtesting.EqualJSON(t, data, upstreamMachine)
			}
		})
	}
}

// TestMalformedRequests: a body the proxy cannot parse reaches the backend as it is, so that the client
// gets the apiserver's own error; what the proxy must refuse, it answers itself.
func TestMalformedRequests(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the backend's own words","reason":"BadRequest","code":400}`)
	})
	p := newProxy(t, b.URL)
	for _, tc := range []struct {
		name, method, path, contentType, body string
		code                                  int
		// forwarded says the backend gets the body as it is.
		forwarded bool
	}{
		{"create with malformed JSON", "POST", upstreamMachines, "application/json", `{"apiVersion":"cluster.x-k8s.io/v1beta2",`, 400, true},
		{"create with trailing data", "POST", upstreamMachines, "application/json", `{"apiVersion":"cluster.x-k8s.io/v1beta2"} {}`, 400, true},
		{"create with an array", "POST", upstreamMachines, "application/json", `[1]`, 400, true},
		{"create with an unknown content type", "POST", upstreamMachines, "text/plain", `{"apiVersion":"cluster.x-k8s.io/v1beta2"}`, 400, true},
		{"update with malformed YAML", "PUT", upstreamMachines + "/m1", "application/yaml", "a: [\n", 400, true},
		{"create in protobuf", "POST", upstreamMachines, "application/vnd.kubernetes.protobuf", "k8s\x00", 400, true},
		{"merge patch malformed", "PATCH", upstreamMachines + "/m1", "application/merge-patch+json", `{"spec":{"x":"cluster.x-k8s.io"`, 400, true},
		{"json patch not an array", "PATCH", upstreamMachines + "/m1", "application/json-patch+json", `{"op":"add","path":"/a","value":"cluster.x-k8s.io"}`, 400, true},
		{"apply patch in CBOR", "PATCH", upstreamMachines + "/m1", "application/apply-patch+cbor", "\xa1", 400, true},
		{"secret with malformed JSON naming a group", "POST", "/api/v1/namespaces/ns/secrets", "application/json", `{"metadata":{"ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2"`, 400, true},
		{"secret in protobuf naming a group the proxy cannot decode", "POST", "/api/v1/namespaces/ns/secrets", "application/vnd.kubernetes.protobuf", "k8s\x00cluster.x-k8s.io/v1beta2", 415, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.contentType != "" {
				h.Set("Content-Type", tc.contentType)
			}
			before := b.Count()
			resp, data := backendtesting.Do(t, tc.method, p.URL+tc.path, tc.body, h)
			if resp.StatusCode != tc.code {
				t.Fatalf("status %d: %s", resp.StatusCode, data)
			}
			if s := backendtesting.Status(t, data); int(s.Code) != tc.code || s.Message == "" {
				t.Errorf("Status %+v", s)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if !tc.forwarded {
				if b.Count() != before {
					t.Error("the request reached the backend")
				}
				return
			}
			got := b.Last(t)
			if string(got.Body) != tc.body || got.Header.Get("Content-Type") != tc.contentType {
				t.Errorf("backend got %q of type %q, want the client's body as it is", got.Body, got.Header.Get("Content-Type"))
			}
		})
	}
}

func TestBodyTooLarge(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) { t.Errorf("the backend got %s %s", r.Method, r.URL) })
	h, err := server.New(server.Options{Backend: &rest.Config{Host: b.URL}, Routes: routestesting.Table(), MaxRequestBodyBytes: 10})
	if err != nil {
		t.Fatal(err)
	}
	p := httptest.NewServer(h)
	defer p.Close()
	resp, data := backendtesting.Do(t, "POST", p.URL+upstreamMachines, `{"apiVersion":"cluster.x-k8s.io/v1beta2"}`, http.Header{"Content-Type": {"application/json"}})
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
}

func TestBackendDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	p := newProxy(t, "http://"+addr)
	start := time.Now()
	resp, data := backendtesting.Do(t, "GET", p.URL+upstreamMachines, "", nil)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	if s := backendtesting.Status(t, data); s.Reason != metav1.StatusReasonServiceUnavailable || !strings.Contains(s.Message, "unavailable") {
		t.Errorf("Status %+v", s)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestBackendDialTimeout(t *testing.T) {
	// 192.0.2.0/24 (TEST-NET-1) is never routed: the dial hangs until the timeout.
	h, err := server.New(server.Options{Backend: &rest.Config{Host: "http://192.0.2.1:6443"}, Routes: routestesting.Table(), DialTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	start := time.Now()
	h.ServeHTTP(rec, httptest.NewRequest("GET", upstreamMachines, nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestBackendStatusTranslated(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Add("Warning", `299 - "cluster.hypershift.openshift.io/v1beta1 Machine is deprecated"`)
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"machines.cluster.hypershift.openshift.io \"m1\" not found","reason":"NotFound","details":{"name":"m1","group":"cluster.hypershift.openshift.io","kind":"machines"},"code":404}`)
	})
	p := newProxy(t, b.URL)
	for _, method := range []string{"GET", "DELETE"} {
		resp, data := backendtesting.Do(t, method, p.URL+upstreamMachines+"/m1", "", nil)
		if resp.StatusCode != 404 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		s := backendtesting.Status(t, data)
		if s.Message != `machines.cluster.x-k8s.io "m1" not found` || s.Details.Group != "cluster.x-k8s.io" || s.Reason != metav1.StatusReasonNotFound {
			t.Errorf("%s: Status %+v", method, s)
		}
		if w := resp.Header.Get("Warning"); w != `299 - "cluster.x-k8s.io/v1beta1 Machine is deprecated"` {
			t.Errorf("%s: Warning %q", method, w)
		}
	}
}

func TestMalformedBackendResponse(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{`)
	})
	p := newProxy(t, b.URL)
	for _, target := range []string{upstreamMachines + "/m1", upstreamMachines} {
		resp, data := backendtesting.Do(t, "GET", p.URL+target, "", nil)
		if resp.StatusCode != 500 {
			t.Fatalf("%s: status %d: %s", target, resp.StatusCode, data)
		}
		if s := backendtesting.Status(t, data); s.Reason != metav1.StatusReasonInternalError || !strings.Contains(s.Message, "translating the backend's response") {
			t.Errorf("%s: Status %+v", target, s)
		}
	}
}

func TestGzipFromBackend(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		// Compress whatever the request asked for.
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		io.WriteString(zw, privateMachine)
		zw.Close()
	})
	p := newProxy(t, b.URL)
	resp, data := backendtesting.Do(t, "GET", p.URL+upstreamMachines+"/m1", "", http.Header{"Accept-Encoding": {"gzip"}})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	backendtesting.EqualJSON(t, data, upstreamMachine)
}

func TestDiscovery(t *testing.T) {
	const v2Type = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"backend"`)
		switch r.URL.Path {
		case "/apis":
			w.Header().Set("Content-Type", v2Type)
			json.NewEncoder(w).Encode(apidiscoveryv2.APIGroupDiscoveryList{
				TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"},
				Items: []apidiscoveryv2.APIGroupDiscovery{
					{ObjectMeta: metav1.ObjectMeta{Name: "cluster.x-k8s.io"}, Versions: []apidiscoveryv2.APIVersionDiscovery{{Version: "v1beta2",
						Resources: []apidiscoveryv2.APIResourceDiscovery{{Resource: "clusters"}}}}},
					{ObjectMeta: metav1.ObjectMeta{Name: "cluster.hypershift.openshift.io"}, Versions: []apidiscoveryv2.APIVersionDiscovery{{Version: "v1beta2",
						Resources: []apidiscoveryv2.APIResourceDiscovery{{Resource: "machines", ShortNames: []string{"hsma"},
							ResponseKind: &metav1.GroupVersionKind{Group: "cluster.hypershift.openshift.io", Version: "v1beta2", Kind: "Machine"}}}}}},
				},
			})
		case "/apis/cluster.hypershift.openshift.io/v1beta2":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"cluster.hypershift.openshift.io/v1beta2","resources":[`+
				`{"name":"machines","singularName":"machine","namespaced":true,"kind":"Machine","verbs":["get"],"shortNames":["hsma"],"categories":["hypershift-cluster-api"]}]}`)
		default:
			w.WriteHeader(404)
		}
	})
	p := newProxy(t, b.URL)

	resp, data := backendtesting.Do(t, "GET", p.URL+"/apis", "", http.Header{
		"Accept":        {"application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList," + v2Type + ",application/json"},
		"If-None-Match": {`"old"`},
	})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	// Asked in protobuf first: answered in protobuf, as kube-apiserver answers, from the JSON the proxy asks for.
	if resp.Header.Get("ETag") != "" || resp.Header.Get("Content-Type") != "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" {
		t.Errorf("ETag %q, Content-Type %q", resp.Header.Get("ETag"), resp.Header.Get("Content-Type"))
	}
	got := b.Last(t)
	if got.Header.Get("If-None-Match") != "" || got.Header.Get("Accept") != v2Type+",application/json" {
		t.Errorf("backend got If-None-Match %q, Accept %q", got.Header.Get("If-None-Match"), got.Header.Get("Accept"))
	}
	discoveryScheme := runtime.NewScheme()
	if err := apidiscoveryv2.AddToScheme(discoveryScheme); err != nil {
		t.Fatal(err)
	}
	obj, _, err := serializer.NewCodecFactory(discoveryScheme).UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		t.Fatalf("decoding the protobuf answer: %v", err)
	}
	list := *obj.(*apidiscoveryv2.APIGroupDiscoveryList)
	// In JSON alone: JSON.
	if resp, jsonData := backendtesting.Do(t, "GET", p.URL+"/apis", "", http.Header{"Accept": {v2Type}}); resp.Header.Get("Content-Type") != v2Type {
		t.Errorf("JSON asked for: Content-Type %q %s", resp.Header.Get("Content-Type"), jsonData)
	} else if err := json.Unmarshal(jsonData, &apidiscoveryv2.APIGroupDiscoveryList{}); err != nil {
		t.Errorf("JSON asked for: %v", err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "cluster.x-k8s.io" || list.Items[0].Versions[0].Resources[0].Resource != "machines" ||
		!reflect.DeepEqual(list.Items[0].Versions[0].Resources[0].ShortNames, []string{"ma"}) {
		t.Errorf("got %s", data)
	}

	resp, data = backendtesting.Do(t, "GET", p.URL+"/apis/cluster.x-k8s.io/v1beta2", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	backendtesting.EqualJSON(t, data, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"cluster.x-k8s.io/v1beta2","resources":[`+
		`{"name":"machines","singularName":"machine","namespaced":true,"kind":"Machine","verbs":["get"],"shortNames":["ma"],"categories":["cluster-api"]}]}`)
	if cl := resp.Header.Get("Content-Length"); cl != strconv.Itoa(len(data)) {
		t.Errorf("Content-Length %q for %d bytes", cl, len(data))
	}
	if got := b.Last(t).Path; got != "/apis/cluster.hypershift.openshift.io/v1beta2" {
		t.Errorf("backend path %s", got)
	}
}

// TestNotFound: through the proxy the private groups do not exist, and neither does a path that would
// reach a mapped group only once cleaned: both are answered as kube-apiserver answers a group, version or
// resource it does not serve, without asking the backend.
func TestNotFound(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) { t.Errorf("the backend got %s %s", r.Method, r.URL) })
	p := newProxy(t, b.URL)
	for _, tc := range []struct{ method, path, contentType, body string }{
		{"GET", privateMachines + "/m1", "", ""},
		{"GET", privateMachines, "", ""},
		{"POST", privateMachines, "application/json", `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine"}`},
		{"DELETE", privateMachines, "", ""},
		{"GET", "/apis/cluster.hypershift.openshift.io", "", ""},
		{"GET", "/apis/cluster.hypershift.openshift.io/v1beta2", "", ""},
		{"GET", "/apis/cluster.hypershift.openshift.io/v1beta2/machines?watch=true", "", ""},
		{"GET", "/apis/infrastructure.cluster.hypershift.openshift.io/v1beta2/namespaces/ns/awsmachines", "", ""},
		{"GET", "/apis/cluster.x-k8s.io/v1beta2/../v1beta2/namespaces/ns/machines", "", ""},
	} {
		resp, data := backendtesting.Do(t, tc.method, p.URL+tc.path, tc.body, http.Header{"Content-Type": {tc.contentType}, "Accept": {"application/vnd.kubernetes.protobuf"}})
		if resp.StatusCode != http.StatusNotFound || string(data) != "404 page not found\n" ||
			resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || resp.Header.Get("Cache-Control") != "no-cache, private" {
			t.Errorf("%s %s: %d %v %q, want kube-apiserver's 404", tc.method, tc.path, resp.StatusCode, resp.Header, data)
		}
	}
	for _, path := range []string{"/openapi/v3/apis/cluster.hypershift.openshift.io/v1beta2", "/openapi/v3/apis/cluster.x-k8s.io/v1alpha3"} {
		resp, data := backendtesting.Do(t, "GET", p.URL+path, "", nil)
		if resp.StatusCode != http.StatusNotFound || len(data) != 0 {
			t.Errorf("GET %s: %d %q, want 404 with no body", path, resp.StatusCode, data)
		}
	}
}

func TestOtherResourcesMetadata(t *testing.T) {
	const (
		privateSecret  = `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"kubeconfig","ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Cluster","name":"c","uid":"u","controller":true}]},"data":{"value":"eA=="}}`
		upstreamSecret = `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"kubeconfig","ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","name":"c","uid":"u","controller":true}]},"data":{"value":"eA=="}}`
	)
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("Accept") == "application/vnd.kubernetes.protobuf":
			w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
			io.WriteString(w, "k8s\x00cluster.hypershift.openshift.io")
		case r.URL.Query().Get("watch") == "true":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintln(w, `{"type":"ADDED","object":`+privateSecret+`}`)
		case r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/secrets"):
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"apiVersion":"v1","kind":"SecretList","metadata":{},"items":[`+privateSecret+`]}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, privateSecret)
		}
	})
	p := newProxy(t, b.URL)

	_, data := backendtesting.Do(t, "POST", p.URL+"/api/v1/namespaces/ns/secrets", upstreamSecret, http.Header{"Content-Type": {"application/json"}})
	backendtesting.EqualJSON(t, b.Last(t).Body, privateSecret)
	backendtesting.EqualJSON(t, data, upstreamSecret)

	_, data = backendtesting.Do(t, "GET", p.URL+"/api/v1/namespaces/ns/secrets", "", nil)
	backendtesting.EqualJSON(t, data, `{"apiVersion":"v1","kind":"SecretList","metadata":{},"items":[`+upstreamSecret+`]}`)

	_, data = backendtesting.Do(t, "GET", p.URL+"/api/v1/namespaces/ns/secrets?watch=true", "", nil)
	backendtesting.EqualJSON(t, data, `{"type":"ADDED","object":`+upstreamSecret+`}`)

	_, data = backendtesting.Do(t, "PATCH", p.URL+"/api/v1/namespaces/ns/secrets/kubeconfig",
		`{"metadata":{"ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","name":"c","uid":"u"}]}}`,
		http.Header{"Content-Type": {"application/strategic-merge-patch+json"}})
	backendtesting.EqualJSON(t, b.Last(t).Body, `{"metadata":{"ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Cluster","name":"c","uid":"u"}]}}`)
	backendtesting.EqualJSON(t, data, upstreamSecret)

	// A client asking for protobuf of a built-in kind is answered as it asked (TestProtobufAnswers); what
	// the backend answers in JSON is translated in JSON.
	_, data = backendtesting.Do(t, "GET", p.URL+"/api/v1/namespaces/ns/secrets/kubeconfig", "",
		http.Header{"Accept": {"application/vnd.kubernetes.protobuf, application/json"}})
	if got := b.Last(t).Header.Get("Accept"); got != "application/vnd.kubernetes.protobuf,application/json" {
		t.Errorf("backend asked for %q, want the client's Accept", got)
	}
	backendtesting.EqualJSON(t, data, upstreamSecret)

	// A protobuf body naming a mapped group is transcoded to JSON and translated.
	secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "kubeconfig", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "cluster.x-k8s.io/v1beta2", Kind: "Cluster", Name: "c", UID: "u", Controller: ptr.To(true)}}},
		Data: map[string][]byte{"value": []byte("x")}}
	info, _ := runtime.SerializerInfoForMediaType(clientscheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	var pb bytes.Buffer
	if err := info.Serializer.Encode(secret, &pb); err != nil {
		t.Fatal(err)
	}
	backendtesting.Do(t, "POST", p.URL+"/api/v1/namespaces/ns/secrets", pb.String(), http.Header{"Content-Type": {runtime.ContentTypeProtobuf}})
	last := b.Last(t)
	if last.Header.Get("Content-Type") != "application/json" {
		t.Errorf("backend got Content-Type %q, want JSON", last.Header.Get("Content-Type"))
	}
	if !strings.Contains(string(last.Body), `"apiVersion":"cluster.hypershift.openshift.io/v1beta2"`) {
		t.Errorf("protobuf body not translated: %s", last.Body)
	}
}

func TestUpgradePassThrough(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "SPDY/3.1" || r.URL.Path != "/api/v1/namespaces/ns/pods/p/exec" || r.Header.Get("Authorization") != "Bearer client-token" {
			t.Errorf("backend got %s %v", r.URL, r.Header)
			w.WriteHeader(400)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n")
		rw.Flush()
		line, _ := rw.ReadString('\n')
		rw.WriteString("echo " + line)
		rw.Flush()
	})
	p := newProxy(t, b.URL)
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(conn, "POST /api/v1/namespaces/ns/pods/p/exec?command=sh HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer client-token\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nContent-Length: 0\r\n\r\n")
	rd := bufio.NewReader(conn)
	resp, err := http.ReadResponse(rd, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d", resp.StatusCode)
	}
	fmt.Fprintf(conn, "ping\n")
	line, err := rd.ReadString('\n')
	if err != nil || line != "echo ping\n" {
		t.Errorf("read %q, %v", line, err)
	}
}

func TestTableAndMetadataAccept(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
		io.WriteString(w, `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{},"items":[`+
			`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"m","ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineSet","name":"ms","uid":"u"}]}}]}`)
	})
	p := newProxy(t, b.URL)
	accept := "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
	_, data := backendtesting.Do(t, "GET", p.URL+upstreamMachines, "", http.Header{"Accept": {accept}})
	backendtesting.EqualJSON(t, data, `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{},"items":[`+
		`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"m","ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineSet","name":"ms","uid":"u"}]}}]}`)
	if a := b.Last(t).Header.Get("Accept"); a != accept {
		t.Errorf("backend got Accept %q", a)
	}
}

// TestConnectSubresourcesUntouched: what a pod's or service's proxy answers is not an API object, even in
// JSON naming a private group; it reaches the client as the backend sent it, and so does the request.
func TestConnectSubresourcesUntouched(t *testing.T) {
	const answer = `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2"}]}}`
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	})
	p := newProxy(t, b.URL)
	const sent = `{"metadata":{"ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2"}]}}`
	for _, path := range []string{"/api/v1/namespaces/ns/services/s/proxy/x", "/api/v1/namespaces/ns/pods/p/proxy/x", "/api/v1/nodes/n/proxy/stats/summary"} {
		resp, data := backendtesting.Do(t, "POST", p.URL+path, sent, http.Header{"Content-Type": {"application/json"}})
		if resp.StatusCode != http.StatusOK || string(data) != answer {
			t.Errorf("POST %s: %d %s, want the backend's answer as it is", path, resp.StatusCode, data)
		}
		if got := b.Last(t); string(got.Body) != sent {
			t.Errorf("POST %s: the backend got %s, want the request as it is", path, got.Body)
		}
	}
}

// TestPrivateAPIVersionUnserved: through the proxy the private groups do not exist, so an object whose
// apiVersion names one goes to the backend (whose path is the private group) in a group it cannot serve
// (translate.ToUnserved), in every encoding, for the backend to refuse it as kube-apiserver refuses an
// object of another group than its path's; its message names the group the client sent.
func TestPrivateAPIVersionUnserved(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		var obj struct {
			APIVersion string `json:"apiVersion"`
		}
		if err := json.Unmarshal(data, &obj); err != nil {
			t.Errorf("the backend got %s %s with %q: %v", r.Method, r.URL, data, err)
		}
		if obj.APIVersion != "cluster.hypershift.openshift.io.invalid/v1beta2" {
			t.Errorf("the backend got %s %s with apiVersion %q", r.Method, r.URL, obj.APIVersion)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		msg, _ := json.Marshal(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (cluster.hypershift.openshift.io/v1beta2)", obj.APIVersion))
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":%s,"reason":"BadRequest","code":400}`, msg)
	})
	p := newProxy(t, b.URL)
	const want = "the API version in the data (cluster.hypershift.openshift.io/v1beta2) does not match the expected API version (cluster.x-k8s.io/v1beta2)"
	for _, tc := range []struct{ method, path, contentType, body string }{
		{"POST", upstreamMachines, "application/json", `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m"}}`},
		{"POST", upstreamMachines, "application/json", `{"apiVersion":"cluster.hypershift.openshift\u002eio/v1beta2","kind":"Machine","metadata":{"name":"m"}}`},
		{"PUT", upstreamMachines + "/m/status", "application/yaml", "apiVersion: \"cluster.hypershift.openshift\\x2eio/v1beta2\"\nkind: Machine\n"},
		{"POST", upstreamMachines, "", `{"kind":"Machine","apiVersion":"cluster.hypershift.openshift.io/v1beta2"}`},
	} {
		h := http.Header{}
		if tc.contentType != "" {
			h.Set("Content-Type", tc.contentType)
		}
		resp, data := backendtesting.Do(t, tc.method, p.URL+tc.path, tc.body, h)
		if s := backendtesting.Status(t, data); resp.StatusCode != http.StatusBadRequest || s.Message != want {
			t.Errorf("%s %s %q: %d %s", tc.method, tc.path, tc.body, resp.StatusCode, data)
		}
	}
}

// TestUnroutedAnsweredByTheBackend: what no route serves in a mapped group is asked of the backend at the
// same path in the private group, where nothing serves it either, so that the client gets the backend's
// own 404 or 403 with its headers; writes go as dry runs, and an answer that is not an error (a private
// CRD serving what upstream does not) becomes kube-apiserver's 404.
func TestUnroutedAnsweredByTheBackend(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Kubernetes-Pf-Flowschema-Uid", "fs")
		switch {
		case strings.Contains(r.URL.Path, "/served-anyway"):
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, privateMachine)
		case strings.Contains(r.URL.Path, "/forbidden"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden.cluster.hypershift.openshift.io is forbidden","reason":"Forbidden","details":{"group":"cluster.hypershift.openshift.io","kind":"forbidden"},"code":403}`)
		default:
			http.NotFound(w, r)
		}
	})
	p := newProxy(t, b.URL)
	for _, tc := range []struct {
		method, path, backendPath, backendQuery string
		code                                    int
		body                                    string
	}{
		{"GET", "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/widgets/w", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/ns/widgets/w", "", 404, "404 page not found\n"},
		{"GET", "/apis/cluster.x-k8s.io/v1alpha3", "/apis/cluster.hypershift.openshift.io/v1alpha3", "", 404, "404 page not found\n"},
		{"POST", "/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/widgets", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/ns/widgets", "dryRun=All", 404, "404 page not found\n"},
		{"DELETE", "/apis/cluster.x-k8s.io/v1beta2/served-anyway?propagationPolicy=Orphan", "/apis/cluster.hypershift.openshift.io/v1beta2/served-anyway", "dryRun=All&propagationPolicy=Orphan", 404, "404 page not found\n"},
		{"GET", "/apis/cluster.x-k8s.io/v1beta2/served-anyway", "/apis/cluster.hypershift.openshift.io/v1beta2/served-anyway", "", 404, "404 page not found\n"},
		{"GET", "/apis/cluster.x-k8s.io/v1beta2/forbidden", "/apis/cluster.hypershift.openshift.io/v1beta2/forbidden", "", 403,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden.cluster.x-k8s.io is forbidden","reason":"Forbidden","details":{"group":"cluster.x-k8s.io","kind":"forbidden"},"code":403}`},
	} {
		resp, data := backendtesting.Do(t, tc.method, p.URL+tc.path, "", nil)
		if resp.StatusCode != tc.code || string(data) != tc.body || resp.Header.Get("X-Kubernetes-Pf-Flowschema-Uid") != "fs" {
			t.Errorf("%s %s: %d %v %q", tc.method, tc.path, resp.StatusCode, resp.Header, data)
		}
		if got := b.Last(t); got.Path != tc.backendPath || got.RawQuery != tc.backendQuery {
			t.Errorf("%s %s: the backend got %s?%s", tc.method, tc.path, got.Path, got.RawQuery)
		}
	}
}

// TestYAMLAnswers: an answer kube-apiserver would write in YAML is asked for in JSON, translated, and
// written as kube-apiserver writes YAML (the YAML form of its JSON), errors included.
func TestYAMLAnswers(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("Accept"); a != "application/json" {
			t.Errorf("the backend got Accept %q", a)
		}
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/missing") {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"machines.cluster.hypershift.openshift.io \"missing\" not found","reason":"NotFound","details":{"name":"missing","group":"cluster.hypershift.openshift.io","kind":"machines"},"code":404}`)
			return
		}
		io.WriteString(w, privateMachine)
	})
	p := newProxy(t, b.URL)
	for path, want := range map[string]string{
		"/m1":      upstreamMachine,
		"/missing": `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"machines.cluster.x-k8s.io \"missing\" not found","reason":"NotFound","details":{"name":"missing","group":"cluster.x-k8s.io","kind":"machines"},"code":404}`,
	} {
		resp, data := backendtesting.Do(t, "GET", p.URL+upstreamMachines+path, "", http.Header{"Accept": {"application/yaml"}})
		wantYAML, err := yaml.JSONToYAML([]byte(want))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Header.Get("Content-Type") != "application/yaml" || string(data) != string(wantYAML) {
			t.Errorf("GET %s in YAML: %s\n%s\nwant\n%s", path, resp.Header.Get("Content-Type"), data, wantYAML)
		}
	}
}

// TestJSONPatchResolvedAgainstTheObject: a JSON patch copying a value between fields that name groups
// differently is resolved against the object the backend holds, read with the client's credentials: the
// backend gets the translated value and a resourceVersion guard, never the copy of a private value into a
// field of no group; where the object cannot be read, a patch that fails.
func TestJSONPatchResolvedAgainstTheObject(t *testing.T) {
	const object = `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m1","namespace":"ns","resourceVersion":"5"},` +
		`"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"AWSMachine","name":"a"}}}`
	var patched []byte
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "Bearer client" {
			t.Errorf("%s %s with Authorization %q", r.Method, r.URL.Path, got)
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == privateMachines+"/m1":
			io.WriteString(w, object)
		case r.Method == http.MethodPatch && r.URL.Path == privateMachines+"/m1":
			patched, _ = io.ReadAll(r.Body)
			io.WriteString(w, object)
		default:
			if r.Method == http.MethodPatch {
				patched, _ = io.ReadAll(r.Body)
			}
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"machines.cluster.hypershift.openshift.io \"m2\" not found","reason":"NotFound","code":404}`)
		}
	})
	p := newProxy(t, b.URL)
	h := http.Header{"Content-Type": {"application/json-patch+json"}, "Authorization": {"Bearer client"}}
	resp, data := backendtesting.Do(t, http.MethodPatch, p.URL+upstreamMachines+"/m1", `[{"op":"copy","from":"/spec/infrastructureRef","path":"/spec/copy"}]`, h)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
	want := `[{"op":"add","from":"/spec/infrastructureRef","path":"/spec/copy","value":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"AWSMachine","name":"a"}},` +
		`{"op":"test","path":"/metadata/resourceVersion","value":"5"}]`
	if string(patched) != want {
		t.Errorf("the backend got\n%s\nwant\n%s", patched, want)
	}

	patched = nil
	resp, data = backendtesting.Do(t, http.MethodPatch, p.URL+upstreamMachines+"/m2", `[{"op":"copy","from":"/spec/infrastructureRef","path":"/spec/copy"}]`, h)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a missing object: %d %s", resp.StatusCode, data)
	}
	if want := `[{"op":"test","from":"/spec/infrastructureRef","path":"","value":null}]`; string(patched) != want {
		t.Errorf("the backend got\n%s\nwant\n%s", patched, want)
	}
}
