package server_test

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/backendtesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/routestesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/server"
)

func TestResponseHeaderTimeout(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") == "true" {
			// A watch's headers may come late (they do not with kube-apiserver): it is not bounded.
			time.Sleep(600 * time.Millisecond)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintln(w, `{"type":"ADDED","object":`+privateMachine+`}`)
			return
		}
		<-r.Context().Done() // never answers
	})
	h, err := server.New(server.Options{Backend: &rest.Config{Host: b.URL}, Routes: routestesting.Table(), ResponseHeaderTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p := httptest.NewServer(h)
	defer p.Close()

	resp, data := backendtesting.Do(t, "GET", p.URL+upstreamMachines+"/m1", "", nil)
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	if s := backendtesting.Status(t, data); s.Reason != metav1.StatusReasonTimeout || !strings.Contains(s.Message, "no response headers") {
		t.Errorf("Status %+v", s)
	}

	resp, data = backendtesting.Do(t, "GET", p.URL+upstreamMachines+"?watch=true", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch: status %d: %s", resp.StatusCode, data)
	}
	backendtesting.EqualJSON(t, data, `{"type":"ADDED","object":`+upstreamMachine+`}`)
}

func TestDeclaredBodyTooLarge(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) })
	h, err := server.New(server.Options{Backend: &rest.Config{Host: b.URL}, Routes: routestesting.Table(), MaxRequestBodyBytes: 10})
	if err != nil {
		t.Fatal(err)
	}
	p := httptest.NewServer(h)
	defer p.Close()
	big := strings.Repeat("x", 11)
	for _, path := range []string{
		upstreamMachines,
		"/api/v1/namespaces/ns/configmaps",
	} {
		resp, data := backendtesting.Do(t, "POST", p.URL+path, big, http.Header{"Content-Type": {"application/vnd.kubernetes.protobuf"}})
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("POST %s: status %d: %s", path, resp.StatusCode, data)
		} else if s := backendtesting.Status(t, data); s.Reason != metav1.StatusReasonRequestEntityTooLarge {
			t.Errorf("POST %s: Status %+v", path, s)
		}
	}
	if n := b.Count(); n != 0 {
		t.Errorf("the backend got %d requests", n)
	}
	// kube-apiserver does not bound what it proxies to a pod or service.
	resp, data := backendtesting.Do(t, "POST", p.URL+"/api/v1/namespaces/ns/services/s/proxy/upload", big, nil)
	if resp.StatusCode != http.StatusCreated || b.Count() != 1 {
		t.Errorf("service proxy: status %d: %s", resp.StatusCode, data)
	}
}

// TestWatchEndsCleanlyWhenTheBackendBreaksOff: a backend that drops a watch connection (it restarted)
// mid-event ends the client's watch at the last whole event, without an error, as a watch that timed
// out ends.
func TestWatchEndsCleanlyWhenTheBackendBreaksOff(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"type":"ADDED","object":`+privateMachine+`}`)
		fmt.Fprint(w, `{"type":"MODIFIED","object":{"apiVersion":"cluster.hy`)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection drops without the final chunk
	})
	p := newProxy(t, b.URL)
	resp, err := http.Get(p.URL + upstreamMachines + "?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("the client's watch broke off (%v) after %q, want a clean end", err, data)
	}
	backendtesting.EqualJSON(t, data, `{"type":"ADDED","object":`+upstreamMachine+`}`)
}

// settledGoroutines waits until the number of goroutines is at most max, and returns it.
func settledGoroutines(t *testing.T, max int) int {
	t.Helper()
	n := 0
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		n = runtime.NumGoroutine()
		return n <= max, nil
	})
	if err != nil {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines remain, want at most %d:\n%s", n, max, buf[:runtime.Stack(buf, true)])
	}
	return n
}

