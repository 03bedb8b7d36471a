package server_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/backendtesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/routestesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/server"
)

// TestGzipToClient: a translated answer over 128 KiB is gzip'ed for a client that accepts gzip, as
// kube-apiserver does; a small one, or one for a client that does not, is not.
func TestGzipToClient(t *testing.T) {
	padding := strings.Repeat("x", 150<<10)
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/big"):
			fmt.Fprintf(w, `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"big","annotations":{"p":%q}}}`, padding)
		case strings.HasSuffix(r.URL.Path, "/small"):
			io.WriteString(w, privateMachine)
		case r.URL.Query().Get("limit") == "big":
			fmt.Fprintf(w, `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineList","metadata":{},"items":[%s`, privateMachine)
			for range 2000 {
				fmt.Fprintf(w, ",%s", privateMachine)
			}
			io.WriteString(w, "]}")
		default:
			fmt.Fprintf(w, `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineList","metadata":{},"items":[%s]}`, privateMachine)
		}
	})
	p := newProxy(t, b.URL)
	// A transport that leaves the encoding to the test.
	hc := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	get := func(path, acceptEncoding string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodGet, p.URL+upstreamMachines+path, nil)
		if acceptEncoding != "" {
			req.Header.Set("Accept-Encoding", acceptEncoding)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var rd io.Reader = resp.Body
		if resp.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			rd = zr
		}
		data, err := io.ReadAll(rd)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(data)
	}
	for _, tc := range []struct {
		path, acceptEncoding string
		gzipped              bool
	}{
		{"/big", "gzip", true},
		{"/big", "", false},
		{"/big", "deflate, gzip", true},
		{"/small", "gzip", false},
		// A streamed list (its length not known beforehand) is gzip'ed once it is known to be larger than
		// the threshold, as kube-apiserver's deferred response writer does.
		{"", "gzip", false},
		{"?limit=big", "gzip", true},
		{"", "", false},
	} {
		resp, data := get(tc.path, tc.acceptEncoding)
		if gz := resp.Header.Get("Content-Encoding") == "gzip"; gz != tc.gzipped {
			t.Errorf("%q with Accept-Encoding %q: gzip'ed %v, want %v", tc.path, tc.acceptEncoding, gz, tc.gzipped)
		}
		if strings.Contains(data, "hypershift") || !strings.Contains(data, "cluster.x-k8s.io/v1beta2") {
			t.Errorf("%q: not translated: %.200s", tc.path, data)
		}
		if gz, vary := tc.gzipped, resp.Header.Get("Vary") == "Accept-Encoding"; gz != vary {
			t.Errorf("%q: Vary %q", tc.path, resp.Header.Values("Vary"))
		}
		if cl := resp.ContentLength; !tc.gzipped && (tc.path != "" || tc.acceptEncoding != "") && cl != int64(len(data)) {
			t.Errorf("%q: Content-Length %d for %d bytes", tc.path, cl, len(data))
		}
		// Compressed as it is sent, as kube-apiserver's gzip writer does: the length is not known before.
		if cl := resp.ContentLength; tc.gzipped && cl != -1 {
			t.Errorf("%q: gzip'ed with Content-Length %d", tc.path, cl)
		}
	}
}

// TestFollowedLogNotHeldBack: a followed log (a long-running stream, which kube-apiserver never
// gzips) reaches a client that accepts gzip as it is written, not once 128 KiB have gathered.
func TestFollowedLogNotHeldBack(t *testing.T) {
	release := make(chan struct{})
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "first line\n")
		w.(http.Flusher).Flush()
		<-release
	})
	defer close(release)
	p := newProxy(t, b.URL)
	hc := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	req, _ := http.NewRequest(http.MethodGet, p.URL+"/api/v1/namespaces/ns/pods/p/log?follow=true", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "first line\n" || resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("got %q, %v, Content-Encoding %q", line, err, resp.Header.Get("Content-Encoding"))
	}
}

