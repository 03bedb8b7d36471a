// Package metricstesting reads single samples out of a Prometheus registry, for tests.
package metricstesting

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Value returns the value of the counter or gauge, or the sample count of the histogram, name with
// exactly the labels want; -1 if there is none.
func Value(t testing.TB, g prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, metric := range f.GetMetric() {
			if !labelsEqual(metric.GetLabel(), want) {
				continue
			}
			switch {
			case metric.Counter != nil:
				return metric.Counter.GetValue()
			case metric.Gauge != nil:
				return metric.Gauge.GetValue()
			case metric.Histogram != nil:
				return float64(metric.Histogram.GetSampleCount())
			}
		}
	}
	return -1
}

func labelsEqual(got []*dto.LabelPair, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for _, l := range got {
		if v, ok := want[l.GetName()]; !ok || v != l.GetValue() {
			return false
		}
	}
	return true
}

// With returns a copy of labels with k set to v.
func With(labels map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for key, value := range labels {
		if key != k {
			out[key] = value
		}
	}
	return out
}
