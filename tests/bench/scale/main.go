// Command scale measures the shared proxy at HyperShift's scale (make bench-scale): one proxy in front of
// a real kube-apiserver serving -namespaces hosted-control-plane namespaces, each with the informers of a
// CAPI manager and of the AWS provider (namespace-scoped, a transport and connection each, as separate
// processes have), and HyperShift's operator watching the CAPI kinds across every namespace; the same
// fleet, in the same run, through the bare reverse proxy (tests/bench/e2e/bare) reading the private groups
// straight.
//
// It starts the apiserver (tests/framework), installs the private CRDs the fleet reads (their conversion
// webhook served by a proxy of its own) and, with -cutover, the platform's upstream CRDs of the same
// kinds; seeds every namespace with one hosted cluster (a Cluster, its AWSCluster, a MachineDeployment,
// MachineSet and AWSMachineTemplate, -machines Machines and AWSMachines, a MachineHealthCheck, two Secrets
// and a ConfigMap); and then, for each leg (bare, proxy; -rounds times, the order alternating), behind a
// front (a TCP forwarder standing for the Service) that lets it restart the proxy under the fleet:
//
//   - reads the proxy's idle RSS, starts the operator and the managers of half the namespaces, reads the
//     RSS, starts the others' and reads it again: the growth between the two steps, per namespace, is
//     what a hosted cluster costs;
//   - writes -rate Machine annotations per second for -duration, spread over the namespaces, each through
//     the CAPI manager of its namespace, and records for every write the time from its request (and from
//     its response) to the event at each informer of Machines that covers it (the namespace's CAPI manager
//     and provider, the operator's cluster-wide one), and the proxy's CPU (/proc) per event;
//   - restarts the proxy (starts a new one, sends new connections to it, stops the old one) and measures
//     the time from the old one's exit until every informer is live again (the relist storm) and the
//     requests it took; then writes each namespace's first Machine once and checks every watcher sees it;
//   - for the capi-proxy with -cutover: moves that many namespaces to the upstream groups and back
//     (package migration, Rollback then Migrate, one namespace after the other) while the writes go on,
//     and reports the write->event latency of the namespaces not moving against the steady state, the
//     relists by informer, and the writes never seen, duplicated or out of order.
//
// It prints markdown tables with the goals beside the numbers. Wall-clock figures are only comparable
// within one run.
//
//	KUBE_BIN_DIR=... go run ./tests/bench/scale -namespaces 100
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openshift/hypershift-capi-proxy/migration"
	"github.com/openshift/hypershift-capi-proxy/tests/bench/benchkit"
	"github.com/openshift/hypershift-capi-proxy/tests/framework"
)

type options struct {
	namespaces, machines, rounds, seedWorkers int
	rate                                      float64
	duration, drain, settle                   time.Duration
	legs                                      string
	restart, keep                             bool
	// cutover namespaces move to the upstream groups and back during the capi-proxy's cut-over phase, with
	// cutoverGrace the migration's wait after each label change.
	cutover      int
	cutoverGrace time.Duration
	// debug prints the slowest writes of the steady phase, the relists of the restart, and the pairs not
	// seen and the cluster-wide informers' requests of the cut-over.
	debug bool
	// quiet waits, before the idle RSS is read, until the capi-proxy has returned its startup's memory
	// (about 10 s after its caches synced).
	quiet bool
}

func main() {
	o := defaultOptions()
	flag.IntVar(&o.namespaces, "namespaces", o.namespaces, "Hosted-control-plane namespaces (hosted clusters): 100, 250, 500 at HyperShift's scale.")
	flag.IntVar(&o.machines, "machines", o.machines, "Machines (and AWSMachines) per hosted cluster.")
	flag.IntVar(&o.rounds, "rounds", o.rounds, "Rounds of every leg; the leg order alternates every round.")
	flag.IntVar(&o.seedWorkers, "seed-workers", o.seedWorkers, "Namespaces seeded at once.")
	flag.Float64Var(&o.rate, "rate", o.rate, "Machine writes per second, over every namespace.")
	flag.DurationVar(&o.duration, "duration", o.duration, "How long the steady writes last.")
	flag.DurationVar(&o.drain, "drain", o.drain, "The restarted capi-proxy's --shutdown-timeout (30s in the install assets): how long it serves the watches open on it after its stop.")
	flag.DurationVar(&o.settle, "settle", o.settle, "How long the fleet idles after its sync before the proxy's RSS is read, and how long a watch must stay open to count as live after the restart.")
	flag.StringVar(&o.legs, "legs", o.legs, "Legs to run, in the first round's order: bare, proxy.")
	flag.BoolVar(&o.restart, "restart", o.restart, "Restart the proxy under the fleet and measure the relist storm.")
	flag.BoolVar(&o.keep, "keep", o.keep, "Keep the control plane's directory.")
	flag.BoolVar(&o.quiet, "quiet", o.quiet, "Wait until the capi-proxy has returned the memory of its startup (about 10 s after its caches synced) before its idle RSS is read.")
	flag.IntVar(&o.cutover, "cutover", o.cutover, "Namespaces the capi-proxy's round cuts over (migration rollback, then migrate; one after the other) while the writes go on; 0 skips the phase.")
	flag.BoolVar(&o.debug, "debug", o.debug, "Print on stderr the slowest writes of the steady phase, who relisted after the restart, and what the cut-over's watchers did not see and the cluster-wide informers' requests.")
	flag.DurationVar(&o.cutoverGrace, "cutover-grace", o.cutoverGrace, "The migration's wait after each change of the serving label (its --grace-period).")
	flag.Parse()
	res, err := run(context.Background(), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-scale:", err)
		os.Exit(1)
	}
	res.print(os.Stdout)
}

