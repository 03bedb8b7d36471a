// Command e2e measures the proxy against a real kube-apiserver (make bench-e2e): it starts the
// apiserver (tests/framework), installs the private CRDs (their conversion webhook served by a second
// proxy, so that the measured one does only what its clients ask), seeds -machines v1beta2 Machines of about
// 6.1 KB into the private group, and runs the same workloads, in one run and with the leg order rotated
// every round, against three legs:
//
//   - direct: the apiserver itself, the private group;
//   - bare: a bare httputil.ReverseProxy (./tests/bench/e2e/bare, its own process) in front of it, the
//     private group;
//   - proxy: the capi-proxy binary built from ./proxy, the same objects as cluster.x-k8s.io.
//
// Workloads: GET one Machine (c=1 latency, c=16 throughput), LIST all Machines (JSON, gzip, their
// PartialObjectMetadataList in protobuf as a metadata-only informer asks for it, and the Table kubectl get
// asks for),
// WATCH write->event latency, CREATE c=16 throughput, CPU per operation of the two proxies from /proc
// (per LIST also the client's, this process's, which decompresses a gzip'ed answer as client-go does;
// per create also of kube-apiserver, etcd, kube-controller-manager and the webhook's proxy), their idle
// RSS and their peak RSS during a LIST; then the watch fan-out (N watches of one Machine over HTTP/2,
// opened 100 at a time, -writes patches, the time until every watcher has seen one, directly, through
// the bare proxy and through the proxy) with the RSS of both proxies idle, with the watches open,
// -open-settle later and -settle after they closed; -profile-dir saves its heap and goroutines idle
// (before the watches open), with the watches open and -settle after they closed, and a CPU profile of
// the writes' fan-out. It prints markdown tables. Wall-clock figures are
// only comparable within one run on a quiet machine.
//
//	KUBE_BIN_DIR=... go run ./tests/bench/e2e -rounds 4 -fanout 100,500,1000
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openshift/hypershift-capi-proxy/tests/bench/benchkit"
	"github.com/openshift/hypershift-capi-proxy/tests/bench/machines"
	"github.com/openshift/hypershift-capi-proxy/tests/framework"
)

const (
	namespace       = "bench"
	createNamespace = "bench-create"
	privatePath     = "/apis/" + machines.PrivateCore + "/v1beta2/namespaces/"
	upstreamPath    = "/apis/" + machines.UpstreamCore + "/v1beta2/namespaces/"
)

type options struct {
	machines, seedWorkers, rounds int
	gets, gets16, creates, writes int
	fanout                        string
	settle, openSettle            time.Duration
	keep, samples                 bool
	profileDir                    string
	gzipLoopback                  bool
	workloads                     string
	createProfile                 time.Duration
}

func main() {
	o := options{}
	flag.IntVar(&o.machines, "machines", 10000, "Machines to seed into the private group.")
	flag.IntVar(&o.seedWorkers, "seed-workers", 32, "Concurrent creates while seeding.")
	flag.IntVar(&o.rounds, "rounds", 4, "Rounds of every workload; the leg order rotates every round. 0 runs the fan-out only.")
	flag.IntVar(&o.gets, "gets", 200, "GETs per leg and round at c=1.")
	flag.IntVar(&o.gets16, "gets16", 2000, "GETs per leg and round at c=16.")
	flag.IntVar(&o.creates, "creates", 400, "CREATEs per leg and round at c=16.")
	flag.IntVar(&o.writes, "writes", 15, "Writes per leg and round for the watch latency, and per fan-out step.")
	flag.StringVar(&o.fanout, "fanout", "100,500,1000", `Watcher counts of the fan-out table; "" skips it.`)
	flag.DurationVar(&o.settle, "settle", time.Minute, "How long after the fan-out watches close the proxies' RSS is read.")
	flag.DurationVar(&o.openSettle, "open-settle", 10*time.Second, "How long after the fan-out watches opened the proxies' RSS is read again, before the writes.")
	flag.BoolVar(&o.keep, "keep", false, "Keep the control plane's directory.")
	flag.BoolVar(&o.samples, "samples", false, "Also print every round's sample of every row, to judge the medians' spread.")
	flag.BoolVar(&o.gzipLoopback, "gzip-loopback", true, "The proxy's --gzip-loopback: true measures the shared topology (clients elsewhere, answered as kube-apiserver answers them), false the sidecar's (a client on loopback, answered uncompressed).")
	flag.StringVar(&o.workloads, "workloads", strings.Join(workloadNames, ","), "The workloads of the main table to run, comma-separated: "+strings.Join(workloadNames, ", ")+".")
	flag.StringVar(&o.profileDir, "profile-dir", "", "Save the proxy's heap profile and goroutines with the fan-out watches open, and a CPU profile of its LISTs, here; and, for the first round's creates, CPU profiles of the proxy and of kube-apiserver and the kube-apiserver counters that grew, per create.")
	flag.DurationVar(&o.createProfile, "create-profile", 3*time.Second, "How long the CPU profiles of the creates last (with -profile-dir; -creates should keep them busy as long).")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-e2e:", err)
		os.Exit(1)
	}
}

// leg is one way to the Machines.
type leg struct {
	name string
	url  string
	// path is the Machines' collection path prefix (private or upstream group), up to the namespace.
	path    string
	private bool
	client  *http.Client
	// pid is the proxy process of the leg (0 for direct).
	pid int
}

