package webhook

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
)

// admissionLabels are the labels of one AdmissionReview: the manager (a configured name), the upstream
// kind (from the route table, "" otherwise) and the operation (CREATE, UPDATE, DELETE, CONNECT or "").
type admissionLabels struct{ manager, kind, operation string }

// admissionMetrics are the admission webhook's metrics, registered in the proxy's registry beside the
// conversion webhook's:
//
//   - capi_proxy_admission_webhook_requests_total{manager, kind, operation, code}: reviews served; code is
//     the HTTP status code of the answer, or for a denial the code of its status (403 without one);
//   - capi_proxy_admission_webhook_duration_seconds{manager, kind, operation}: time to serve one, the
//     webhook server included;
//   - capi_proxy_admission_webhook_errors_total{manager, kind, operation, reason}: calls that failed for
//     the apiserver, by reason: unreachable, timeout, bad_response (a non-200 answer or no
//     AdmissionReview), translation.
type admissionMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	errors   *prometheus.CounterVec
}

// admissionBuckets are seconds, from 1ms to 30s (the longest timeoutSeconds a webhook may have).
var admissionBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

func newAdmissionMetrics(m *metrics.Metrics) *admissionMetrics {
	if m == nil {
		return nil
	}
	labels := []string{"manager", "kind", "operation"}
	a := &admissionMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "capi_proxy", Name: "admission_webhook_requests_total",
			Help: "AdmissionReviews served, by manager, upstream kind, operation and HTTP status code (a denial's status code).",
		}, append(labels, "code")),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "capi_proxy", Name: "admission_webhook_duration_seconds", Buckets: admissionBuckets,
			Help: "Time to serve one AdmissionReview, the manager's webhook server included, by manager, upstream kind and operation.",
		}, labels),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "capi_proxy", Name: "admission_webhook_errors_total",
			Help: "AdmissionReviews whose call failed for the apiserver, by manager, upstream kind, operation and reason.",
		}, append(labels, "reason")),
	}
	m.Registry().MustRegister(a.requests, a.duration, a.errors)
	return a
}

func (a *admissionMetrics) observe(l admissionLabels, code int, d time.Duration) {
	if a == nil {
		return
	}
	a.requests.WithLabelValues(l.manager, l.kind, l.operation, strconv.Itoa(code)).Inc()
	a.duration.WithLabelValues(l.manager, l.kind, l.operation).Observe(d.Seconds())
}

func (a *admissionMetrics) error(l admissionLabels, reason string) {
	if a == nil {
		return
	}
	a.errors.WithLabelValues(l.manager, l.kind, l.operation, reason).Inc()
}
