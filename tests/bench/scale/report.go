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

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

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
	fmt.Fprintf(w, "\n%d CPUs (%s); load average %s before, %s after; total %s\n", runtime.NumCPU(), benchkit.CPUModel(),
		res.loadBefore, res.loadAfter, time.Since(res.start).Round(time.Second))
}