func (l *leg) machinesURL(ns string) string { return l.url + l.path + ns + "/machines" }

type bench struct {
	o     options
	env   *framework.Env
	token string
	legs  []*leg
	// direct is the leg that writes for the watch workloads.
	direct *leg
	res    map[string]map[string][]float64 // row -> leg -> samples
	// metricsURL serves the proxy's /debug/pprof.
	metricsURL string
	// owners are the uids of the Machines' MachineSet in each namespace (createOwner).
	owners map[string]string
	// others are the processes whose CPU a create costs besides the leg's proxy: kube-apiserver, etcd,
	// kube-controller-manager, the webhook's proxy; by name, their pids.
	others []namedPID
}

type namedPID struct {
	name string
	pid  int
}

// saveProfile saves the proxy's profile at path (under /debug/pprof/) in -profile-dir as name.
func (b *bench) saveProfile(path, name string) {
	if b.o.profileDir == "" {
		return
	}
	resp, err := http.Get(b.metricsURL + "/debug/pprof/" + path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		return
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	_ = os.MkdirAll(b.o.profileDir, 0o755)
	if err := os.WriteFile(filepath.Join(b.o.profileDir, name), data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
	}
}

// goInUse is the proxy's Go heap and goroutine stacks in use (runtime.MemStats: HeapInuse, StackInuse),
// in bytes, after four collections it is asked for (/debug/pprof/heap?gc=1), as a proxy that has run a
// while holds them: the second empties the sync.Pools' victim caches, and each halves the stacks of
// goroutines that use less than a quarter of theirs. RSS, read right after the watches opened, also
// counts the garbage of opening them and the heap's headroom (GOGC). It is 0 when it cannot be read.
func (b *bench) goInUse() float64 {
	var heap, stacks float64
	for range 4 {
		resp, err := http.Get(b.metricsURL + "/debug/pprof/heap?gc=1&debug=1")
		if err != nil {
			fmt.Fprintln(os.Stderr, "heap:", err)
			return 0
		}
		data, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			fmt.Fprintln(os.Stderr, "heap:", err)
			return 0
		}
		for _, line := range strings.Split(string(data), "\n") {
			// "# HeapInuse = 47407104", "# Stack = 19169280 / 19169280" (in use / from the OS)
			if v, ok := strings.CutPrefix(line, "# HeapInuse = "); ok {
				heap, _ = strconv.ParseFloat(v, 64)
			} else if v, ok := strings.CutPrefix(line, "# Stack = "); ok {
				inuse, _, _ := strings.Cut(v, " ")
				stacks, _ = strconv.ParseFloat(inuse, 64)
			}
		}
	}
	return heap + stacks
}

func (b *bench) record(row, leg string, v float64) {
	if b.res[row] == nil {
		b.res[row] = map[string][]float64{}
	}
	b.res[row][leg] = append(b.res[row][leg], v)
}

func run(o options) error {
	ctx := context.Background()
	start := time.Now()
	env, err := framework.StartEnv()
	if err != nil {
		return fmt.Errorf("starting the control plane: %w", err)
	}
	defer env.Stop(o.keep)
	// The private CRDs' conversion webhook is served by a proxy of its own: kube-controller-manager's
	// garbage collector reads the Machines in another version than they are stored in, so every write
	// (and its relists) makes the apiserver call the webhook, which must not count in the measured
	// proxy's CPU.
	webhook, err := env.StartProxy(ctx, "-v", "0")
	if err != nil {
		return err
	}
	defer webhook.Stop()
	if err := webhook.InstallCRDs(ctx, filepath.Join(env.Root, "apis", "private", "crds")); err != nil {
		return err
	}
	// startmemory.go logs at -v 2 once the proxy has returned the memory of its startup; idle RSS is read
	// after that.
	// The measured proxy runs a binary of its own, read from disk, as a node runs a freshly pulled image:
	// the webhook's proxy maps the other one, and a page two processes map stays resident in both (the
	// proxy pages its executable out once its caches have synced, pageout.Executable), as do the dirty
	// pages of a binary just written.
	measured := filepath.Join(env.Dir, "measured", "capi-proxy")
	if err := env.Build(measured, "./proxy"); err != nil {
		return err
	}
	if err := framework.DropPageCache(measured); err != nil {
		return err
	}
	proxy, err := env.StartProxyFrom(ctx, measured, "-v", "0", "--vmodule", "startmemory=2", "--profiling",
		fmt.Sprintf("--gzip-loopback=%t", o.gzipLoopback))
	if err != nil {
		return err
	}
	defer proxy.Stop()
	fmt.Fprintf(os.Stderr, "proxy %s, profiles at %s/debug/pprof/\n", proxy.URL, proxy.MetricsURL)
	bare, err := benchkit.NewBare(env)
	if err != nil {
		return err
	}
	defer bare.Stop()

	b := &bench{o: o, env: env, token: env.AdminToken, res: map[string]map[string][]float64{}, metricsURL: proxy.MetricsURL}
	for _, name := range []string{"kube-apiserver", "etcd", "kube-controller-manager"} {
		data, err := os.ReadFile(filepath.Join(env.Dir, name+".pid"))
		if err != nil {
			return err
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			return fmt.Errorf("%s.pid: %w", name, err)
		}
		b.others = append(b.others, namedPID{name, pid})
	}
	b.others = append(b.others, namedPID{"webhook", webhook.PID()})
	direct := &leg{name: "direct", url: env.APIServerURL, path: privatePath, private: true, client: httpClient(env.CAFile)}
	b.direct = direct
	b.legs = []*leg{
		direct,
		{name: "bare", url: bare.URL, path: privatePath, private: true, client: httpClient(bare.CAFile), pid: bare.PID},
		{name: "proxy", url: proxy.URL, path: upstreamPath, client: httpClient(proxy.CAFile), pid: proxy.PID()},
	}
	b.owners = map[string]string{}
	for _, ns := range []string{namespace, createNamespace} {
		if err := b.createNamespace(ns); err != nil {
			return err
		}
		if b.owners[ns], err = b.createOwner(ns); err != nil {
			return err
		}
	}
	if err := proxy.WaitStartupReleased(ctx, 2*time.Minute); err != nil {
		return err
	}
	idle := map[string]benchkit.Memory{}
	for _, l := range b.legs[1:] {
		idle[l.name] = benchkit.ReadMemory(l.pid)
	}
	seedStart := time.Now()
	size, err := b.seed()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "seeded %d Machines (%d bytes each as stored) in %s\n", o.machines, size, time.Since(seedStart).Round(time.Millisecond))

	workloads, err := b.workloads()
	if err != nil {
		return err
	}
	for r := range o.rounds {
		order := append(slices.Clone(b.legs[r%3:]), b.legs[:r%3]...)
		fmt.Fprintf(os.Stderr, "round %d: %s\n", r+1, names(order))
		for _, workload := range workloads {
			for _, l := range order {
				if err := workload(l, r); err != nil {
					return fmt.Errorf("%s: %w", l.name, err)
				}
			}
		}
	}
	if o.rounds > 0 {
		b.printMain(idle)
	}
	if o.fanout != "" {
		if err := b.fanoutTable(); err != nil {
			return err
		}
	}
	fmt.Printf("\n%d Machines of %d bytes; %d rounds; %d CPUs (%s); total %s\n", o.machines, size, o.rounds, runtime.NumCPU(), benchkit.CPUModel(), time.Since(start).Round(time.Second))
	return nil
}

