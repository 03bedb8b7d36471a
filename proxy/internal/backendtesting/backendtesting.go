// Package backendtesting is a fake kube-apiserver for the proxy's tests, and the client helpers those tests
// share: send a request, read a Kubernetes Status, compare JSON values.
package backendtesting

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

// Request is a request as the backend received it: its body read whole, its header cloned.
type Request struct {
	Method, Path, RawQuery string
	Header                 http.Header
	Body                   []byte
	// ContentLength is the request's, as net/http reports it (-1: unknown).
	ContentLength int64
}

// Backend is a fake kube-apiserver: it records every request and answers with the test's handler.
type Backend struct {
	*httptest.Server
	mu       sync.Mutex
	requests []Request
}

// New serves handler on a loopback httptest server, closed when the test ends. The handler gets the request
// with its body intact (the backend reads it for the record first).
func New(t testing.TB, handler http.HandlerFunc) *Backend {
	t.Helper()
	b := &Backend{}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		b.mu.Lock()
		b.requests = append(b.requests, Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery,
			Header: r.Header.Clone(), Body: data, ContentLength: r.ContentLength})
		b.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(data))
		handler(w, r)
	}))
	t.Cleanup(b.Close)
	return b
}

// Last is the latest request the backend received; the test fails if there was none.
func (b *Backend) Last(t testing.TB) Request {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.requests) == 0 {
		t.Fatal("the backend got no request")
	}
	return b.requests[len(b.requests)-1]
}

// Count is the number of requests the backend received.
func (b *Backend) Count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.requests)
}

// Requests are the requests the backend received, in the order it received them.
func (b *Backend) Requests() []Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Request(nil), b.requests...)
}

// Do sends method url with body (none if empty) and header through http.DefaultClient and returns the
// response with its body read whole; the test fails on a transport error.
func Do(t testing.TB, method, url string, body string, header http.Header) (*http.Response, []byte) {
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

// Status decodes data as a JSON metav1.Status; the test fails unless it is one (kind Status).
func Status(t testing.TB, data []byte) metav1.Status {
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

// EqualJSON fails the test (Errorf) unless got and want are the same JSON value; either not being JSON is fatal.
func EqualJSON(t testing.TB, got []byte, want string) {
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
