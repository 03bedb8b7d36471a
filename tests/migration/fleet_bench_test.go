package migration

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/openshift/hypershift-capi-proxy/migration"
	"github.com/openshift/hypershift-capi-proxy/tests/framework"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// fleetShape is a hosted cluster of the fleet benchmark: two NodePools of three Machines, with the
// Cluster (its controlPlaneRef a HostedControlPlane), AWSCluster, AgentCluster, machine templates,
// MachineHealthChecks, infrastructure machines and Secrets of shape: 23 objects of the mapped kinds and
// 9 Secrets.
var fleetShape = shape{nodePools: 2, machinesPerPool: 3}

// envInt reads a positive integer from the environment, def if unset.
func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		b.Fatalf("%s=%q: want a number", name, v)
	}
	return n
}

// BenchmarkMigrateNamespaces migrates a fleet of NAMESPACES (default 10) hosted-control-plane namespaces
// of fleetShape (MACHINES Machines per NodePool, default 3) the way `capi-proxy migrate run -n ...` does:
// Migrator.MigrateNamespaces at the command's client rate limit (QPS requests/s, 200), GC_OVERLAP
// namespaces' garbage-collector waits beside the next move (default migration.DefaultOverlap; 1 moves
// them strictly one after the other), GRACE_MS for the proxy to follow the label (default
// migration.DefaultGrace, 5000; 0 does not wait: a bound of the two waits the proxy's acknowledging Lease
// ends, and the whole wait before writes are released), while Cluster API's real manager reconciles every
// namespace through that proxy (MANAGER=0 leaves it out). make bench-migration-fleet runs it.
//
// Once per run (-benchtime 1x): wall-s is the whole run; held-p50-s and held-max-s the writes held per
// namespace; gc-share the part of the namespaces' moves spent waiting for the garbage collector; gc-tail-s
// the time from the release of the last namespace's writes to the end; s-<phase>/ns the seconds per
// namespace in each phase; the log has the migration's V(2) timing lines summed per namespace by the
// phase it was in (stepTimes). Afterwards nothing may be lost: every object is in the private groups with its
// spec and labels (and, without the manager, status and annotations) translated, every ownerReference
// names a live copy, no Secret was collected, and the upstream groups are empty.
func BenchmarkMigrateNamespaces(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := envInt(b, "NAMESPACES", 10)
	fleet := shape{nodePools: fleetShape.nodePools, machinesPerPool: envInt(b, "MACHINES", fleetShape.machinesPerPool)}
	overlap := envInt(b, "GC_OVERLAP", migration.DefaultOverlap)
	grace := time.Duration(envInt(b, "GRACE_MS", int(migration.DefaultGrace/time.Millisecond))) * time.Millisecond
	if grace == 0 {
		grace = -1 // no wait (Options reads 0 as the default)
	}
	withManager := os.Getenv("MANAGER") != "0"
	c := newClients(b)

	seedStart := time.Now()
	adopter := newMigrator(b, nil)
	var namespaces []string
	for i := 0; i < n; i++ {
		ns := newNamespace(ctx, b, c, "fleet")
		fleet.create(ctx, b, c.dyn, c.kube, ns)
		if err := adopter.Adopt(ctx, ns); err != nil {
			b.Fatal(err)
		}
		namespaces = append(namespaces, ns)
	}
	b.Logf("seeded %d namespaces of %d Machines in %s", n, fleet.nodePools*fleet.machinesPerPool, time.Since(seedStart).Round(time.Second))

	// A proxy of the bench's own, acknowledging the labels it follows with a Lease: the migration's waits
	// after each change of the label end once it applied it (GRACE_MS bounds them), as they would in
	// a cluster of proxies that all publish one.
	acking, _ := startAcknowledgingProxy(ctx, b, c)
	viaProxy, err := dynamic.NewForConfig(acking.Config(env.AdminToken))
	if err != nil {
		b.Fatal(err)
	}
	if withManager {
		// One manager for the fleet: it watches every namespace (as TestMigrateWhileCAPIManagerRuns says,
		// CAPI v1.14.2 cannot run with a namespaced cache), so one process reconciles every hosted cluster
		// through the proxy, as HyperShift's per-namespace managers together would.
		manager, err := env.StartManager(ctx, acking, framework.CAPIManager, "")
		if err != nil {
			b.Fatal(err)
		}
		defer manager.Stop()
		// The manager's first pass over the fleet takes longer the more namespaces it holds, at its client
		// rate limit (48-61 s for 20 on the project's idle machine; for 100, 8 min 34 s in one run and more
		// than 9 min 50 s in another): 90 s, and 10 s more per namespace.
		start := time.Now()
		within := 90*time.Second + time.Duration(len(namespaces))*10*time.Second
		for _, ns := range namespaces {
			for p := 0; p < fleet.nodePools; p++ {
				waitReconciledWithin(ctx, b, viaProxy, ns, fmt.Sprintf("np%d", p), within-time.Since(start))
			}
		}
		b.Logf("the CAPI manager reconciled every MachineDeployment in %s", time.Since(start).Round(time.Second))
	}
	type seeded struct {
		objects map[string]*unstructured.Unstructured
		secrets map[string]types.UID
	}
	before := map[string]seeded{}
	objects := 0
	for _, ns := range namespaces {
		before[ns] = seeded{readShape(ctx, b, c, ns, translate.ToPrivate), secretsOf(ctx, b, c, ns)}
		objects += len(before[ns].objects)
	}

	w := newWindows()
	cfg := env.DirectConfig(env.AdminToken)
	cfg.QPS, cfg.Burst = float32(envInt(b, "QPS", 200)), envInt(b, "QPS", 200)*2 // the command's (proxy/migrate.go)
	steps := &stepTimes{w: w, sum: map[string]time.Duration{}, count: map[string]int{}}
	m, err := migration.New(migration.Options{Config: cfg, Grace: grace, Overlap: overlap, Progress: w.event, Log: logr.New(steps)})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	if err := m.MigrateNamespaces(ctx, namespaces, nil); err != nil {
		b.Fatal(err)
	}
	wall := time.Since(start)
	b.StopTimer()

	for _, o := range w.overlap {
		b.Errorf("writes held in two namespaces at once: %s", o)
	}
	var held []time.Duration
	var gc, total time.Duration
	lastRelease := start
	for _, ns := range namespaces {
		held = append(held, w.heldFor[ns])
		gc += w.gcFor[ns]
		total += w.total[ns]
		if r := w.released[ns]; r.After(lastRelease) {
			lastRelease = r
		}
	}
	sort.Slice(held, func(i, j int) bool { return held[i] < held[j] })
	b.ReportMetric(wall.Seconds(), "wall-s")
	b.ReportMetric(held[len(held)/2].Seconds(), "held-p50-s")
	b.ReportMetric(held[len(held)-1].Seconds(), "held-max-s")
	b.ReportMetric(gc.Seconds()/total.Seconds(), "gc-share")
	b.ReportMetric(start.Add(wall).Sub(lastRelease).Seconds(), "gc-tail-s")
	b.ReportMetric(float64(objects), "objects")
	for _, p := range []migration.Phase{migration.PhasePausing, migration.PhaseCopying, migration.PhaseRetiring, migration.PhaseResuming} {
		b.ReportMetric(w.inPhase[p].Seconds()/float64(n), "s-"+strings.ToLower(string(p))+"/ns")
	}
	b.Logf("%d namespaces, %d objects, overlap %d, grace %s, manager %v: wall %s, held p50 %s max %s, GC wait %s of %s of moves (%.0f%%)",
		n, objects, overlap, grace, withManager, wall.Round(time.Millisecond), held[len(held)/2].Round(time.Millisecond),
		held[len(held)-1].Round(time.Millisecond), gc.Round(time.Second), total.Round(time.Second), 100*gc.Seconds()/total.Seconds())

	b.Logf("per namespace, by the phase it was in (held: writes held), the migration's timing log lines:\n%s", steps.table(n))

	// Nothing lost.
	for _, ns := range namespaces {
		checkFleetMoved(ctx, b, c, ns, before[ns].objects, before[ns].secrets, withManager)
	}
}