// workloadNames name the workloads of the main table, in the order a round runs them (-workloads).
var workloadNames = []string{"get1", "get16", "list", "listGzip", "listMeta", "listTable", "watch", "create16"}

// workloads are the workloads -workloads names, in workloadNames' order.
func (b *bench) workloads() ([]func(*leg, int) error, error) {
	all := map[string]func(*leg, int) error{
		"get1": b.get1, "get16": b.get16, "list": b.list(listJSON), "listGzip": b.list(listGzip),
		"listMeta": b.list(listMeta), "listTable": b.list(listTable), "watch": b.watchLatency, "create16": b.create16,
	}
	want := map[string]bool{}
	for _, name := range strings.Split(b.o.workloads, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		if all[name] == nil {
			return nil, fmt.Errorf("-workloads: no workload %q (%s)", name, strings.Join(workloadNames, ", "))
		}
		want[name] = true
	}
	var out []func(*leg, int) error
	for _, name := range workloadNames {
		if want[name] {
			out = append(out, all[name])
		}
	}
	return out, nil
}

func names(legs []*leg) string {
	var s []string
	for _, l := range legs {
		s = append(s, l.name)
	}
	return strings.Join(s, ", ")
}

func httpClient(caFile string) *http.Client {
	pool := x509.NewCertPool()
	if pem, err := os.ReadFile(caFile); err == nil {
		pool.AppendCertsFromPEM(pem)
	}
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2:   true,
		DisableCompression:  true, // the LIST gzip workload asks for gzip itself and reads the bytes
		MaxIdleConnsPerHost: 64,
	}}
}

func (b *bench) do(l *leg, method, url string, body []byte, header http.Header) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("Accept", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	return l.client.Do(req)
}

// call makes a request and reads its answer, which must have status want.
func (b *bench) call(l *leg, method, url string, body []byte, header http.Header, want int) (int64, error) {
	n, _, err := b.read(l, method, url, body, header, want)
	return n, err
}

// read is call, also returning the answer's Content-Type. The count is of the bytes on the wire; a
// gzip'ed answer is decompressed as it is read, as client-go's transport does (compress/gzip).
func (b *bench) read(l *leg, method, url string, body []byte, header http.Header, want int) (int64, string, error) {
	resp, err := b.do(l, method, url, body, header)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	wire := &countingReader{r: resp.Body}
	if resp.Header.Get("Content-Encoding") == "gzip" {
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(wire); err == nil {
			_, err = io.Copy(io.Discard, zr)
		}
	} else {
		_, err = io.Copy(io.Discard, wire)
	}
	n := wire.n
	if err != nil {
		return n, "", err
	}
	if resp.StatusCode != want {
		return n, "", fmt.Errorf("%s %s: %s", method, url, resp.Status)
	}
	return n, resp.Header.Get("Content-Type"), nil
}