func defaultOptions() options {
	return options{namespaces: 100, machines: 2, rounds: 1, seedWorkers: 8, rate: 20, duration: time.Minute,
		drain: 2 * time.Second, settle: 5 * time.Second, legs: "bare,proxy", restart: true, quiet: true,
		cutover: 3, cutoverGrace: migration.DefaultGrace}
}

// results are a run's measurements, by leg, one per round.
type results struct {
	o                          options
	objects, informers, watchN int
	byLeg                      map[string][]*legResult
	start                      time.Time
	loadBefore, loadAfter      string
}

// legResult is one round of one leg.
type legResult struct {
	// connections is how many client connections the front saw open with the fleet synced.
	connections int64
	coldSync    time.Duration
	// idle, half, synced and steady are the proxy's memory before the fleet, with the managers of half the
	// namespaces synced, with all of them, and at the end of the steady writes.
	idle, half, synced, steady benchkit.Memory
	// halfN is how many namespaces half is.
	halfN               int
	writes, writeErrors int
	// lat are the write->event latencies at the watchers.
	lat                 latency
	missing, duplicates int
	outOfOrder, events  int
	cpu                 time.Duration
	// the restart: relist is from the old proxy's exit until every informer was live again; storm the
	// requests since the switch; stormCPU the new proxy's CPU from the switch until then, stormPeak its
	// memory then (VmHWM: its startup included).
	relist        time.Duration
	storm         counts
	stormCPU      time.Duration
	stormPeak     benchkit.Memory
	afterMissing  int
	restartFailed string
	// cut is the cut-over phase (the capi-proxy's rounds with -cutover).
	cut *cutResult
}

func run(ctx context.Context, o options) (*results, error) {
	res := &results{o: o, byLeg: map[string][]*legResult{}, start: time.Now(), loadBefore: loadAvg()}
	legs := strings.Split(o.legs, ",")
	for _, l := range legs {
		if l != "bare" && l != "proxy" {
			return nil, fmt.Errorf("-legs: unknown leg %q (bare, proxy)", l)
		}
	}
	env, err := framework.StartEnv()
	if err != nil {
		return nil, fmt.Errorf("starting the control plane: %w", err)
	}
	defer env.Stop(o.keep)
	logf("control plane up")
	if err := env.InstallServingPolicy(ctx); err != nil {
		return nil, err
	}
	// The CRDs' conversion webhook is served by a proxy of its own: kube-controller-manager's garbage
	// collector reads objects in other versions than they are stored in, which must not count in the
	// measured proxy's CPU. It also seeds the hosted clusters, in the upstream groups.
	webhook, err := env.StartProxy(ctx, "-v", "0")
	if err != nil {
		return nil, err
	}
	defer webhook.Stop()
	logf("webhook proxy up")
	if err := webhook.InstallCRDs(ctx, crdFiles(env)...); err != nil {
		return nil, err
	}
	logf("private CRDs installed")
	if o.cutover > 0 && slices.Contains(legs, "proxy") {
		// The platform's own CAPI CRDs, which the cut-over moves namespaces to and back from.
		upstream, err := installUpstreamCRDs(ctx, env)
		if err != nil {
			return nil, err
		}
		defer upstream.Stop()
	}
	logf("CRDs installed")
	seeder, err := client.New(webhook.Config(env.AdminToken), client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	t := time.Now()
	if res.objects, err = seed(ctx, seeder, o.namespaces, o.machines, o.seedWorkers); err != nil {
		return nil, err
	}
	logf("seeded %d namespaces, %d objects in %s", o.namespaces, res.objects, time.Since(t).Round(time.Millisecond))

	b, err := newBench(env, o, webhook.Bin)
	if err != nil {
		return nil, err
	}
	logf("legs built")
	for r := range o.rounds {
		order := slices.Clone(legs)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, l := range order {
			logf("round %d: %s", r+1, l)
			lr, err := b.measure(ctx, l)
			if err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", r+1, l, err)
			}
			res.byLeg[l] = append(res.byLeg[l], lr)
			res.informers, res.watchN = b.informers, b.watchers
		}
	}
	res.loadAfter = loadAvg()
	return res, nil
}