// checkFleetMoved is checkMoved where a CAPI manager ran: it compares spec and labels only (the manager
// writes status and conditions until the migration pauses the namespace).
func checkFleetMoved(ctx context.Context, b *testing.B, c clients, ns string, before map[string]*unstructured.Unstructured, secrets map[string]types.UID, withManager bool) {
	b.Helper()
	if !withManager {
		checkMoved(ctx, b, c, ns, before, secrets, translate.ToPrivate)
		return
	}
	after := readShape(ctx, b, c, ns, translate.ToUpstream)
	if left := readShape(ctx, b, c, ns, translate.ToPrivate); len(left) > 0 {
		b.Errorf("%s: %d objects left in the upstream groups: %v", ns, len(left), keys(left))
	}
	for name, src := range before {
		dst, ok := after[name]
		if !ok {
			b.Errorf("%s: %s: no copy", ns, name)
			continue
		}
		want, got := translated(b, src, translate.ToPrivate), dst
		for _, field := range []string{"spec"} {
			if diff := cmp.Diff(want.Object[field], got.Object[field]); diff != "" {
				b.Errorf("%s: %s: %s differs (-want +got):\n%s", ns, name, field, diff)
			}
		}
		if diff := cmp.Diff(want.GetLabels(), got.GetLabels()); diff != "" {
			b.Errorf("%s: %s: labels differ (-want +got):\n%s", ns, name, diff)
		}
		if len(dst.GetOwnerReferences()) != len(src.GetOwnerReferences()) {
			b.Errorf("%s: %s: %d ownerReferences, want %d", ns, name, len(dst.GetOwnerReferences()), len(src.GetOwnerReferences()))
		}
		if dst.GetDeletionTimestamp() != nil {
			b.Errorf("%s: %s is being deleted", ns, name)
		}
	}
	gcBarrier(ctx, b, c, ns)
	if diff := cmp.Diff(secrets, secretsOf(ctx, b, c, ns)); diff != "" {
		b.Errorf("%s: Secrets changed (-before +after):\n%s", ns, diff)
	}
	checkOwners(ctx, b, c, ns, translate.ToPrivate)
}

