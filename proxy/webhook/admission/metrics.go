package admission

import (
	"time"

	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
)

// admissionLabels are the labels of one AdmissionReview: the manager (a configured name), the upstream
// kind (from the route table, "" otherwise) and the operation (CREATE, UPDATE, DELETE, CONNECT or "").
type admissionLabels struct{ manager, kind, operation string }

// admissionMetrics records the admission webhook's reviews in package metrics' registry
// (capi_proxy_admission_webhook_*: metrics.Metrics.ObserveAdmissionReview and AdmissionError); nil
// records nothing.
type admissionMetrics struct{ m *metrics.Metrics }

func newAdmissionMetrics(m *metrics.Metrics) *admissionMetrics {
	if m == nil {
		return nil
	}
	return &admissionMetrics{m: m}
}

func (a *admissionMetrics) observe(l admissionLabels, code int, d time.Duration) {
	if a == nil {
		return
	}
	a.m.ObserveAdmissionReview(l.manager, l.kind, l.operation, code, d)
}

// error records a call that failed for the apiserver: reason is unreachable, timeout, bad_response (a
// non-200 answer or no AdmissionReview) or translation.
func (a *admissionMetrics) error(l admissionLabels, reason string) {
	if a == nil {
		return
	}
	a.m.AdmissionError(l.manager, l.kind, l.operation, reason)
}