// TestSlowBackendNoGoroutineGrowth: requests to a backend that answers slowly or never, given up by
// their clients, leave nothing behind. Counted, not timed: after each round of requests the number of
// goroutines must settle back within a bound that a leak of one goroutine per request would break after
// the first rounds.
func TestSlowBackendNoGoroutineGrowth(t *testing.T) {
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Query().Get("watch") == "true":
			// A slow watch: one event, then nothing.
			fmt.Fprintln(w, `{"type":"ADDED","object":`+privateMachine+`}`)
			w.(http.Flusher).Flush()
		case strings.HasSuffix(r.URL.Path, "/machines"):
			// A slow list: its head, then nothing.
			fmt.Fprint(w, `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineList","metadata":{},"items":[`+privateMachine)
			w.(http.Flusher).Flush()
		}
		// Every request hangs until its client (the proxy) gives up.
		<-r.Context().Done()
	})
	p := newProxy(t, b.URL)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 200}}

	const perRound, rounds = 50, 4
	targets := []string{upstreamMachines + "/m1", upstreamMachines, upstreamMachines + "?watch=true"}
	before := runtime.NumGoroutine()
	// A leak of one goroutine per request grows by len(targets)*perRound (150) per round. What may stay
	// is bounded: keep-alive connections the proxy's backend transport keeps idle (client-go's 25 per
	// host, each a read and a write loop here and a server goroutine in the backend; the next round
	// reuses them), and slack for connections still closing on a busy machine.
	const idleConns = 25
	bound := before + 3*idleConns + 40
	for round := 0; round < rounds; round++ {
		var wg sync.WaitGroup
		for i := 0; i < perRound; i++ {
			for _, target := range targets {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// The client gives up after 200ms, whatever it got by then.
					ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
					defer cancel()
					req, _ := http.NewRequestWithContext(ctx, "GET", p.URL+target, nil)
					resp, err := client.Do(req)
					if err != nil {
						return
					}
					defer resp.Body.Close()
					_, _ = io.Copy(io.Discard, resp.Body)
				}()
			}
		}
		wg.Wait()
		client.CloseIdleConnections()
		n := settledGoroutines(t, bound)
		t.Logf("round %d: %d goroutines (%d before)", round, n, before)
	}
}

// TestStreamMemory: a list far larger than memory is allowed to grow streams through the proxy to a
// slow client without being held: the heap stays bounded while 64 MiB pass.
func TestStreamMemory(t *testing.T) {
	item := `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m","namespace":"ns",` +
		`"annotations":{"pad":"` + strings.Repeat("x", 4000) + `"}},"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"AWSMachine","name":"a"}}}`
	const total = 64 << 20
	items := total / len(item)
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineList","metadata":{},"items":[`)
		for i := 0; i < items; i++ {
			if i > 0 {
				io.WriteString(w, ",")
			}
			io.WriteString(w, item)
		}
		io.WriteString(w, "]}")
	})
	p := newProxy(t, b.URL)

	runtime.GC()
	var peak uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	resp, err := http.Get(p.URL + upstreamMachines)
	if err != nil {
		t.Fatal(err)
	}
	// A slow client: small reads.
	n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{resp.Body}, make([]byte, 4096))
	resp.Body.Close()
	close(stop)
	<-sampled
	if err != nil || n < total*9/10 { // the translation shortens the group names
		t.Fatalf("read %d bytes: %v", n, err)
	}
	t.Logf("%d MiB streamed, peak heap in use %d MiB", n>>20, peak>>20)
	if peak > 32<<20 {
		t.Errorf("peak heap in use %d MiB while streaming %d MiB: the stream is held in memory", peak>>20, n>>20)
	}
}

// TestBackendStreamResetIsPassedOn: a backend that resets a request's HTTP/2 stream after it was sent (a
// panicking kube-apiserver handler) has the client's stream reset too, not answered with a Status; a
// backend that cannot be reached is still answered 503.
func TestBackendStreamResetIsPassedOn(t *testing.T) {
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		panic("a handler's bug")
	}))
	backend.EnableHTTP2 = true
	backend.Config.ErrorLog = log.New(io.Discard, "", 0)
	backend.StartTLS()
	t.Cleanup(backend.Close)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: backend.Certificate().Raw})
	h, err := server.New(server.Options{Backend: &rest.Config{Host: backend.URL, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}},
		Routes: routestesting.Table()})
	if err != nil {
		t.Fatal(err)
	}
	p := httptest.NewUnstartedServer(h)
	p.EnableHTTP2 = true
	p.StartTLS()
	t.Cleanup(p.Close)

	resp, err := p.Client().Post(p.URL+"/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/machines", protobufType, strings.NewReader("k8s\x00junk"))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("the client got %d, want its stream reset", resp.StatusCode)
	}
	if !strings.Contains(err.Error(), "INTERNAL_ERROR") {
		t.Errorf("the client got %v, want a stream reset with INTERNAL_ERROR", err)
	}

	backend.Close()
	resp, err = p.Client().Get(p.URL + "/api/v1/namespaces")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a backend that is down: %d, want 503", resp.StatusCode)
	}
}
