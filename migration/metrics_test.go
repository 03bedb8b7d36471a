package migration

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openshift/hypershift-capi-proxy/translate"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.setPhase("a", PhasePausing)
	m.setPhase("a", PhaseCopying)
	m.setPhase("b", PhaseCopying)
	m.setPhase("b", PhaseComplete)
	m.copied(translate.ToPrivate)
	m.copied(translate.ToPrivate)
	m.observeRun(translate.ToPrivate, time.Now(), nil)
	m.observeRun(translate.ToUpstream, time.Now(), errors.New("x"))
	want := `
# HELP capi_proxy_migration_namespaces Namespaces moved by this process, by the phase they are at.
# TYPE capi_proxy_migration_namespaces gauge
capi_proxy_migration_namespaces{phase="Complete"} 1
capi_proxy_migration_namespaces{phase="Copying"} 1
capi_proxy_migration_namespaces{phase="Pausing"} 0
capi_proxy_migration_namespaces{phase="Resuming"} 0
capi_proxy_migration_namespaces{phase="Retiring"} 0
# HELP capi_proxy_migration_objects_copied_total Objects created or updated in the destination groups.
# TYPE capi_proxy_migration_objects_copied_total counter
capi_proxy_migration_objects_copied_total{direction="ToPrivate"} 2
# HELP capi_proxy_migration_errors_total Runs of a move that ended with an error.
# TYPE capi_proxy_migration_errors_total counter
capi_proxy_migration_errors_total{direction="ToUpstream"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "capi_proxy_migration_namespaces",
		"capi_proxy_migration_objects_copied_total", "capi_proxy_migration_errors_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.duration); n != 2 {
		t.Errorf("%d duration series, want 2", n)
	}
	// A nil *Metrics records nothing.
	var none *Metrics
	none.setPhase("a", PhaseCopying)
	none.copied(translate.ToPrivate)
	none.observeRun(translate.ToPrivate, time.Now(), nil)
}
