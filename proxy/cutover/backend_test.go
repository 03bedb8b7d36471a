package cutover_test

// The fake kube-apiserver and the client helpers of the tests, which serve the cut-over in package
// server's handler chain (as package server's own tests do).

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// recorded is a request as the backend received it.
type recorded struct {
	Method, Path, RawQuery string
	Header                 http.Header
	Body                   []byte
	ContentLength          int64
}

// backend is a fake kube-apiserver: it records every request and answers with the test's handler.
type backend struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recorded
}

func newBackend(t *testing.T, handler http.HandlerFunc) *backend {
	t.Helper()
	b := &backend{}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		b.mu.Lock()
		b.requests = append(b.requests, recorded{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery,
			Header: r.Header.Clone(), Body: data, ContentLength: r.ContentLength})
		b.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(data))
		handler(w, r)
	}))
	t.Cleanup(b.Close)
	return b
}

func (b *backend) last(t *testing.T) recorded {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.requests) == 0 {
		t.Fatal("the backend got no request")
	}
	return b.requests[len(b.requests)-1]
}

func (b *backend) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.requests)
}

func do(t *testing.T, method, url string, body string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, data
}

func status(t *testing.T, data []byte) metav1.Status {
	t.Helper()
	var s metav1.Status
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("not a Status: %s: %v", data, err)
	}
	if s.Kind != "Status" {
		t.Fatalf("not a Status: %s", data)
	}
	return s
}

func equalJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want invalid JSON %s: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
}