// crdFiles are the private CRDs of the kinds the fleet reads and the seed creates.
func crdFiles(env *framework.Env) []string {
	var files []string
	seen := map[string]bool{}
	for _, specs := range [][]watchSpec{capiManagerWatches, capaManagerWatches, operatorWatches} {
		for _, s := range specs {
			g := privateGVR(s.gvr)
			if g.Group == "" || seen[g.Resource+"."+g.Group] {
				continue
			}
			seen[g.Resource+"."+g.Group] = true
			files = append(files, filepath.Join(env.Root, "apis", "private", "crds", g.Group+"_"+g.Resource+".yaml"))
		}
	}
	return files
}

// bench runs the legs.
type bench struct {
	env *framework.Env
	o   options
	// proxyBin is the measured proxy's binary, bareBin the bare proxy's; certPEM and keyPEM the certificate
	// every instance serves (certFile, keyFile on disk), which the fleet trusts.
	proxyBin, bareBin string
	certPEM, keyPEM   []byte
	certFile, keyFile string
	// informers and watchers of the last fleet.
	informers, watchers int
}

// newBench prepares the legs; webhookBin is the proxy binary the webhook's proxy runs, of which the
// measured proxy runs a copy.
func newBench(env *framework.Env, o options, webhookBin string) (*bench, error) {
	b := &bench{env: env, o: o}
	var err error
	if b.bareBin, err = benchkit.BuildBare(env); err != nil {
		return nil, err
	}
	// The measured proxy runs a binary of its own, read from disk, as bench-e2e's does (a page two
	// processes map stays resident in both).
	b.proxyBin = filepath.Join(env.Dir, "measured", "capi-proxy")
	if err := copyFile(webhookBin, b.proxyBin); err != nil {
		return nil, err
	}
	if err := framework.DropPageCache(b.proxyBin); err != nil {
		return nil, err
	}
	if b.certFile, b.keyFile, err = benchkit.SelfSignedCert(env.Dir, "front"); err != nil {
		return nil, err
	}
	if b.certPEM, err = os.ReadFile(b.certFile); err != nil {
		return nil, err
	}
	if b.keyPEM, err = os.ReadFile(b.keyFile); err != nil {
		return nil, err
	}
	return b, nil
}

// instance is one running proxy of a leg.
type instance struct {
	addr string // host:port
	pid  int
	stop func()
	// settle waits until a freshly started instance is idle (the capi-proxy has returned its startup's
	// memory).
	settle func(context.Context) error
}

func (b *bench) start(ctx context.Context, leg string) (*instance, error) {
	if leg == "bare" {
		p, err := benchkit.StartBare(b.bareBin, b.env, b.certFile, b.keyFile)
		if err != nil {
			return nil, err
		}
		return &instance{addr: strings.TrimPrefix(p.URL, "https://"), pid: p.PID, stop: p.Stop,
			settle: func(context.Context) error { time.Sleep(time.Second); return nil }}, nil
	}
	p, err := b.env.StartProxyWithCert(ctx, b.proxyBin, b.certPEM, b.keyPEM, "-v", "0", "--vmodule", "startmemory=2",
		"--shutdown-timeout", b.o.drain.String())
	if err != nil {
		return nil, err
	}
	return &instance{addr: strings.TrimPrefix(p.URL, "https://"), pid: p.PID(), stop: p.Stop,
		settle: func(ctx context.Context) error { return p.WaitStartupReleased(ctx, 2*time.Minute) }}, nil
}

