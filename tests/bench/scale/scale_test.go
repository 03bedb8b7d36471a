package main

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// TestSmoke runs the benchmark at its smallest (two hosted clusters, two seconds of writes, a restart of
// each leg) and checks what it measured holds together: every manager has its own connection, every
// write reaches every watcher that covers its namespace exactly once and in order, the restart ends with
// every informer live, and a write after it reaches every watcher. It asserts no time or memory figure.
func TestSmoke(t *testing.T) {
	o := defaultOptions()
	o.namespaces, o.rate, o.duration, o.settle, o.drain, o.quiet = 2, 10, 2*time.Second, time.Second, time.Second, false
	o.cutover, o.cutoverGrace = 1, time.Second
	res, err := run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res.print(&out)
	t.Log("\n" + out.String())
	for _, leg := range []string{"bare", "proxy"} {
		rs := res.byLeg[leg]
		if len(rs) != 1 {
			t.Fatalf("%s: %d results, want 1", leg, len(rs))
		}
		r := rs[0]
		if want := int64(2*o.namespaces + 1); r.connections != want {
			t.Errorf("%s: %d client connections, want one per manager: %d", leg, r.connections, want)
		}
		if r.writes == 0 || r.writeErrors != 0 {
			t.Errorf("%s: %d writes, %d failed", leg, r.writes, r.writeErrors)
		}
		// Each write is seen by its namespace's CAPI manager and provider and by the operator.
		if got, want := len(r.lat.namespaced)+len(r.lat.clusterWide), 3*(r.writes-r.writeErrors); got != want || r.missing != 0 {
			t.Errorf("%s: %d events seen, %d missing, want %d", leg, got, r.missing, want)
		}
		if r.duplicates != 0 || r.outOfOrder != 0 {
			t.Errorf("%s: %d duplicated events, %d out of order", leg, r.duplicates, r.outOfOrder)
		}
		if r.restartFailed != "" || r.afterMissing != 0 {
			t.Errorf("%s: restart: %q; %d watchers missed a write after it", leg, r.restartFailed, r.afterMissing)
		}
	}
	// The cut-over of the last namespace: the other namespace's informers never relist, and every write
	// to it is seen by every watcher, or (at the cluster-wide watcher, which relists at every change of
	// the label) a later write of its Machine is.
	c := res.byLeg["proxy"][0].cut
	if c == nil || c.err != "" {
		t.Fatalf("cut-over: %+v", c)
	}
	if c.labels != 6 {
		t.Errorf("cut-over: %d label changes, want 6 (two moves of three)", c.labels)
	}
	if c.stillCounts.relists != 0 {
		t.Errorf("cut-over: %d relists by the informers of the namespace not moving", c.stillCounts.relists)
	}
	if lost := c.stillTally.missing - c.stillTally.superseded; lost != 0 || c.duplicates != 0 || c.outOfOrder != 0 {
		t.Errorf("cut-over: %d writes lost, %d duplicated, %d out of order", lost, c.duplicates, c.outOfOrder)
	}
	if lost := c.movedTally.missing - c.movedTally.superseded; lost != 0 {
		t.Errorf("cut-over: %d writes to the moving namespace lost", lost)
	}
}
