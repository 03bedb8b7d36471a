package migration

import (
	"context"
	"testing"
	"time"

	"github.com/openshift/hypershift-capi-proxy/translate"
)

// benchShape is the README's figure: 1 Cluster, 5 MachineDeployments (NodePools) with 20 Machines each,
// their infrastructure objects and Secrets.
var benchShape = shape{nodePools: 5, machinesPerPool: 20}

// BenchmarkMigrate migrates a namespace of benchShape per iteration (make bench-migration): ns/op is the
// wall time of a whole migration without the grace periods after each label change (2 x --grace-period
// in production), objects/s the objects of the mapped kinds moved per second of it.
func BenchmarkMigrate(b *testing.B) {
	ctx := context.Background()
	c := newClients(b)
	m := newMigrator(b, nil)
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
		objects += n
	}
	b.ReportMetric(float64(objects)/elapsed.Seconds(), "objects/s")
	b.ReportMetric(float64(objects)/float64(b.N), "objects/op")
}