// countingReader counts the bytes read from r.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (b *bench) createNamespace(ns string) error {
	body := []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q}}`, ns))
	_, err := b.call(b.direct, http.MethodPost, b.direct.url+"/api/v1/namespaces", body, http.Header{"Content-Type": {"application/json"}}, http.StatusCreated)
	return err
}

// createOwner creates the Machines' MachineSet (machines.OwnerName) in ns, straight in the private group,
// and returns its uid, which every Machine created in ns then names as its owner (machines.WithOwnerUID).
// kube-controller-manager's garbage collector deletes a Machine whose owner does not exist: that work
// (the deletes, the conversion webhook's calls, the events) is no workload's and would spill into the
// measurement of whichever leg runs next.
func (b *bench) createOwner(ns string) (string, error) {
	url := b.direct.url + privatePath + ns + "/machinesets"
	resp, err := b.do(b.direct, http.MethodPost, url, machines.MachineSet(ns, true), http.Header{"Content-Type": {"application/json"}})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("POST %s: %d: %s", url, resp.StatusCode, body)
	}
	var created struct {
		Metadata struct {
			UID string `json:"uid"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &created); err != nil {
		return "", fmt.Errorf("POST %s: %w", url, err)
	}
	return created.Metadata.UID, nil
}

// seed creates the Machines straight in the private group, concurrently, and returns the size of one as
// kube-apiserver returns it.
func (b *bench) seed() (int, error) {
	var next atomic.Int64
	errs := make(chan error, b.o.seedWorkers)
	for range b.o.seedWorkers {
		go func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= b.o.machines {
					errs <- nil
					return
				}
				name := fmt.Sprintf("machine-%d", i)
				if _, err := b.call(b.direct, http.MethodPost, b.direct.machinesURL(namespace), machines.WithOwnerUID(machines.Create(name, namespace, true), b.owners[namespace]),
					http.Header{"Content-Type": {"application/json"}}, http.StatusCreated); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var first error
	for range b.o.seedWorkers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return 0, first
	}
	n, err := b.call(b.direct, http.MethodGet, b.direct.machinesURL(namespace)+"/machine-0", nil, nil, http.StatusOK)
	return int(n), err
}

// cpu returns the process's user and system CPU time.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (b *bench) get1(l *leg, _ int) error {
	var lat []float64
	for i := range b.o.gets {
		url := fmt.Sprintf("%s/machine-%d", l.machinesURL(namespace), (i*7919)%b.o.machines)
		t := time.Now()
		if _, err := b.call(l, http.MethodGet, url, nil, nil, http.StatusOK); err != nil {
			return err
		}
		lat = append(lat, ms(time.Since(t)))
	}
	b.record("get1", l.name, benchkit.Percentile(lat, 50))
	return nil
}

