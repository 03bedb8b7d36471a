package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/openshift/hypershift-capi-proxy/migration"
	"github.com/openshift/hypershift-capi-proxy/tests/bench/benchkit"
	"github.com/openshift/hypershift-capi-proxy/tests/framework"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

// cutResult is the cut-over phase of a round of the capi-proxy: the steady writes go on while namespaces
// move, one after the other, to the upstream groups and back (migration.Rollback, then Migrate: two
// cut-overs, three changes of the serving label each).
type cutResult struct {
	// moving are the namespaces cut over (their indexes); took how long their moves took.
	moving []int
	took   time.Duration
	// labels counts the changes of the serving label (not those of the migration's phase annotation alone).
	labels              int
	writes, writeErrors int
	// skipped counts the writes not made because the Machine's last write was still held.
	skipped int64
	// held counts the writes answered 429 while their namespace was held (client-go retries them).
	held int64
	// still are the latencies of the writes to the namespaces that did not move, moving those of the
	// namespaces that moved; stillTally and movingTally their (write, watcher) pairs not seen.
	still, moved           latency
	stillTally, movedTally tally
	duplicates, outOfOrder int
	cpu                    time.Duration
	stillCounts, cwCounts  counts
	movingCounts           counts
	err                    string
}

// upstreamRoutes are the routes of the kinds the fleet reads, every version: their upstream CRDs are what
// the cut-over moves the namespaces to and from.
func upstreamRoutes() []translate.Route {
	watched := map[string]bool{}
	for _, specs := range [][]watchSpec{capiManagerWatches, capaManagerWatches, operatorWatches} {
		for _, s := range specs {
			watched[s.gvr.GroupResource().String()] = true
		}
	}
	var out []translate.Route
	for _, r := range routes.Routes {
		if watched[r.Upstream.GroupResource().String()] {
			out = append(out, r)
		}
	}
	return out
}

// installUpstreamCRDs installs, as the platform has them, the upstream CRDs of the kinds the fleet reads,
// with their conversion webhook served in this process (framework.Env.InstallUpstreamCRDs); the caller
// stops the webhook.
func installUpstreamCRDs(ctx context.Context, env *framework.Env) (*framework.ConversionWebhook, error) {
	return env.InstallUpstreamCRDs(ctx, upstreamRoutes(), routes.APIVersionGetterSetters)
}

// cutover runs the cut-over phase on fleet f of the capi-proxy (process pid): -cutover namespaces, the
// last ones, move to the upstream groups and back, one after the other, while the writes go on at -rate
// over every namespace.
func (b *bench) cutover(ctx context.Context, f *fleet, tr *tracker, rec *recorder, pid int) *cutResult {
	n := b.o.namespaces
	cr := &cutResult{}
	movingSet := map[string]bool{}
	for i := max(0, n-b.o.cutover); i < n; i++ {
		cr.moving = append(cr.moving, i)
		movingSet[namespaceName(i)] = true
	}
	m, err := migration.New(migration.Options{Config: b.env.DirectConfig(b.env.AdminToken), Grace: b.o.cutoverGrace,
		Progress: func(e migration.Event) {
			// setNamespace's message: "namespace <label>=<mode>", the mode empty when only the phase changed.
			if e.Step == "label" && !strings.HasSuffix(e.Message, "=") {
				cr.labels++
				logf("    %s %s: %s", e.Namespace, e.Direction, e.Message)
			}
		}})
	if err != nil {
		cr.err = err.Error()
		return cr
	}
	rec.reset()
	tr.mark()
	cpu0 := benchkit.CPU(pid)
	skipped0 := f.skipped.Load()
	var stop atomic.Bool
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		cr.writes, cr.writeErrors = f.writeUntil(ctx, b.o.rate, b.o.machines, stop.Load)
	}()
	t := time.Now()
	for _, i := range cr.moving {
		ns := namespaceName(i)
		if err := m.Rollback(ctx, ns); err != nil {
			cr.err = fmt.Sprintf("rolling %s back: %v", ns, err)
			break
		}
		if err := m.Migrate(ctx, ns); err != nil {
			cr.err = fmt.Sprintf("migrating %s: %v", ns, err)
			break
		}
	}
	cr.took = time.Since(t)
	stop.Store(true)
	<-wrote
	cr.skipped = f.skipped.Load() - skipped0
	isMoving := func(i int) bool { return movingSet[namespaceName(i)] }
	still := func(i int) bool { return !isMoving(i) }
	if err := f.waitSeen(ctx, time.Minute, still); err != nil {
		logln("  cut-over, namespaces not moving: ", err)
	}
	if err := f.waitSeen(ctx, 30*time.Second, isMoving); err != nil {
		logln("  cut-over, moving namespaces: ", err)
	}
	cr.cpu = benchkit.CPU(pid) - cpu0
	if b.o.debug {
		b.debugCutover(ctx, f, tr, rec, t, movingSet)
	}
	cr.still, cr.stillTally = rec.latencies(still)
	cr.moved, cr.movedTally = rec.latencies(isMoving)
	rec.mu.Lock()
	cr.duplicates, cr.outOfOrder = rec.duplicates, rec.outOfOrder
	rec.mu.Unlock()
	cr.held = tr.held.Load()
	nsOf := func(key string) string {
		_, ns, _ := strings.Cut(managerOf(key), "/")
		return ns
	}
	cr.stillCounts = tr.count(func(k string) bool { ns := nsOf(k); return ns != "" && !movingSet[ns] })
	cr.movingCounts = tr.count(func(k string) bool { return movingSet[nsOf(k)] })
	cr.cwCounts = tr.count(func(k string) bool { return nsOf(k) == "" })
	logf("  cut-over of %d namespaces in %s: %d writes (%d held answers, %d failed); relists: %d by the namespaces not moving, %d cluster-wide, %d by the moving ones",
		len(cr.moving), cr.took.Round(time.Millisecond), cr.writes, cr.held, cr.writeErrors,
		cr.stillCounts.relists, cr.cwCounts.relists, cr.movingCounts.relists)
	return cr
}