// measure runs one round of leg.
func (b *bench) measure(ctx context.Context, leg string) (*legResult, error) {
	lr := &legResult{}
	fr, err := newFront()
	if err != nil {
		return nil, err
	}
	defer fr.close()
	inst, err := b.start(ctx, leg)
	if err != nil {
		return nil, err
	}
	defer func() { inst.stop() }()
	fr.switchTo(inst.addr)
	if b.o.quiet {
		if err := inst.settle(ctx); err != nil {
			return nil, err
		}
	}
	lr.idle = benchkit.ReadMemory(inst.pid)

	target := legTarget{url: fr.url(), caFile: b.certFile, token: b.env.AdminToken, private: leg == "bare", qps: 20, burst: 30}
	tr, rec := newTracker(), newRecorder()
	t := time.Now()
	f, err := newFleet(ctx, target, b.o.namespaces, tr, rec)
	if err != nil {
		return nil, err
	}
	f.debug = b.o.debug
	defer f.stop()
	// The managers of half the namespaces, then of the others: the RSS between the two steps is what a
	// hosted cluster costs, without what the first connections and watches cost once.
	lr.halfN = b.o.namespaces / 2
	if err := f.addNamespaces(0, lr.halfN); err != nil {
		return nil, err
	}
	halfSync := time.Since(t)
	time.Sleep(b.o.settle)
	lr.half = benchkit.ReadMemory(inst.pid)
	t = time.Now()
	if err := f.addNamespaces(lr.halfN, b.o.namespaces); err != nil {
		return nil, err
	}
	lr.coldSync = halfSync + time.Since(t)
	b.informers, b.watchers = len(f.informers), len(f.watchers)
	logf("  %d managers, %d informers synced in %s", len(f.managers), len(f.informers), lr.coldSync.Round(time.Millisecond))
	time.Sleep(b.o.settle)
	lr.synced = benchkit.ReadMemory(inst.pid)
	lr.connections = fr.open.Load()

	// Steady writes.
	rec.reset()
	cpu0 := benchkit.CPU(inst.pid)
	steadyStart := time.Now()
	lr.writes, lr.writeErrors = f.write(ctx, b.o.rate, b.o.duration, b.o.machines)
	if err := f.waitSeen(ctx, 30*time.Second, nil); err != nil {
		logln("  ", err)
	}
	lr.cpu = benchkit.CPU(inst.pid) - cpu0
	lr.steady = benchkit.ReadMemory(inst.pid)
	var missed tally
	lr.lat, missed = rec.latencies(nil)
	lr.missing = missed.missing
	if b.o.debug {
		debugSlowest(rec, steadyStart, 25)
	}
	rec.mu.Lock()
	lr.duplicates, lr.outOfOrder, lr.events = rec.duplicates, rec.outOfOrder, rec.events
	rec.mu.Unlock()
	logf("  %d writes (%d failed), %d events, p99 %.1f ms", lr.writes, lr.writeErrors, lr.events,
		benchkit.Percentile(lr.lat.namespaced, 99))

	if b.o.restart {
		if err := b.restart(ctx, leg, lr, fr, f, tr, rec, &inst); err != nil {
			return nil, err
		}
	}
	// The cut-over comes last: after it, a restart made some informers of the moved namespace relist
	// (their resumed watches were answered 410 Expired), which the bare proxy's restart, after no
	// cut-over, cannot show.
	if leg == "proxy" && b.o.cutover > 0 {
		lr.cut = b.cutover(ctx, f, tr, rec, inst.pid)
	}
	return lr, nil
}

