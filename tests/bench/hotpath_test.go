package bench

// The proxy's hot paths, each with allocation counts so that a regression shows in `go test -bench`:
// classification, the single-object rewrite, the streamed list and watch rewrites (per MB), and whole
// GET, LIST (JSON and gzip) and watch requests through the handler beside a bare httputil.ReverseProxy
// in front of the same fake backend:
//
//	go test -run '^$' -bench 'Hot' -benchmem ./tests/bench/
//
// Besides wall-clock time each reports cpu-ns/op, the CPU time of the whole test process (every
// goroutine: the fake backend's, the handler's, the garbage collector's) per operation, which a busy
// machine moves far less than the wall clock.

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
	"github.com/openshift/hypershift-capi-proxy/proxy/server"
	"github.com/openshift/hypershift-capi-proxy/proxy/stream"
	"github.com/openshift/hypershift-capi-proxy/tests/bench/machines"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

const (
	privateMachines  = "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/bench/machines"
	upstreamMachines = "/apis/cluster.x-k8s.io/v1beta2/namespaces/bench/machines"
)

var machinesResource = schema.GroupResource{Group: machines.PrivateCore, Resource: "machines"}

// processCPU is the CPU time the process used so far (getrusage(2), user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports, when the returned func is called after b's loop, the process's CPU time per
// operation since reportCPU was called.
func reportCPU(b *testing.B) func() {
	start := processCPU()
	return func() { b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op") }
}

func streamObjects() stream.Objects {
	bodies := body.New(translate.NewTable(routes.Routes))
	return stream.Objects{
		APIVersion:   translate.ToUpstream.APIVersion,
		Object:       bodies.UpstreamOfValid(machinesResource),
		AppendObject: bodies.AppendUpstreamOfValid(machinesResource),
		AppendItem:   bodies.AppendUpstreamOfItem(machinesResource),
		Status:       bodies.Upstream,
	}
}

// BenchmarkHotClassify: classifying a GET of one Machine in the upstream group.
func BenchmarkHotClassify(b *testing.B) {
	c := classify.New(translate.NewTable(routes.Routes))
	r := httptest.NewRequest(http.MethodGet, upstreamMachines+"/machine-1", nil)
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		if req := c.Classify(r); req.Class != classify.Mapped {
			b.Fatalf("class %v", req.Class)
		}
	}
}