// concurrently runs n calls of fn on 16 workers and returns the elapsed time.
func concurrently(n int, fn func(i int) error) (time.Duration, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	t := time.Now()
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					first = cmpOr(first, err)
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(t), first
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func (b *bench) get16(l *leg, _ int) error {
	c0 := benchkit.CPU(l.pid)
	d, err := concurrently(b.o.gets16, func(i int) error {
		_, err := b.call(l, http.MethodGet, fmt.Sprintf("%s/machine-%d", l.machinesURL(namespace), (i*7919)%b.o.machines), nil, nil, http.StatusOK)
		return err
	})
	if err != nil {
		return err
	}
	b.record("get16", l.name, float64(b.o.gets16)/d.Seconds())
	if l.pid != 0 {
		b.record("cpuGet", l.name, ms(benchkit.CPU(l.pid)-c0)/float64(b.o.gets16))
	}
	return nil
}

// The LIST workloads: row names the results, header is what the client sends besides its token.
var (
	listJSON = listWorkload{row: "list", wantType: "application/json"}
	listGzip = listWorkload{row: "listGzip", wantType: "application/json", header: http.Header{"Accept-Encoding": {"gzip"}}}
	// listMeta asks as client-go's metadata client (controller-runtime's metadata-only informers) asks:
	// the PartialObjectMetadataList in protobuf, gzip'ed by its transport.
	listMeta = listWorkload{row: "listMeta", wantType: "application/vnd.kubernetes.protobuf", header: http.Header{
		"Accept": {"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," +
			"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"},
		"Accept-Encoding": {"gzip"},
	}}
	// listTable asks as kubectl get asks: a Table, gzip'ed by its transport.
	listTable = listWorkload{row: "listTable", wantType: "application/json", header: http.Header{
		"Accept":          {"application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"},
		"Accept-Encoding": {"gzip"},
	}}
)

type listWorkload struct {
	row      string
	header   http.Header
	wantType string // the media type the answer's Content-Type must begin with
}

func (b *bench) list(w listWorkload) func(*leg, int) error {
	row, header := w.row, w.header
	return func(l *leg, round int) error {
		if l.pid != 0 {
			benchkit.ResetPeak(l.pid)
		}
		var profiled chan struct{}
		if l.name == "proxy" && round == 0 && b.o.profileDir != "" {
			// A CPU profile of the proxy covering this LIST (and its idle tail).
			profiled = make(chan struct{})
			go func() {
				defer close(profiled)
				b.saveProfile("profile?seconds=10", row+"-cpu.pprof")
			}()
		}
		var sampled chan benchkit.Memory
		stop := make(chan struct{})
		if l.pid != 0 {
			before := benchkit.ReadMemory(l.pid)
			b.record("beforeAnon"+row, l.name, before.Anon)
			b.record("beforeFile"+row, l.name, before.File)
			// The largest anonymous and file-backed RSS during the LIST, sampled (VmHWM has only their sum).
			sampled = make(chan benchkit.Memory, 1)
			go func() {
				var peak benchkit.Memory
				tick := time.NewTicker(10 * time.Millisecond)
				defer tick.Stop()
				for {
					m := benchkit.ReadMemory(l.pid)
					peak.Anon, peak.File = max(peak.Anon, m.Anon), max(peak.File, m.File)
					select {
					case <-stop:
						sampled <- peak
						return
					case <-tick.C:
					}
				}
			}()
		}
		c0, client0 := benchkit.CPU(l.pid), benchkit.CPU(os.Getpid())
		t := time.Now()
		n, contentType, err := b.read(l, http.MethodGet, l.machinesURL(namespace), nil, header, http.StatusOK)
		// Before waiting for the profile's 10 s. The client's CPU is this process's: it reads the answer
		// as client-go does (decompressing gzip) and only counts its bytes.
		took, cpu, client := time.Since(t), benchkit.CPU(l.pid)-c0, benchkit.CPU(os.Getpid())-client0
		close(stop)
		if err == nil && !strings.HasPrefix(contentType, w.wantType) {
			err = fmt.Errorf("%s answered %s, not %s", row, contentType, w.wantType)
		}
		if sampled != nil {
			peak := <-sampled
			b.record("peakAnon"+row, l.name, peak.Anon)
			b.record("peakFile"+row, l.name, peak.File)
		}
		if profiled != nil {
			<-profiled
		}
		if err != nil {
			return err
		}
		b.record(row, l.name, ms(took))
		b.record(row+"Bytes", l.name, float64(n))
		b.record("clientcpu"+row, l.name, ms(client))
		if l.pid != 0 {
			b.record("cpu"+row, l.name, ms(cpu))
			b.record("peak"+row, l.name, benchkit.ReadMemory(l.pid).HWM)
		}
		return nil
	}
}

// watcher is one watch of machine-0; seen[k] is when it saw write k.
type watcher struct {
	cancel context.CancelFunc
	opened chan struct{}
	done   chan struct{}
	// err is why the watch ended (before done is closed).
	err error
}

// seq marks write k in machine-0's annotations.
func seqPatch(k int) []byte {
	return []byte(fmt.Sprintf(`{"metadata":{"annotations":{"bench/seq":"%d"}}}`, k))
}

// openWatch watches machine-0 through l and calls saw(k) for every event carrying write k.
func (b *bench) openWatch(l *leg, saw func(k int)) (*watcher, error) {
	ctx, cancel := context.WithCancel(context.Background())
	url := l.machinesURL(namespace) + "?watch=true&fieldSelector=metadata.name%3Dmachine-0"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("Accept", "application/json")
	w := &watcher{cancel: cancel, opened: make(chan struct{}), done: make(chan struct{})}
	marker := []byte(`"bench/seq":"`)
	opened := false
	// once watches until the stream ends, and returns why.
	once := func() error {
		resp, err := l.client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			data, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			return fmt.Errorf("%s: %s", resp.Status, data)
		}
		rd := bufio.NewReaderSize(resp.Body, 16<<10)
		for {
			line, err := rd.ReadSlice('\n')
			if errors.Is(err, bufio.ErrBufferFull) {
				var rest []byte
				rest, err = rd.ReadBytes('\n')
				line = append(bytes.Clone(line), rest...)
			}
			if err != nil {
				return err
			}
			if !opened { // the initial ADDED event
				opened = true
				close(w.opened)
			}
			if i := bytes.Index(line, marker); i >= 0 {
				rest := line[i+len(marker):]
				if k, err := strconv.Atoi(string(rest[:bytes.IndexByte(rest, '"')])); err == nil {
					saw(k)
				}
			}
		}
	}
	go func() {
		defer close(w.done)
		// A watch that ends before its first event is opened again, a few times: on the loaded machine
		// kube-apiserver sometimes ends new watches at once (EOF), before any event.
		for attempt := 1; ; attempt++ {
			w.err = once()
			if opened || ctx.Err() != nil || attempt == 5 {
				return
			}
			time.Sleep(time.Second)
		}
	}()
	return w, nil
}

// openingWatches is how many fan-out watches open at a time.
const openingWatches = 100

var writeSeq atomic.Int64

// write patches machine-0 straight at the apiserver and returns its sequence number.
func (b *bench) write() (int, error) {
	k := int(writeSeq.Add(1))
	_, err := b.call(b.direct, http.MethodPatch, b.direct.machinesURL(namespace)+"/machine-0", seqPatch(k),
		http.Header{"Content-Type": {"application/merge-patch+json"}}, http.StatusOK)
	return k, err
}

