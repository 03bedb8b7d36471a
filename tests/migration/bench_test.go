package migration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openshift/hypershift-capi-proxy/migration"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// benchShape is the figure of docs/migration.md ("Tested and measured"): 1 Cluster, 5
// MachineDeployments (NodePools) with 20 Machines each, their infrastructure objects and Secrets.
var benchShape = shape{nodePools: 5, machinesPerPool: 20}

// BenchmarkMigrate migrates a namespace of benchShape per iteration (make bench-migration): ns/op is the
// wall time of a whole migration without the grace periods after each label change (3 x --grace-period
// in production), objects/s the objects of the mapped kinds moved per second of it, and s-<phase>/op the
// seconds spent in each phase (writes are held while copying and retiring).
func BenchmarkMigrate(b *testing.B) {
	ctx := context.Background()
	c := newClients(b)
	// The time spent in each phase, for the report.
	var phase migration.Phase
	var since time.Time
	inPhase := map[migration.Phase]time.Duration{}
	m, err := migration.New(migration.Options{Config: env.DirectConfig(env.AdminToken), Grace: -1, RetireTimeout: 5 * time.Minute,
		Progress: func(e migration.Event) {
			if e.Phase == phase {
				return
			}
			now := time.Now()
			if phase != "" {
				inPhase[phase] += now.Sub(since)
			}
			phase, since = e.Phase, now
		}})
	if err != nil {
		b.Fatal(err)
	}
	var objects int
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ns := newNamespace(ctx, b, c, "bench")
		benchShape.create(ctx, b, c.dyn, c.kube, ns)
		if err := m.Adopt(ctx, ns); err != nil {
			b.Fatal(err)
		}
		n := len(readShape(ctx, b, c, ns, translate.ToPrivate))
		b.StartTimer()
		start := time.Now()
		if err := m.Migrate(ctx, ns); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
		phase = ""
		objects += n
	}
	for _, p := range []migration.Phase{migration.PhasePausing, migration.PhaseCopying, migration.PhaseRetiring, migration.PhaseResuming} {
		b.ReportMetric(inPhase[p].Seconds()/float64(b.N), "s-"+strings.ToLower(string(p))+"/op")
	}
	b.ReportMetric(float64(objects)/elapsed.Seconds(), "objects/s")
	b.ReportMetric(float64(objects)/float64(b.N), "objects/op")
}