// BenchmarkHotObjectRewrite: one 6.1 KB Machine the backend sends, translated to the upstream groups.
func BenchmarkHotObjectRewrite(b *testing.B) {
	upstream := body.New(translate.NewTable(routes.Routes)).UpstreamOf(machinesResource)
	data := machines.Object("machine-1", "bench", true)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		if _, err := upstream(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHotStreamList: a 1,000-Machine list (6 MB) through stream.List; MB/s is the rewrite's rate.
func BenchmarkHotStreamList(b *testing.B) {
	benchmarkStreamList(b, streamObjects(), machines.List(1000, "bench", true))
}

// BenchmarkHotStreamTable: the Table kube-apiserver answers a list of 1,000 Machines with for kubectl get
// (rows of printed cells and each Machine's PartialObjectMetadata, 3.6 MB) through stream.List, row by
// row.
func BenchmarkHotStreamTable(b *testing.B) {
	objects := streamObjects()
	objects.Row = body.New(translate.NewTable(routes.Routes)).AppendTableRow
	benchmarkStreamList(b, objects, machines.Table(1000, "bench", true))
}

// benchmarkStreamList measures stream.List of data with objects.
func benchmarkStreamList(b *testing.B, objects stream.Objects, data []byte) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		if err := stream.List(io.Discard, bytes.NewReader(data), objects); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHotStreamWatch: 1,000 MODIFIED events of a Machine through stream.Watch.
func BenchmarkHotStreamWatch(b *testing.B) {
	objects := streamObjects()
	var events bytes.Buffer
	for i := range 1000 {
		fmt.Fprintf(&events, `{"type":"MODIFIED","object":%s}`+"\n", machines.Object(fmt.Sprintf("machine-%d", i), "bench", true))
	}
	data := events.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		if err := stream.Watch(io.Discard, nil, bytes.NewReader(data), objects); err != nil {
			b.Fatal(err)
		}
	}
}

// fakeBackend answers GET one Machine, LIST (1,000 Machines, gzip'ed for a client that asks as
// kube-apiserver does), and a watch of 100 MODIFIED events, all in the private group, and LIST of
// 1,000 Secrets (gzip'ed likewise).
func fakeBackend(b *testing.B) *httptest.Server {
	object := machines.Object("machine-1", "bench", true)
	list := machines.List(1000, "bench", true)
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	_, _ = zw.Write(list)
	_ = zw.Close()
	var events bytes.Buffer
	for range 100 {
		fmt.Fprintf(&events, `{"type":"MODIFIED","object":%s}`+"\n", object)
	}
	secrets := secretList(1000)
	var secretsGz bytes.Buffer
	zw.Reset(&secretsGz)
	_, _ = zw.Write(secrets)
	_ = zw.Close()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost:
			// A create: the created object, as kube-apiserver answers it.
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(object)
		case r.URL.Path == secretsPath && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip"):
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(secretsGz.Bytes())
		case r.URL.Path == secretsPath:
			_, _ = w.Write(secrets)
		case r.URL.Path == privateMachines+"/machine-1":
			_, _ = w.Write(object)
		case r.URL.Query().Get("watch") == "true":
			_, _ = w.Write(events.Bytes())
		case strings.Contains(r.Header.Get("Accept-Encoding"), "gzip"):
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(gz.Bytes())
		default:
			_, _ = w.Write(list)
		}
	}))
	b.Cleanup(s.Close)
	return s
}

// secretsPath is a list of Secrets, a resource of no mapped group.
const secretsPath = "/api/v1/namespaces/bench/secrets"

// secretList is a SecretList of n Secrets of about 6 KB that name no mapped group.
func secretList(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"kind":"SecretList","apiVersion":"v1","metadata":{"resourceVersion":"123456"},"items":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metadata":{"name":"secret-%d","namespace":"bench","uid":"%08d-0000-0000-0000-000000000000","resourceVersion":"%d",`+
			`"ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"d","uid":"u","controller":true}]},"data":{"tls.crt":"%s"},"type":"Opaque"}`,
			i, i, 1000+i, strings.Repeat("QUJD", 1500))
	}
	b.WriteString("]}")
	return []byte(b.String())
}

// discard is a ResponseWriter that counts what it is given.
type discard struct {
	h http.Header
	n int64
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Write(p []byte) (int, error) { d.n += int64(len(p)); return len(p), nil }
func (d *discard) Flush()                      {}

// benchmarkHandlers runs one request through the bare reverse proxy and the capi-proxy.
func benchmarkHandlers(b *testing.B, path string, header http.Header) {
	benchmarkPaths(b, privateMachines+path, upstreamMachines+path, header)
}

// benchmarkPaths runs one request through the bare reverse proxy (at barePath) and the capi-proxy (at
// proxyPath).
func benchmarkPaths(b *testing.B, barePath, proxyPath string, header http.Header) {
	benchmarkRequests(b, http.MethodGet, barePath, proxyPath, nil, nil, header)
}

// benchmarkRequests runs one request of method through the bare reverse proxy (at barePath, with
// bareBody) and the capi-proxy (at proxyPath, with proxyBody).
func benchmarkRequests(b *testing.B, method, barePath, proxyPath string, bareBody, proxyBody []byte, header http.Header) {
	backend := fakeBackend(b)
	u, _ := url.Parse(backend.URL)
	bare := httputil.NewSingleHostReverseProxy(u)
	bare.FlushInterval = -1
	// GzipLoopback: the benchmark's client is on loopback, but stands for the shared topology's.
	proxy, err := server.New(server.Options{Backend: &rest.Config{Host: backend.URL}, Routes: translate.NewTable(routes.Routes), GzipLoopback: true})
	if err != nil {
		b.Fatal(err)
	}
	for _, leg := range []struct {
		name, path string
		body       []byte
		h          http.Handler
	}{
		{"bare", barePath, bareBody, bare},
		{"proxy", proxyPath, proxyBody, proxy},
	} {
		b.Run(leg.name, func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b)()
			var n int64
			for b.Loop() {
				var body io.Reader
				if leg.body != nil {
					body = bytes.NewReader(leg.body)
				}
				r := httptest.NewRequest(method, leg.path, body)
				for k, v := range header {
					r.Header[k] = v
				}
				w := &discard{h: http.Header{}}
				leg.h.ServeHTTP(w, r)
				n = w.n
			}
			b.SetBytes(n)
		})
	}
}