// fanout opens n watches through l, makes writes, and returns for each write the time until the last
// watcher saw it. opened, if set, runs once every watch has its first event, and what it returns, if
// anything, after the writes.
func (b *bench) fanout(l *leg, n, writes int, opened func() (wrote func())) ([]float64, error) {
	type pending struct {
		left atomic.Int64
		done chan time.Time
	}
	var mu sync.Mutex
	current := map[int]*pending{}
	saw := func(k int) {
		mu.Lock()
		p := current[k]
		mu.Unlock()
		if p != nil && p.left.Add(-1) == 0 {
			p.done <- time.Now()
		}
	}
	var ws []*watcher
	defer func() {
		for _, w := range ws {
			w.cancel()
		}
		for _, w := range ws {
			<-w.done
		}
	}()
	// At most openingWatches are opening at a time: 1,000 opened at once made kube-apiserver on the
	// loaded machine end new watches before their first event.
	opening := make(chan struct{}, openingWatches)
	for range n {
		opening <- struct{}{}
		w, err := b.openWatch(l, saw)
		if err != nil {
			return nil, err
		}
		ws = append(ws, w)
		go func() {
			select {
			case <-w.opened:
			case <-w.done:
			}
			<-opening
		}()
	}
	for _, w := range ws {
		select {
		case <-w.opened:
		case <-w.done:
			return nil, fmt.Errorf("a watch ended before its first event: %w", w.err)
		case <-time.After(2 * time.Minute):
			return nil, errors.New("a watch did not open in 2m")
		}
	}
	var wrote func()
	if opened != nil {
		wrote = opened()
	}
	var lat []float64
	for range writes {
		p := &pending{done: make(chan time.Time, 1)}
		p.left.Store(int64(n))
		k := int(writeSeq.Load()) + 1
		mu.Lock()
		current[k] = p
		mu.Unlock()
		t := time.Now()
		if got, err := b.write(); err != nil || got != k {
			return nil, fmt.Errorf("write %d (%d): %w", k, got, err)
		}
		select {
		case seen := <-p.done:
			lat = append(lat, ms(seen.Sub(t)))
		case <-time.After(time.Minute):
			return nil, fmt.Errorf("write %d: %d of %d watchers did not see it in 1m", k, p.left.Load(), n)
		}
	}
	if wrote != nil {
		wrote()
	}
	return lat, nil
}

func (b *bench) watchLatency(l *leg, _ int) error {
	lat, err := b.fanout(l, 1, b.o.writes, nil)
	if err != nil {
		return err
	}
	b.record("watch", l.name, benchkit.Percentile(lat, 50))
	return nil
}

func (b *bench) create16(l *leg, round int) error {
	procs := append([]namedPID{{"proxy", l.pid}}, b.others...)
	c0 := make([]time.Duration, len(procs))
	for i, p := range procs {
		c0[i] = benchkit.CPU(p.pid)
	}
	m0 := b.apiserverCounters()
	var profiled sync.WaitGroup
	if round == 0 && b.o.profileDir != "" {
		// CPU profiles of the leg's proxy and of kube-apiserver during the creates (-creates large
		// enough for them to last -create-profile).
		seconds := fmt.Sprintf("profile?seconds=%d", int(b.o.createProfile.Seconds()))
		profiled.Add(1)
		go func() {
			defer profiled.Done()
			b.saveAPIServerProfile(seconds, "create-"+l.name+"-apiserver-cpu.pprof")
		}()
		if l.name == "proxy" {
			profiled.Add(1)
			go func() {
				defer profiled.Done()
				b.saveProfile(seconds, "create-proxy-cpu.pprof")
			}()
		}
	}
	d, err := concurrently(b.o.creates, func(i int) error {
		name := fmt.Sprintf("c-%s-%d-%d", l.name, round, i)
		_, err := b.call(l, http.MethodPost, l.machinesURL(createNamespace),
			machines.WithOwnerUID(machines.Create(name, createNamespace, l.private), b.owners[createNamespace]),
			http.Header{"Content-Type": {"application/json"}}, http.StatusCreated)
		return err
	})
	profiled.Wait()
	if err != nil {
		return err
	}
	b.record("create16", l.name, float64(b.o.creates)/d.Seconds())
	for i, p := range procs {
		if p.pid != 0 {
			b.record("cpuCreate "+p.name, l.name, ms(benchkit.CPU(p.pid)-c0[i])/float64(b.o.creates))
		}
	}
	if b.o.profileDir != "" {
		b.saveCounters(m0, b.apiserverCounters(), fmt.Sprintf("create-%s-r%d-apiserver-metrics.txt", l.name, round))
	}
	return nil
}