// restart starts a new instance of leg, sends new connections to it, stops the old one (*inst, which
// becomes the new one) and measures the time until every informer of f is live again.
func (b *bench) restart(ctx context.Context, leg string, lr *legResult, fr *front, f *fleet, tr *tracker, rec *recorder, inst **instance) error {
	// The restart: a new instance, new connections to it, the old one stopped.
	next, err := b.start(ctx, leg)
	if err != nil {
		return err
	}
	old := *inst
	*inst = next
	cpu0 := benchkit.CPU(next.pid)
	tr.mark()
	fr.switchTo(next.addr)
	old.stop()
	exited := time.Now()
	keys := make([]string, len(f.informers))
	for i, inf := range f.informers {
		keys[i] = inf.key
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		all, last, notLive := tr.live(keys, b.o.settle)
		if all {
			if last.After(exited) {
				lr.relist = last.Sub(exited)
			}
			break
		}
		if time.Now().After(deadline) {
			lr.restartFailed = fmt.Sprintf("%d of %d informers not live 5 minutes after the restart", notLive, len(keys))
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	lr.stormCPU = benchkit.CPU(next.pid) - cpu0
	lr.stormPeak = benchkit.ReadMemory(next.pid)
	lr.storm = tr.count(nil)
	if b.o.debug {
		tr.mu.Lock()
		for key, reqs := range tr.byKey {
			for _, r := range reqs {
				if r.kind != reqWatch {
					logf("debug: restart: %s relisted (kind %d, status %d)", key, r.kind, r.status)
				}
			}
		}
		tr.mu.Unlock()
	}
	logf("  restart: live again %s after the old proxy exited; %d relists, %d resumed watches, %d failed requests",
		lr.relist.Round(time.Millisecond), lr.storm.relists, lr.storm.watches, lr.storm.failed)
	// Every watcher sees a write made after the restart.
	rec.reset()
	f.writeEach(ctx)
	if err := f.waitSeen(ctx, time.Minute, nil); err != nil {
		logln("  after the restart:", err)
	}
	_, missed := rec.latencies(nil)
	lr.afterMissing = missed.missing
	return nil
}

// write patches Machines at rate per second for d, write k to namespace k mod N, Machine (k / N) mod
// machines, through the namespace's CAPI manager, and returns the writes made and failed.
func (f *fleet) write(ctx context.Context, rate float64, d time.Duration, machines int) (int, int) {
	end := time.Now().Add(d)
	return f.writeUntil(ctx, rate, machines, func() bool { return !time.Now().Before(end) })
}

// writeUntil is write until done returns true. A Machine gets no write while one of its own is in flight
// (a held write retries for up to about ten seconds): as a controller, the writer sends an object's next
// update once the last one is answered, so that each Machine's writes are applied in their order. Such a
// turn is skipped (fleet.skipped); the writes made and failed are returned.
func (f *fleet) writeUntil(ctx context.Context, rate float64, machines int, done func() bool) (int, int) {
	interval := time.Duration(float64(time.Second) / rate)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var wg sync.WaitGroup
	var failed atomic.Int64
	n := len(f.byNamespace)
	if len(f.busy) != n*machines {
		f.busy = make([]atomic.Bool, n*machines)
	}
	k := f.lastWrite
	defer func() { f.lastWrite = k }()
	turn, made := f.lastTurn, 0
	defer func() { f.lastTurn = turn }()
	for !done() {
		<-tick.C
		turn++
		i := (turn - 1) % n
		j := ((turn - 1) / n) % machines
		busy := &f.busy[i*machines+j]
		if !busy.CompareAndSwap(false, true) {
			f.skipped.Add(1)
			continue
		}
		k++
		made++
		wg.Add(1)
		go func(k, i, j int) {
			defer wg.Done()
			defer busy.Store(false)
			if err := f.patch(ctx, k, i, j); err != nil {
				if failed.Add(1) <= 3 {
					logln("  write: ", err)
				}
			}
		}(k, i, j)
	}
	wg.Wait()
	return made, int(failed.Load())
}

// writeEach writes the first Machine of every namespace once.
func (f *fleet) writeEach(ctx context.Context) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	base := int(time.Now().UnixNano() / 1000) // write numbers of their own
	for i := range f.byNamespace {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := f.patch(ctx, base+i, i, 0); err != nil {
				logln("  write:", err)
			}
		}()
	}
	wg.Wait()
}

// patch sets write k's number on Machine j of namespace i and records when it was answered.
func (f *fleet) patch(ctx context.Context, k, i, j int) error {
	m := f.byNamespace[i]
	gvr := machinesGVR
	if f.private {
		gvr = privateGVR(gvr)
	}
	body := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"%d"}}}`, seqAnnotation, k)
	sent := time.Now()
	got, err := m.dyn.Resource(gvr).Namespace(m.namespace).Patch(ctx, machineName(j), types.MergePatchType, body, metav1.PatchOptions{})
	if err != nil {
		return err
	}
	if f.debug {
		f.rec.mu.Lock()
		f.rec.responses[k] = fmt.Sprintf("%s uid %s rv %s seq %d", got.GetAPIVersion(), got.GetUID(), got.GetResourceVersion(), seqOf(got))
		f.rec.mu.Unlock()
	}
	f.rec.answer(k, i, j, sent, time.Now())
	return nil
}

// waitSeen waits up to timeout until every watcher has seen every write answered to a namespace include
// accepts (every namespace if nil), or a later write of the same Machine.
func (f *fleet) waitSeen(ctx context.Context, timeout time.Duration, include func(int) bool) error {
	deadline := time.Now().Add(timeout)
	for {
		_, t := f.rec.latencies(include)
		if t.missing == t.superseded {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d (write, watcher) pairs not seen in %s", t.missing-t.superseded, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// copyFile copies the executable from to to (a new file: no page of its cache is shared with from's).
func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o755)
}

// started is when the run started; logf and logln prefix what they print on stderr with the time since.
var started = time.Now()

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%7.1fs "+format+"\n", append([]any{time.Since(started).Seconds()}, args...)...)
}

func logln(args ...any) { logf("%s", fmt.Sprint(args...)) }