// debugCutover prints, on stderr, the (write, watcher) pairs of the moving namespaces never seen, with
// what the watcher holds and what the apiserver holds, and the cluster-wide informers' requests.
func (b *bench) debugCutover(ctx context.Context, f *fleet, tr *tracker, rec *recorder, t0 time.Time, moving map[string]bool) {
	direct, err := dynamic.NewForConfig(b.env.DirectConfig(b.env.AdminToken))
	if err != nil {
		logln("debug: ", err)
		return
	}
	rec.mu.Lock()
	type miss struct{ k, i, j, w int }
	var misses []miss
	latest := map[[3]int]int{}
	for key := range rec.seen {
		if at, ok := rec.wrote[key[1]]; ok {
			m := [3]int{key[0], at[0], at[1]}
			latest[m] = max(latest[m], key[1])
		}
	}
	for k := range rec.answered {
		i, j := rec.wrote[k][0], rec.wrote[k][1]
		if !moving[namespaceName(i)] {
			continue
		}
		for _, w := range rec.watchers {
			if w.m.namespace != "" && w.m.namespace != namespaceName(i) {
				continue
			}
			if _, ok := rec.seen[[2]int{w.id, k}]; !ok && latest[[3]int{w.id, i, j}] < k {
				misses = append(misses, miss{k, i, j, w.id})
			}
		}
	}
	answered := maps.Clone(rec.answered)
	responses := maps.Clone(rec.responses)
	rec.mu.Unlock()
	slices.SortFunc(misses, func(a, b miss) int { return a.k - b.k })
	for _, m := range misses {
		w := f.watchers[m.w]
		ns, name := namespaceName(m.i), machineName(m.j)
		cached := -1
		if obj, ok, _ := w.inf.GetStore().GetByKey(ns + "/" + name); ok {
			cached = seqOf(obj)
		}
		stored := map[string]string{}
		for _, g := range []schema.GroupVersionResource{machinesGVR, privateGVR(machinesGVR)} {
			if u, err := direct.Resource(g).Namespace(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
				stored[g.Group] = fmt.Sprintf("uid %s rv %s seq %d", u.GetUID(), u.GetResourceVersion(), seqOf(u))
			} else {
				stored[g.Group] = err.Error()
			}
		}
		logf("debug: write %d to %s/%s answered at +%.1fs (%s) not seen by %s (it holds %d; stored %v)", m.k, ns, name,
			answered[m.k].Sub(t0).Seconds(), responses[m.k], w.key, cached, stored)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for key, reqs := range tr.byKey {
		if managerOf(key) != "operator" || !strings.Contains(key, "/machines?") {
			continue
		}
		for _, r := range reqs {
			end := "open"
			if !r.end.IsZero() {
				end = fmt.Sprintf("+%.2fs", r.end.Sub(t0).Seconds())
			}
			logf("debug: %s kind %d status %d sent +%.2fs headers +%.2fs initial-end %v end %s", key, r.kind, r.status,
				r.start.Sub(t0).Seconds(), r.header.Sub(t0).Seconds(), !r.initialEnd.IsZero(), end)
		}
	}
}

// debugSlowest prints, on stderr, the n slowest (write, watcher) pairs since t0: when the write was sent,
// its latency to the response and to the event.
func debugSlowest(rec *recorder, t0 time.Time, n int) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	type pair struct {
		k, w      int
		sent      time.Time
		resp, evt float64
	}
	var all []pair
	for key, seen := range rec.seen {
		k := key[1]
		sent, ok := rec.sent[k]
		if !ok {
			continue
		}
		all = append(all, pair{k, key[0], sent, ms(rec.answered[k].Sub(sent)), ms(seen.Sub(sent))})
	}
	slices.SortFunc(all, func(a, b pair) int { return int(b.evt - a.evt) })
	for _, p := range all[:min(n, len(all))] {
		logf("debug: write %d (namespace %d) sent +%.2fs: response after %.0f ms, event at %s after %.0f ms", p.k, rec.wrote[p.k][0],
			p.sent.Sub(t0).Seconds(), p.resp, rec.watchers[p.w].m.name, p.evt)
	}
}