// stepTimes is a logr.LogSink that sums the durations of the migration's V(2) "timing" lines (Migrator.timed)
// by the phase the namespace was in when the step ended, as windows saw it from the events: where one
// namespace's move spends its time.
type stepTimes struct {
	w     *windows
	mu    sync.Mutex
	sum   map[string]time.Duration // "<phase>/<step>"
	count map[string]int
}

func (s *stepTimes) Init(logr.RuntimeInfo)  {}
func (s *stepTimes) Enabled(level int) bool { return level <= 2 }
func (s *stepTimes) Info(_ int, msg string, kv ...any) {
	if msg != "timing" {
		return
	}
	var ns, step string
	var seconds float64
	for i := 0; i+1 < len(kv); i += 2 {
		switch kv[i] {
		case "namespace":
			ns, _ = kv[i+1].(string)
		case "step":
			step, _ = kv[i+1].(string)
		case "seconds":
			seconds, _ = kv[i+1].(float64)
		}
	}
	s.w.mu.Lock()
	phase := string(s.w.phase[ns])
	_, held := s.w.held[ns]
	s.w.mu.Unlock()
	if phase == "" {
		phase = "(before)"
	}
	if held {
		phase += " (held)"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sum[phase+"/"+step] += time.Duration(seconds * float64(time.Second))
	s.count[phase+"/"+step]++
}
func (s *stepTimes) Error(error, string, ...any)    {}
func (s *stepTimes) WithValues(...any) logr.LogSink { return s }
func (s *stepTimes) WithName(string) logr.LogSink   { return s }

// table is one line per phase and step: seconds and times per namespace.
func (s *stepTimes) table(n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	for k := range s.sum {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&out, "  %-32s %6.2f s  %5.1f times\n", k, s.sum[k].Seconds()/float64(n), float64(s.count[k])/float64(n))
	}
	return out.String()
}