// apiserverCounters reads kube-apiserver's /metrics: every sample of a counter or a histogram's or
// summary's count (a name ending in _total or _count), by its name and labels; nil if it cannot be read.
func (b *bench) apiserverCounters() map[string]float64 {
	if b.o.profileDir == "" {
		return nil
	}
	resp, err := b.do(b.direct, http.MethodGet, b.direct.url+"/metrics", nil, http.Header{"Accept": {"text/plain"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "metrics:", err)
		return nil
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	s := bufio.NewScanner(resp.Body)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		line := s.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		key := line[:i]
		name, _, _ := strings.Cut(key, "{")
		if !strings.HasSuffix(name, "_total") && !strings.HasSuffix(name, "_count") {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[key] = v
		}
	}
	return out
}

// saveCounters writes the samples of kube-apiserver's counters that grew between before and after, per
// create, sorted, in -profile-dir as name.
func (b *bench) saveCounters(before, after map[string]float64, name string) {
	var lines []string
	for _, key := range slices.Sorted(maps.Keys(after)) {
		if d := after[key] - before[key]; d != 0 {
			lines = append(lines, fmt.Sprintf("%s %.3f", key, d/float64(b.o.creates)))
		}
	}
	if err := os.WriteFile(filepath.Join(b.o.profileDir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "metrics:", err)
	}
}

// saveAPIServerProfile saves kube-apiserver's profile at path (under /debug/pprof/, which it serves to
// system:masters with --profiling, its default) in -profile-dir as name.
func (b *bench) saveAPIServerProfile(path, name string) {
	resp, err := b.do(b.direct, http.MethodGet, b.direct.url+"/debug/pprof/"+path, nil, http.Header{"Accept": {"*/*"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		return
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(os.Stderr, "profile %s: %s\n", path, resp.Status)
		return
	}
	_ = os.MkdirAll(b.o.profileDir, 0o755)
	if err := os.WriteFile(filepath.Join(b.o.profileDir, name), data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
	}
}

func median(v []float64) float64 { return benchkit.Percentile(v, 50) }

func (b *bench) printMain(idle map[string]benchkit.Memory) {
	fmt.Println("| workload | direct | bare proxy | capi-proxy | capi-proxy / bare |")
	fmt.Println("|---|---:|---:|---:|---:|")
	// A row whose workload did not run (-workloads) is left out.
	row := func(name, key string, withDirect bool, format string) {
		if b.res[key] == nil {
			return
		}
		d, bare, proxy := median(b.res[key]["direct"]), median(b.res[key]["bare"]), median(b.res[key]["proxy"])
		ds := ""
		if withDirect {
			ds = fmt.Sprintf(format, d)
		}
		ratio := 0.0
		if bare != 0 {
			ratio = proxy / bare
		}
		fmt.Printf("| %s | %s | "+format+" | "+format+" | %.2f |\n", name, ds, bare, proxy, ratio)
	}
	row("GET one Machine c=1, p50 ms", "get1", true, "%.2f")
	row("GET one Machine c=16, req/s", "get16", true, "%.0f")
	row("LIST all JSON, p50 ms", "list", true, "%.0f")
	row("LIST all gzip, p50 ms", "listGzip", true, "%.0f")
	row("LIST gzip bytes on the wire", "listGzipBytes", true, "%.0f")
	row("LIST metadata protobuf gzip, p50 ms", "listMeta", true, "%.0f")
	row("LIST metadata protobuf gzip bytes on the wire", "listMetaBytes", true, "%.0f")
	row("LIST Table gzip (kubectl get), p50 ms", "listTable", true, "%.0f")
	row("WATCH write->event p50 ms", "watch", true, "%.2f")
	row("CREATE c=16, creates/s", "create16", true, "%.0f")
	row("proxy CPU per GET, ms", "cpuGet", false, "%.2f")
	for _, p := range append([]namedPID{{"proxy", 0}}, b.others...) {
		if key := "cpuCreate " + p.name; b.res[key] != nil {
			row(p.name+" CPU per create, ms", key, p.name != "proxy", "%.2f")
		}
	}
	row("proxy CPU per LIST, ms", "cpulist", false, "%.0f")
	row("proxy CPU per gzip LIST, ms", "cpulistGzip", false, "%.0f")
	row("proxy CPU per metadata protobuf LIST, ms", "cpulistMeta", false, "%.0f")
	row("proxy CPU per Table LIST, ms", "cpulistTable", false, "%.0f")
	row("client CPU per LIST, ms", "clientcpulist", true, "%.0f")
	row("client CPU per gzip LIST, ms", "clientcpulistGzip", true, "%.0f")
	row("client CPU per metadata protobuf LIST, ms", "clientcpulistMeta", true, "%.0f")
	row("peak RSS during the LIST, MiB", "peaklist", false, "%.1f")
	row("peak RSS during the gzip LIST, MiB", "peaklistGzip", false, "%.1f")
	row("peak RSS during the metadata protobuf LIST, MiB", "peaklistMeta", false, "%.1f")
	row("peak RSS during the Table LIST, MiB", "peaklistTable", false, "%.1f")
	// What the peak is made of: anonymous and file-backed RSS (the executable's pages the process has
	// touched) right before the LIST and the largest of each sampled during it.
	for _, l := range []struct{ name, key string }{{"LIST", "list"}, {"gzip LIST", "listGzip"}, {"metadata protobuf LIST", "listMeta"}, {"Table LIST", "listTable"}} {
		for _, m := range []struct{ name, key string }{{"anonymous", "Anon"}, {"file-backed", "File"}} {
			before, peak := b.res["before"+m.key+l.key], b.res["peak"+m.key+l.key]
			if before == nil {
				continue
			}
			fmt.Printf("| %s RSS before the %s -> largest during it, MiB | | %.1f -> %.1f | %.1f -> %.1f | |\n", m.name, l.name,
				median(before["bare"]), median(peak["bare"]), median(before["proxy"]), median(peak["proxy"]))
		}
	}
	fmt.Printf("| idle RSS after start, MiB (anon + file) | | %.1f (%.1f + %.1f) | %.1f (%.1f + %.1f) | |\n",
		idle["bare"].RSS, idle["bare"].Anon, idle["bare"].File, idle["proxy"].RSS, idle["proxy"].Anon, idle["proxy"].File)
	if b.o.samples {
		fmt.Println()
		for _, row := range slices.Sorted(maps.Keys(b.res)) {
			for _, l := range b.legs {
				if v := b.res[row][l.name]; len(v) > 0 {
					fmt.Printf("%s %s: %v\n", row, l.name, v)
				}
			}
		}
	}
}

func (b *bench) fanoutTable() error {
	var counts []int
	for _, s := range strings.Split(b.o.fanout, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("-fanout: %w", err)
		}
		counts = append(counts, n)
	}
	bare, proxy := b.legs[1], b.legs[2]
	fmt.Println()
	fmt.Println("| watchers | direct p50 / p99 ms | bare proxy p50 / p99 ms | capi-proxy p50 / p99 ms | capi-proxy / direct p50 | capi-proxy / bare p50 | per open watch, KB: capi-proxy RSS / Go heap + stacks after collections / bare proxy RSS |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|")
	var mem []string // the RSS rows, printed after the latency table
	for _, n := range counts {
		direct, err := b.fanout(b.direct, n, b.o.writes, nil)
		if err != nil {
			return fmt.Errorf("fan-out %d direct: %w", n, err)
		}
		// The bare proxy's RSS idle, with its watches open, and -settle after they closed (read while the
		// capi-proxy's leg runs: the bare proxy serves nothing else meanwhile).
		bareIdle := benchkit.ReadMemory(bare.pid)
		var bareOpen, bareSettled benchkit.Memory
		viaBare, err := b.fanout(bare, n, b.o.writes, func() func() {
			bareOpen = benchkit.ReadMemory(bare.pid)
			time.Sleep(b.o.openSettle)
			bareSettled = benchkit.ReadMemory(bare.pid)
			return nil
		})
		if err != nil {
			return fmt.Errorf("fan-out %d bare: %w", n, err)
		}
		bareAfter := make(chan benchkit.Memory, 1)
		time.AfterFunc(b.o.settle, func() { bareAfter <- benchkit.ReadMemory(bare.pid) })
		idle, idleInUse := benchkit.ReadMemory(proxy.pid), b.goInUse()
		// What the idle proxy holds, to compare with what it holds -settle after the watches closed.
		b.saveProfile("heap?debug=1", fmt.Sprintf("heap-%d-idle.txt", n))
		b.saveProfile("heap", fmt.Sprintf("heap-%d-idle.pprof", n))
		b.saveProfile("goroutine?debug=1", fmt.Sprintf("goroutines-%d-idle.txt", n))
		var open, settled benchkit.Memory
		var openInUse float64
		lat, err := b.fanout(proxy, n, b.o.writes, func() func() {
			open = benchkit.ReadMemory(proxy.pid)
			time.Sleep(b.o.openSettle)
			settled = benchkit.ReadMemory(proxy.pid)
			openInUse = b.goInUse() // collects: after the RSS
			b.saveProfile("heap", fmt.Sprintf("heap-%d-watches.pprof", n))
			b.saveProfile("heap?debug=1", fmt.Sprintf("heap-%d-watches.txt", n)) // with runtime.MemStats: stacks
			b.saveProfile("goroutine?debug=1", fmt.Sprintf("goroutines-%d-watches.txt", n))
			if b.o.profileDir == "" {
				return nil
			}
			// A CPU profile of the writes' fan-out (of the first 5 s of it).
			cpu := make(chan struct{})
			go func() {
				defer close(cpu)
				b.saveProfile("profile?seconds=5", fmt.Sprintf("fanout-%d-cpu.pprof", n))
			}()
			return func() { <-cpu }
		})
		if err != nil {
			return fmt.Errorf("fan-out %d proxy: %w", n, err)
		}
		time.Sleep(b.o.settle) // what the proxy's RSS is -settle after the watches closed
		after := benchkit.ReadMemory(proxy.pid)
		b.saveProfile("heap?debug=1", fmt.Sprintf("heap-%d-after-close.txt", n))
		b.saveProfile("heap", fmt.Sprintf("heap-%d-after-close.pprof", n))
		b.saveProfile("goroutine?debug=1", fmt.Sprintf("goroutines-%d-after-close.txt", n))
		perWatch := func(open, idle benchkit.Memory) float64 { return (open.RSS - idle.RSS) * 1024 / float64(n) }
		fmt.Printf("| %d | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f | %.2f | %.2f | %.0f / %.0f / %.0f |\n", n,
			benchkit.Percentile(direct, 50), benchkit.Percentile(direct, 99), benchkit.Percentile(viaBare, 50), benchkit.Percentile(viaBare, 99),
			benchkit.Percentile(lat, 50), benchkit.Percentile(lat, 99), benchkit.Percentile(lat, 50)/benchkit.Percentile(direct, 50), benchkit.Percentile(lat, 50)/benchkit.Percentile(viaBare, 50),
			perWatch(settled, idle), (openInUse-idleInUse)/1024/float64(n), perWatch(bareSettled, bareIdle))
		ba := <-bareAfter
		for _, m := range []struct {
			name                       string
			idle, open, settled, after benchkit.Memory
		}{{"bare proxy", bareIdle, bareOpen, bareSettled, ba}, {"capi-proxy", idle, open, settled, after}} {
			mem = append(mem, fmt.Sprintf("| %d | %s | %.1f -> %.1f -> %.1f -> %.1f | %.1f -> %.1f -> %.1f -> %.1f | %.1f -> %.1f -> %.1f -> %.1f | %.0f / %.0f | %+.1f |", n, m.name,
				m.idle.RSS, m.open.RSS, m.settled.RSS, m.after.RSS, m.idle.Anon, m.open.Anon, m.settled.Anon, m.after.Anon,
				m.idle.File, m.open.File, m.settled.File, m.after.File,
				perWatch(m.open, m.idle), perWatch(m.settled, m.idle), m.after.RSS-m.idle.RSS))
		}
	}
	fmt.Println()
	fmt.Printf("| watchers | process | RSS MiB: idle -> watches open -> %s later -> %s after close | anonymous | file-backed | RSS per open watch, KB: at open / %s later | after close - idle, MiB |\n", b.o.openSettle, b.o.settle, b.o.openSettle)
	fmt.Println("|---:|---|---:|---:|---:|---:|---:|")
	for _, row := range mem {
		fmt.Println(row)
	}
	return nil
}