func BenchmarkHotGet(b *testing.B)  { benchmarkHandlers(b, "/machine-1", nil) }
func BenchmarkHotList(b *testing.B) { benchmarkHandlers(b, "", nil) }
func BenchmarkHotListGzip(b *testing.B) {
	benchmarkHandlers(b, "", http.Header{"Accept-Encoding": {"gzip"}})
}
func BenchmarkHotWatch(b *testing.B) { benchmarkHandlers(b, "?watch=true", nil) }

// BenchmarkHotCreate: a create of a Machine (4.1 KB of JSON) answered with the created object, as
// make bench-e2e's CREATE workload sends it.
func BenchmarkHotCreate(b *testing.B) {
	benchmarkRequests(b, http.MethodPost, privateMachines, upstreamMachines,
		machines.Create("machine-1", "bench", true), machines.Create("machine-1", "bench", false),
		http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}})
}

// feed is a watch source that hands on what the benchmark gave it, one event per Read.
type feed struct{ next []byte }

func (f *feed) Read(p []byte) (int, error) {
	n := copy(p, f.next)
	f.next = f.next[n:]
	return n, nil
}

// BenchmarkHotWatchFanout: one MODIFIED event of a 6.1 KB Machine read by 1,000 watches of the same
// resource through stream.WatchReader, with the translation shared (stream.Shared) as the proxy shares
// it, each watch's reader reading into an 8 KiB buffer as the proxy's reverse proxy does. B/op and
// allocs/op are per event for all 1,000 watchers.
func BenchmarkHotWatchFanout(b *testing.B) {
	const watchers = 1000
	objects, shared := streamObjects(), stream.NewShared(2<<20)
	feeds := make([]*feed, watchers)
	readers := make([]*stream.WatchReader, watchers)
	for i := range readers {
		feeds[i] = &feed{}
		readers[i] = stream.NewSharedWatchReader(feeds[i], objects, shared, machinesResource.String())
	}
	buf := make([]byte, 8<<10)
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		i++ // a new object every time: translated by the first watch, shared by the others
		event := fmt.Appendf(nil, `{"type":"MODIFIED","object":%s}`+"\n", machines.Object(fmt.Sprintf("machine-%d", i), "bench", true))
		for _, f := range feeds {
			f.next = event
		}
		b.StartTimer()
		for _, r := range readers {
			for {
				n, err := r.Read(buf)
				if err != nil {
					b.Fatal(err)
				}
				if buf[n-1] == '\n' {
					break
				}
			}
		}
	}
}

// BenchmarkHotListGzipPassThrough: a gzip LIST of 1,000 Secrets (6 MB), which names no mapped group:
// the proxy passes the backend's compressed bytes through.
func BenchmarkHotListGzipPassThrough(b *testing.B) {
	benchmarkPaths(b, secretsPath, secretsPath, http.Header{"Accept-Encoding": {"gzip"}})
}
