package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/openshift/hypershift-capi-proxy/tests/bench/benchkit"
)

// Goals of issue 27, capi-proxy against the bare proxy.
const (
	goalP99     = 1.10 // write->event p99
	goalMemory  = 1.00 // RSS growth per hosted cluster
	goalRelist  = 1.10 // time until every informer is live after a restart
	goalCutover = 1.20 // cluster-wide write->event p99 while namespaces are cut over, against steady state
)

// medianOf is the median over rounds of get.
func medianOf(rs []*legResult, get func(*legResult) float64) float64 {
	var v []float64
	for _, r := range rs {
		v = append(v, get(r))
	}
	return benchkit.Percentile(v, 50)
}

// pooled joins every round's samples of get.
func pooled(rs []*legResult, get func(*legResult) []float64) []float64 {
	var v []float64
	for _, r := range rs {
		v = append(v, get(r)...)
	}
	return v
}

func sum(rs []*legResult, get func(*legResult) float64) float64 {
	t := 0.0
	for _, r := range rs {
		t += get(r)
	}
	return t
}

func (res *results) print(w io.Writer) {
	bare, proxy := res.byLeg["bare"], res.byLeg["proxy"]
	o := res.o
	fmt.Fprintf(w, "%d hosted-control-plane namespaces (%d objects), %d informers and %d client connections per leg (%d Machine watchers), %.0f writes/s for %s, %d round(s)\n\n",
		o.namespaces, res.objects, res.informers, 2*o.namespaces+1, res.watchN, o.rate, o.duration, o.rounds)
	fmt.Fprintln(w, "| | bare proxy | capi-proxy | capi-proxy / bare | goal |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---|")
	// row prints one line: the value(s) of every get for each leg ("a / b / c" for several), and the ratio
	// of the last against its goal.
	row := func(name, format string, goal float64, goalText string, gets ...func([]*legResult) float64) {
		cell := func(rs []*legResult) (string, float64) {
			if len(rs) == 0 {
				return "", 0
			}
			var parts []string
			v := 0.0
			for _, get := range gets {
				v = get(rs)
				parts = append(parts, fmt.Sprintf(format, v))
			}
			return strings.Join(parts, " / "), v
		}
		bs, b := cell(bare)
		ps, p := cell(proxy)
		ratio, verdict := "", goalText
		if b != 0 && p != 0 {
			r := p / b
			ratio = fmt.Sprintf("%.2f", r)
			if goal > 0 {
				if r <= goal {
					verdict += " (met)"
				} else {
					verdict += " (missed)"
				}
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", name, bs, ps, ratio, verdict)
	}
	lat := func(get func(*legResult) []float64, p float64) func([]*legResult) float64 {
		return func(rs []*legResult) float64 { return benchkit.Percentile(pooled(rs, get), p) }
	}
	all := func(r *legResult) []float64 {
		return append(append([]float64(nil), r.lat.namespaced...), r.lat.clusterWide...)
	}
	nsd := func(r *legResult) []float64 { return r.lat.namespaced }
	cw := func(r *legResult) []float64 { return r.lat.clusterWide }
	answered := func(r *legResult) []float64 {
		return append(append([]float64(nil), r.lat.namespacedAnswered...), r.lat.clusterWideAnswered...)
	}
	med := func(get func(*legResult) float64) func([]*legResult) float64 {
		return func(rs []*legResult) float64 { return medianOf(rs, get) }
	}
	cpuPer := func(per func(*legResult) float64) func([]*legResult) float64 {
		return func(rs []*legResult) float64 {
			return ms(time.Duration(sum(rs, func(r *legResult) float64 { return float64(r.cpu) }))) / sum(rs, per)
		}
	}
	count := func(get func(*legResult) int) func([]*legResult) float64 {
		return func(rs []*legResult) float64 { return sum(rs, func(r *legResult) float64 { return float64(get(r)) }) }
	}
	// perCluster is the growth of a memory figure per hosted cluster, between the fleet with half the
	// namespaces' managers and with all of them.
	perCluster := func(get func(benchkit.Memory) float64) func([]*legResult) float64 {
		return med(func(r *legResult) float64 {
			return (get(r.synced) - get(r.half)) * 1024 / float64(o.namespaces-r.halfN)
		})
	}
	row("write->event p50, ms (every watcher)", "%.1f", 0, "", lat(all, 50))
	row("write->event p99, ms (every watcher)", "%.1f", goalP99, fmt.Sprintf("<= %.2fx", goalP99), lat(all, 99))
	row("write->event p50 / p99, ms: the namespaces' watchers", "%.1f", 0, "", lat(nsd, 50), lat(nsd, 99))
	row("write->event p50 / p99, ms: the cluster-wide watcher", "%.1f", 0, "", lat(cw, 50), lat(cw, 99))
	row("the write itself (PATCH through the proxy), p50 / p99, ms", "%.1f", 0, "", lat(func(r *legResult) []float64 { return r.lat.writes }, 50),
		lat(func(r *legResult) []float64 { return r.lat.writes }, 99))
	row("from the write's response to the event, p50 / p99, ms (every watcher)", "%.1f", 0, "", lat(answered, 50), lat(answered, 99))
	row("proxy CPU per event, ms (the write's share included)", "%.3f", 0, "", cpuPer(func(r *legResult) float64 { return float64(r.events) }))
	row("proxy CPU per write and its events, ms", "%.2f", 0, "", cpuPer(func(r *legResult) float64 { return float64(r.writes) }))
	row("RSS idle -> half the namespaces' managers synced -> all -> after the writes, MiB", "%.1f", 0, "",
		med(func(r *legResult) float64 { return r.idle.RSS }), med(func(r *legResult) float64 { return r.half.RSS }),
		med(func(r *legResult) float64 { return r.synced.RSS }), med(func(r *legResult) float64 { return r.steady.RSS }))
	row("anonymous RSS growth per hosted cluster, KiB", "%.0f", 0, "", perCluster(func(m benchkit.Memory) float64 { return m.Anon }))
	row("RSS growth per hosted cluster, KiB", "%.0f", goalMemory, fmt.Sprintf("<= %.2fx", goalMemory), perCluster(func(m benchkit.Memory) float64 { return m.RSS }))
	row("cold sync of the fleet, s", "%.2f", 0, "", med(func(r *legResult) float64 { return r.coldSync.Seconds() }))
	if o.restart {
		row("restart: requests, relists / resumed watches / failed", "%.0f", 0, "",
			med(func(r *legResult) float64 { return float64(r.storm.relists) }), med(func(r *legResult) float64 { return float64(r.storm.watches) }),
			med(func(r *legResult) float64 { return float64(r.storm.failed) }))
		row("restart: new proxy's CPU from the switch until every informer was live, ms", "%.0f", 0, "", med(func(r *legResult) float64 { return ms(r.stormCPU) }))
		row("restart: new proxy's peak RSS from its start (startup included) until then, MiB", "%.1f", 0, "", med(func(r *legResult) float64 { return r.stormPeak.HWM }))
		row("restart: every informer live again, s after the old proxy exited", "%.2f", goalRelist, fmt.Sprintf("<= %.2fx", goalRelist),
			med(func(r *legResult) float64 { return r.relist.Seconds() }))
	}
	row("writes / failed / events delivered", "%.0f", 0, "", count(func(r *legResult) int { return r.writes }),
		count(func(r *legResult) int { return r.writeErrors }), count(func(r *legResult) int { return r.events }))
	row("events lost / duplicated / out of order", "%.0f", 0, "0 / 0 / 0", count(func(r *legResult) int { return r.missing }),
		count(func(r *legResult) int { return r.duplicates }), count(func(r *legResult) int { return r.outOfOrder }))
	if o.restart {
		row("writes after the restart a watcher did not see", "%.0f", 0, "0", count(func(r *legResult) int { return r.afterMissing }))
	}
	row("client connections with the fleet synced", "%.0f", 0, fmt.Sprintf("%d", 2*o.namespaces+1), med(func(r *legResult) float64 { return float64(r.connections) }))
	for _, rs := range [][]*legResult{bare, proxy} {
		for _, r := range rs {
			if r.restartFailed != "" {
				fmt.Fprintln(w, "\nrestart:", r.restartFailed)
			}
		}
	}
	res.printCutover(w)
	fmt.Fprintf(w, "\n%d CPUs (%s); load average %s before, %s after; total %s\n", runtime.NumCPU(), benchkit.CPUModel(),
		res.loadBefore, res.loadAfter, time.Since(res.start).Round(time.Second))
}

// printCutover prints the cut-over phase of the capi-proxy's rounds beside their steady state.
func (res *results) printCutover(w io.Writer) {
	var rounds []*legResult
	for _, r := range res.byLeg["proxy"] {
		if r.cut != nil {
			rounds = append(rounds, r)
		}
	}
	if len(rounds) == 0 {
		return
	}
	c0 := rounds[0].cut
	fmt.Fprintf(w, "\nCut-over, capi-proxy: %d namespace(s) moved to the upstream groups and back (migration rollback, then migrate), one after the other, while the writes went on at %.0f/s; %d label changes in %s (first round)\n\n",
		len(c0.moving), res.o.rate, c0.labels, c0.took.Round(time.Second))
	pct := func(get func(*legResult) []float64, p float64) float64 {
		return benchkit.Percentile(pooled(rounds, get), p)
	}
	steadyCW := func(r *legResult) []float64 { return r.lat.clusterWide }
	cutCW := func(r *legResult) []float64 { return r.cut.still.clusterWide }
	steadyNS := func(r *legResult) []float64 { return r.lat.namespaced }
	cutNS := func(r *legResult) []float64 { return r.cut.still.namespaced }
	fmt.Fprintln(w, "| writes to the namespaces not moving, write->event | steady state | during the cut-over | cut-over / steady | goal |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---|")
	for _, l := range []struct {
		name        string
		steady, cut func(*legResult) []float64
		goal        float64
	}{{"at the cluster-wide watcher, p50 / p99 ms", steadyCW, cutCW, goalCutover}, {"at the namespaces' watchers, p50 / p99 ms", steadyNS, cutNS, 0}} {
		s99, c99 := pct(l.steady, 99), pct(l.cut, 99)
		ratio, verdict := "", ""
		if s99 > 0 {
			ratio = fmt.Sprintf("%.2f", c99/s99)
		}
		if l.goal > 0 {
			verdict = fmt.Sprintf("p99 <= %.2fx", l.goal)
			if s99 > 0 && c99/s99 <= l.goal {
				verdict += " (met)"
			} else {
				verdict += " (missed)"
			}
		}
		fmt.Fprintf(w, "| %s | %.1f / %.1f | %.1f / %.1f | %s | %s |\n", l.name, pct(l.steady, 50), s99, pct(l.cut, 50), c99, ratio, verdict)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| during the cut-over | capi-proxy | goal |")
	fmt.Fprintln(w, "|---|---:|---|")
	total := func(get func(*cutResult) int) int {
		t := 0
		for _, r := range rounds {
			t += get(r.cut)
		}
		return t
	}
	line := func(name, goal string, gets ...func(*cutResult) int) {
		var parts []string
		for _, g := range gets {
			parts = append(parts, fmt.Sprint(total(g)))
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", name, strings.Join(parts, " / "), goal)
	}
	line("relists by the informers of the namespaces not moving", "0", func(c *cutResult) int { return c.stillCounts.relists })
	line("relists by the cluster-wide informers / by the moving namespaces' informers", "",
		func(c *cutResult) int { return c.cwCounts.relists }, func(c *cutResult) int { return c.movingCounts.relists })
	line("writes to the namespaces not moving: (write, watcher) pairs never seen / seen only through a later write / duplicated / out of order", "0 / 0 / 0 / 0",
		func(c *cutResult) int { return c.stillTally.missing - c.stillTally.superseded }, func(c *cutResult) int { return c.stillTally.superseded },
		func(c *cutResult) int { return c.duplicates }, func(c *cutResult) int { return c.outOfOrder })
	line("writes to the moving namespaces: pairs never seen / seen only through a later write", "0 / -",
		func(c *cutResult) int { return c.movedTally.missing - c.movedTally.superseded }, func(c *cutResult) int { return c.movedTally.superseded })
	fmt.Fprintf(w, "| writes to the moving namespaces, write->event p50 / p99 ms (every watcher) | %.1f / %.1f | |\n",
		pct(func(r *legResult) []float64 {
			return append(append([]float64(nil), r.cut.moved.namespaced...), r.cut.moved.clusterWide...)
		}, 50),
		pct(func(r *legResult) []float64 {
			return append(append([]float64(nil), r.cut.moved.namespaced...), r.cut.moved.clusterWide...)
		}, 99))
	line("writes / answered 429 while held (client-go retried them) / failed after client-go's retries / turns skipped (the Machine's last write still held)", "",
		func(c *cutResult) int { return c.writes }, func(c *cutResult) int { return int(c.held) }, func(c *cutResult) int { return c.writeErrors },
		func(c *cutResult) int { return int(c.skipped) })
	for _, r := range rounds {
		if r.cut.err != "" {
			fmt.Fprintln(w, "\ncut-over:", r.cut.err)
		}
	}
}
