package bench

// What an open watch costs in memory: N watches of Machines opened over HTTP/2 and TLS, each with one
// event read, through the proxy's handler, through a bare httputil.ReverseProxy, and straight at the
// in-process backend; the hop's bytes per open watch are the leg's heap and stacks in use (after a
// collection) less the direct leg's, so that the client's and the backend's share cancels out:
//
//	go test -run '^$' -bench WatchMemory ./tests/bench/

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime"
	"sync"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/openshift/hypershift-capi-proxy/proxy/server"
	"github.com/openshift/hypershift-capi-proxy/tests/bench/machines"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

// openWatches is how many watches each leg of BenchmarkWatchMemory opens.
const openWatches = 500

// watchBackend is an HTTP/2 TLS server that answers every watch with one MODIFIED event of a 6.1 KB
// Machine (in the private group), flushed, and then holds it open until the client goes away, as
// kube-apiserver holds a watch without events.
func watchBackend(b *testing.B) *httptest.Server {
	event := fmt.Appendf(nil, `{"type":"MODIFIED","object":%s}`+"\n", machines.Object("machine-1", "bench", true))
	s := httptest.NewUnstartedServer(serving(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(event)
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
	}))
	s.EnableHTTP2 = true
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.StartTLS()
	b.Cleanup(s.Close)
	return s
}

// handlers counts the requests the servers of BenchmarkWatchMemory are serving (serving), so that a
// measurement starts once the last one's handlers have returned.
var handlers sync.WaitGroup

// serving is h, counted in handlers.
func serving(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlers.Add(1)
		defer handlers.Done()
		h(w, r)
	})
}

// serveTLS serves h over HTTP/2 and TLS.
func serveTLS(b *testing.B, h http.Handler) *httptest.Server {
	s := httptest.NewUnstartedServer(serving(h.ServeHTTP))
	s.EnableHTTP2 = true
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.StartTLS()
	b.Cleanup(s.Close)
	return s
}

// memory is the heap and the goroutine stacks in use (runtime.MemStats: HeapInuse, StackInuse), in bytes.
type memory struct{ heap, stacks int64 }

func (m memory) minus(o memory) memory { return memory{m.heap - o.heap, m.stacks - o.stacks} }
func (m memory) plus(o memory) memory  { return memory{m.heap + o.heap, m.stacks + o.stacks} }

// inUse is the memory in use after a few collections, as a proxy that has run a while holds it: the
// second empties the sync.Pools' victim caches, and each halves the stacks of goroutines that use less
// than a quarter of theirs (the runtime's stack shrinking), as the collections every two minutes at
// least of a long-running process do.
func inUse() memory {
	for range 4 {
		runtime.GC()
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return memory{int64(m.HeapInuse), int64(m.StackInuse)}
}

// watchesInUse opens n watches of url with client, each read up to the end of its first event, and
// returns the memory in use (inUse) with them open, less that in use before; then it closes them.
func watchesInUse(b *testing.B, client *http.Client, url string, n int) memory {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	before := inUse()
	opened := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			resp, err := client.Do(req)
			if err != nil {
				opened <- err
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				opened <- fmt.Errorf("status %d", resp.StatusCode)
				return
			}
			r := bufio.NewReaderSize(resp.Body, 16<<10)
			_, err = r.ReadSlice('\n')
			opened <- err
			_, _ = io.Copy(io.Discard, r) // until the watch is closed
		}()
	}
	for range n {
		if err := <-opened; err != nil {
			b.Fatal(err)
		}
	}
	after := inUse()
	cancel()
	wg.Wait()
	handlers.Wait()
	client.CloseIdleConnections()
	return after.minus(before)
}

// BenchmarkWatchMemory: the bytes an open watch costs the hop in front of the backend (the proxy, a bare
// reverse proxy), heap and stacks, after a collection: B/watch, of which stack-B/watch are goroutine
// stacks. The leg's own total per watch, client and backend included, is total-B/watch, and the direct
// leg's, which the hop's is measured against, direct-B/watch.
func BenchmarkWatchMemory(b *testing.B) {
	backend := watchBackend(b)
	backendURL, _ := url.Parse(backend.URL)
	pool := x509.NewCertPool()
	pool.AddCert(backend.Certificate())

	bare := httputil.NewSingleHostReverseProxy(backendURL)
	bare.FlushInterval = -1
	bare.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: backend.Certificate().Raw})
	proxy, err := server.New(server.Options{
		Backend: &rest.Config{Host: backend.URL, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}},
		Routes:  translate.NewTable(routes.Routes),
	})
	if err != nil {
		b.Fatal(err)
	}
	bareServer, proxyServer := serveTLS(b, bare), serveTLS(b, proxy)

	watch := "?watch=true&resourceVersion=1"
	// Warm up every leg once (connections, pools, the runtime's initial stack size).
	direct := func() memory {
		return watchesInUse(b, backend.Client(), backend.URL+privateMachines+watch, openWatches)
	}
	direct()
	for _, leg := range []struct {
		name string
		run  func() memory
	}{
		{"bare", func() memory {
			return watchesInUse(b, bareServer.Client(), bareServer.URL+privateMachines+watch, openWatches)
		}},
		{"proxy", func() memory {
			return watchesInUse(b, proxyServer.Client(), proxyServer.URL+upstreamMachines+watch, openWatches)
		}},
	} {
		b.Run(leg.name, func(b *testing.B) {
			leg.run()
			var own, base memory
			for b.Loop() {
				base = base.plus(direct())
				own = own.plus(leg.run())
			}
			hop := own.minus(base)
			per := func(v int64) float64 { return float64(v) / float64(b.N) / openWatches }
			b.ReportMetric(per(hop.heap+hop.stacks), "B/watch")
			b.ReportMetric(per(hop.stacks), "stack-B/watch")
			b.ReportMetric(per(own.heap+own.stacks), "total-B/watch")
			b.ReportMetric(per(base.heap+base.stacks), "direct-B/watch")
		})
	}
}
