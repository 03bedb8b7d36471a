// Package webhooktesting holds the attacks the webhooks' bound tests share (packages conversion and
// admission): slow clients against a real http.Server, and the wait for a state to be reached.
package webhooktesting

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Eventually polls cond until it holds, failing the test if it does not within a generous bound.
func Eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Slowloris opens a connection to srv and sends the headers of a POST to path declaring a body of
// declared bytes, and then the first bytes of the body, sent; it sends nothing more. The connection
// closes with the test.
func Slowloris(t *testing.T, srv *httptest.Server, path string, declared int, sent string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		path, declared, sent); err != nil {
		t.Fatal(err)
	}
	return conn
}

// PostReview posts body to srv's path and returns the answer's code and body.
func PostReview(t *testing.T, srv *httptest.Server, path, body string) (int, http.Header, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, data
}
