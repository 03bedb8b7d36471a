package migration

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Metrics are the Prometheus metrics of the moves a process runs. A nil *Metrics records nothing.
type Metrics struct {
	namespaces *prometheus.GaugeVec
	objects    *prometheus.CounterVec
	errors     *prometheus.CounterVec
	duration   *prometheus.HistogramVec

	mu     sync.Mutex
	phases map[string]Phase
}

// NewMetrics registers the migration's metrics on reg:
//
//   - capi_proxy_migration_namespaces{phase}: namespaces this process moved (or is moving), by the phase
//     they are at;
//   - capi_proxy_migration_objects_copied_total{direction}: objects created or updated in the destination;
//   - capi_proxy_migration_errors_total{direction}: moves that ended with an error;
//   - capi_proxy_migration_duration_seconds{direction,result}: the time of each run of a move, result
//     "success" or "error".
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		namespaces: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "capi_proxy_migration_namespaces",
			Help: "Namespaces moved by this process, by the phase they are at."}, []string{"phase"}),
		objects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "capi_proxy_migration_objects_copied_total",
			Help: "Objects created or updated in the destination groups."}, []string{"direction"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "capi_proxy_migration_errors_total",
			Help: "Runs of a move that ended with an error."}, []string{"direction"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "capi_proxy_migration_duration_seconds",
			Help:    "Duration of each run of a move.",
			Buckets: prometheus.ExponentialBuckets(0.5, 2, 12)}, []string{"direction", "result"}),
		phases: map[string]Phase{},
	}
	for _, c := range []prometheus.Collector{m.namespaces, m.objects, m.errors, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, p := range Phases {
		m.namespaces.WithLabelValues(string(p))
	}
	return m, nil
}

func (m *Metrics) setPhase(namespace string, phase Phase) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.phases[namespace]; ok {
		m.namespaces.WithLabelValues(string(old)).Dec()
	}
	m.phases[namespace] = phase
	m.namespaces.WithLabelValues(string(phase)).Inc()
}

func (m *Metrics) copied(dir translate.Direction) {
	if m != nil {
		m.objects.WithLabelValues(dir.String()).Inc()
	}
}

func (m *Metrics) observeRun(dir translate.Direction, start time.Time, err error) {
	if m == nil {
		return
	}
	result := "success"
	if err != nil {
		result = "error"
		m.errors.WithLabelValues(dir.String()).Inc()
	}
	m.duration.WithLabelValues(dir.String(), result).Observe(time.Since(start).Seconds())
}