// TestGzipPassThrough: a compressed answer for a client that accepts gzip, of a resource of no mapped
// group, reaches the client as the backend compressed it when it names no private group, and is
// translated (and compressed again) when it does.
func TestGzipPassThrough(t *testing.T) {
	item := func(i int, owner string) string {
		return fmt.Sprintf(`{"metadata":{"name":"s%d","namespace":"ns","ownerReferences":[{"apiVersion":%q,"kind":"Cluster","name":"c","uid":"u"}]},"data":{"k":"%s"}}`,
			i, owner, strings.Repeat("x", 200))
	}
	list := func(owner string) []byte {
		var b strings.Builder
		b.WriteString(`{"apiVersion":"v1","kind":"SecretList","metadata":{},"items":[`)
		for i := range 2000 {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(item(i, owner))
		}
		b.WriteString("]}")
		return []byte(b.String())
	}
	gzipped := func(data []byte) []byte {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		_, _ = zw.Write(data)
		_ = zw.Close()
		return buf.Bytes()
	}
	plain, owned := gzipped(list("apps/v1")), gzipped(list("cluster.hypershift.openshift.io/v1beta2"))
	// A protobuf answer naming no private group is passed through without being decoded: its bytes need
	// only the protobuf envelope's magic to be taken for protobuf.
	protobuf := gzipped(append([]byte("k8s\x00"), bytes.Repeat([]byte("\x0a\x02v1\x12\x0aSecretList"), 20000)...))
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		var body []byte
		switch r.URL.Path {
		case "/api/v1/namespaces/plain/secrets":
			body = plain
		case "/api/v1/namespaces/owned/secrets":
			body = owned
		case "/api/v1/namespaces/protobuf/secrets":
			w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
			body = protobuf
		default:
			fmt.Fprintf(w, `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineList","metadata":{},"items":[%s]}`, privateMachine)
			return
		}
		if r.Header.Get("Accept-Encoding") != "gzip" {
			t.Errorf("%s: the backend was asked for Accept-Encoding %q", r.URL.Path, r.Header.Get("Accept-Encoding"))
		}
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(body)
	})
	p := newProxy(t, b.URL)
	// An Accept-Encoding of the client's own: the transport leaves the answer compressed.
	get := func(path string) (*http.Response, []byte) {
		return backendtesting.Do(t, http.MethodGet, p.URL+path, "", http.Header{"Accept-Encoding": {"gzip"}})
	}
	resp, data := get("/api/v1/namespaces/plain/secrets")
	if !bytes.Equal(data, plain) || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("a list naming no private group: got %d bytes (Content-Encoding %q), want the backend's %d compressed bytes",
			len(data), resp.Header.Get("Content-Encoding"), len(plain))
	}
	resp, data = get("/api/v1/namespaces/protobuf/secrets")
	if !bytes.Equal(data, protobuf) || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("a protobuf list naming no private group: got %d bytes (Content-Encoding %q), want the backend's %d compressed bytes",
			len(data), resp.Header.Get("Content-Encoding"), len(protobuf))
	}
	resp, data = get("/api/v1/namespaces/owned/secrets")
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("a translated list over 128 KiB: Content-Encoding %q", resp.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	text, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(text, []byte("hypershift")) || bytes.Count(text, []byte(`"apiVersion":"cluster.x-k8s.io/v1beta2"`)) != 2000 {
		t.Errorf("a list naming a private group was not translated: %.300s", text)
	}
	// A list the proxy translates is asked for compressed (listsGzip), a single object of a mapped kind
	// uncompressed.
	get(upstreamMachines)
	if ae := b.Last(t).Header.Get("Accept-Encoding"); ae != "gzip" {
		t.Errorf("a list of a mapped kind: the backend was asked for Accept-Encoding %q, want gzip", ae)
	}
	get(upstreamMachines + "/m")
	if ae := b.Last(t).Header.Get("Accept-Encoding"); ae != "identity" {
		t.Errorf("a Machine: the backend was asked for Accept-Encoding %q, want identity", ae)
	}
}

// TestLoopbackIdentity: without GzipLoopback, a client on loopback that accepts gzip is answered
// uncompressed, a translated answer and a passed-through one alike, and the backend is asked for an
// uncompressed single object.
func TestLoopbackIdentity(t *testing.T) {
	padding := strings.Repeat("x", 150<<10)
	var askedGzip []string
	var mu sync.Mutex
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		askedGzip = append(askedGzip, r.URL.Path+" "+r.Header.Get("Accept-Encoding"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big","annotations":{"p":%q}}}`, padding)
	})
	h, err := server.New(server.Options{Backend: &rest.Config{Host: b.URL}, Routes: routestesting.Table()})
	if err != nil {
		t.Fatal(err)
	}
	p := httptest.NewServer(h)
	defer p.Close()
	hc := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	for _, path := range []string{upstreamMachines + "/big", "/api/v1/namespaces/ns/configmaps/big"} {
		req, _ := http.NewRequest(http.MethodGet, p.URL+path, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "" || len(data) < 150<<10 {
			t.Errorf("GET %s from loopback: %d, Content-Encoding %q, %d bytes", path, resp.StatusCode, resp.Header.Get("Content-Encoding"), len(data))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, asked := range askedGzip {
		if strings.Contains(asked, "gzip") {
			t.Errorf("the backend was asked %q for a loopback client", asked)
		}
	}
}
