// Package alerts checks the proxy's alerting rules (config/monitoring/prometheusrule.yaml, written by
// make generate from package install) with Prometheus' own parsers: the rule groups as a Prometheus
// rule file (rulefmt, which parses every expression and template) and each expression's selectors
// against the metrics the proxy exposes (package proxy/metrics). It is a module of its own so that
// Prometheus' dependencies never reach the proxy's go.mod.
package alerts

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/install"
	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
)

// prometheusRule is the part of a monitoring.coreos.com/v1 PrometheusRule the test reads: its spec is a
// Prometheus rule file.
type prometheusRule struct {
	Kind string `json:"kind"`
	Spec struct {
		Groups []any `json:"groups"`
	} `json:"spec"`
}

// readRules reads config/monitoring/prometheusrule.yaml and parses its spec as a Prometheus rule file.
func readRules(t *testing.T) *rulefmt.RuleGroups {
	t.Helper()
	data, err := os.ReadFile("../../config/monitoring/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rule prometheusRule
	if err := yaml.Unmarshal(data, &rule); err != nil {
		t.Fatal(err)
	}
	if rule.Kind != "PrometheusRule" {
		t.Fatalf("kind %q, want PrometheusRule", rule.Kind)
	}
	file, err := yaml.Marshal(map[string]any{"groups": rule.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := rulefmt.Parse(file, false, model.UTF8Validation)
	for _, err := range errs {
		t.Errorf("rulefmt: %v", err)
	}
	if groups == nil {
		t.FailNow()
	}
	return groups
}

func TestRules(t *testing.T) {
	groups := readRules(t)
	exposed := exposedMetrics(t)
	var names []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			names = append(names, r.Alert)
			expr, err := parser.ParseExpr(r.Expr)
			if err != nil {
				t.Errorf("%s: %v", r.Alert, err)
				continue
			}
			parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
				vs, ok := node.(*parser.VectorSelector)
				if !ok {
					return nil
				}
				if vs.Name == "up" {
					// Prometheus' own per target.
					return nil
				}
				if !exposed[vs.Name] {
					t.Errorf("%s selects %s, which the proxy does not expose (proxy/metrics)", r.Alert, vs.Name)
				}
				return nil
			})
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" || r.Annotations["runbook_url"] == "" {
				t.Errorf("%s: needs a severity label and summary, description and runbook_url annotations", r.Alert)
			}
		}
	}
	var want []string
	for _, a := range install.Alerts() {
		want = append(want, a.Alert)
	}
	if !slices.Equal(names, want) {
		t.Errorf("config/monitoring holds the alerts %v, package install renders %v: run make generate", names, want)
	}
	for _, symptom := range []string{"CAPIProxyDown", "CAPIProxyBackendUnreachable", "CAPIConversionWebhookFailing", "CAPIObjectsNotTranslated", "CAPIRequestsSlow"} {
		if !slices.Contains(names, symptom) {
			t.Errorf("no alert %s", symptom)
		}
	}
}

// exposedMetrics are the series names the proxy's registry exposes once each metric was observed: the
// families, and a histogram's _bucket, _sum and _count.
func exposedMetrics(t *testing.T) map[string]bool {
	m := metrics.New()
	m.StartRequest(metrics.RequestLabels{Class: "Mapped", Verb: "get"}, false, false)(200)
	m.ObserveTranslation("cluster.x-k8s.io", "Machine", "response", time.Millisecond)
	m.TranslationError("cluster.x-k8s.io", "Machine", "response", "InternalError")
	m.ObserveConversionReview("Machine", "cluster.x-k8s.io/v1beta1", 200, time.Millisecond)
	m.DeprecatedRequest(metrics.DeprecatedRequestLabels{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "machines",
		RemovedRelease: "v1.16"}, "kubectl/v1.35.4 (linux/amd64) kubernetes/abcdef0")
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, f := range families {
		name := f.GetName()
		out[name] = true
		if strings.HasSuffix(f.GetType().String(), "HISTOGRAM") {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				out[name+s] = true
			}
		}
	}
	return out
}
