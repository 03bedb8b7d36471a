package alerts

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/template"
)

// deprecatedSeries are five hours of capi_proxy_requested_deprecated_apis_total, one sample a minute (the
// sample at minute m is the m+1th value), in promqltest's load syntax.
const deprecatedSeries = `
load 1m
	capi_proxy_requested_deprecated_apis_total{namespace="hcp-a",pod="a",group="cluster.x-k8s.io",version="v1beta1",resource="machines",subresource="",removed_release="v1.16",component="capi-manager"} 0+10x300
	capi_proxy_requested_deprecated_apis_total{namespace="hcp-b",pod="b",group="cluster.x-k8s.io",version="v1beta1",resource="machinesets",subresource="",removed_release="v1.16",component="capi-manager"} 0+5x120 0+5x180
	capi_proxy_requested_deprecated_apis_total{namespace="hcp-a",pod="a",group="cluster.x-k8s.io",version="v1beta1",resource="clusters",subresource="",removed_release="v1.16",component="hypershift-operator"} 0+1x30 30x270
	capi_proxy_requested_deprecated_apis_total{namespace="hcp-a",pod="a",group="cluster.x-k8s.io",version="v1beta1",resource="machines",subresource="",removed_release="v1.16",component="kubectl"} _x120 1x180
	capi_proxy_requested_deprecated_apis_total{namespace="hcp-a",pod="a",group="infrastructure.cluster.x-k8s.io",version="v1beta1",resource="widgets",subresource="",removed_release="",component="capa-manager"} 0+10x300
`

// TestDeprecatedVersionInUse evaluates CAPIDeprecatedVersionInUse, as config/monitoring has it, with
// Prometheus' engine over deprecatedSeries, as a rule evaluated every minute: an alert fires at a minute
// when its expression returned the series at every evaluation of the rule's for duration before it.
//   - capi-manager requests v1beta1 all along, in hcp-a and in hcp-b, whose proxy restarts at 2h (its
//     counter starts again): it fires in both namespaces, once it has seen an hour of requests;
//   - hypershift-operator stops after 30 minutes: it fires for a while, then resolves;
//   - kubectl's one request, 2 hours in, never fires (a request once is not "still uses");
//   - capa-manager requests a deprecated version no release removes: never fires.
//
// The alert's labels name the component, the version and the release, and its description, expanded as
// Prometheus expands it, says them.
func TestDeprecatedVersionInUse(t *testing.T) {
	var rule *rulefmt.Rule
	for _, g := range readRules(t).Groups {
		for i := range g.Rules {
			if g.Rules[i].Alert == "CAPIDeprecatedVersionInUse" {
				rule = &g.Rules[i]
			}
		}
	}
	if rule == nil {
		t.Fatal("no alert CAPIDeprecatedVersionInUse")
	}
	if rule.Labels["severity"] != "info" {
		t.Errorf("severity %q, want info: nothing fails yet", rule.Labels["severity"])
	}
	storage := promqltest.LoadedStorage(t, deprecatedSeries)
	engine := promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery)
	const step = time.Minute // the rule group's evaluation interval
	hold := time.Duration(rule.For)
	start := time.Unix(0, 0).UTC()

	// firing returns the alerts firing at minute at, by namespace and component.
	firing := func(at time.Duration) map[string]promql.Series {
		t.Helper()
		end := start.Add(at)
		q, err := engine.NewRangeQuery(context.Background(), storage, nil, rule.Expr, end.Add(-hold), end, step)
		if err != nil {
			t.Fatal(err)
		}
		res := q.Exec(context.Background())
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		matrix, err := res.Matrix()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]promql.Series{}
		for _, s := range matrix {
			if len(s.Floats) == int(hold/step)+1 {
				out[s.Metric.Get("namespace")+" "+s.Metric.Get("component")] = s
			}
		}
		return out
	}
	names := func(m map[string]promql.Series) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		return out
	}
	for _, c := range []struct {
		at   time.Duration
		want []string
	}{
		{time.Hour, nil}, // not before an hour of requests
		{time.Hour + step, []string{"hcp-a capi-manager", "hcp-b capi-manager", "hcp-a hypershift-operator"}},
		{2*time.Hour + 30*time.Minute, []string{"hcp-a capi-manager", "hcp-b capi-manager"}},
		{5 * time.Hour, []string{"hcp-a capi-manager", "hcp-b capi-manager"}},
	} {
		got := firing(c.at)
		if len(got) != len(c.want) {
			t.Errorf("at %s: firing %v, want %v", c.at, names(got), c.want)
			continue
		}
		for _, w := range c.want {
			if _, ok := got[w]; !ok {
				t.Errorf("at %s: firing %v, want %v", c.at, names(got), c.want)
			}
		}
	}

	s, ok := firing(5 * time.Hour)["hcp-b capi-manager"]
	if !ok {
		t.FailNow()
	}
	labels := s.Metric.Map()
	for name, want := range map[string]string{"namespace": "hcp-b", "component": "capi-manager", "group": "cluster.x-k8s.io",
		"version": "v1beta1", "removed_release": "v1.16"} {
		if labels[name] != want {
			t.Errorf("alert label %s = %q, want %q (labels %v)", name, labels[name], want, labels)
		}
	}
	// As package rules expands an alert's annotations.
	defs := "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
	data := template.AlertTemplateData(labels, nil, "", promql.Sample{F: s.Floats[len(s.Floats)-1].F})
	description, err := template.NewTemplateExpander(context.Background(), defs+rule.Annotations["description"], "description",
		data, model.Time(0), nil, nil, nil).Expand()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"capi-manager", "cluster.x-k8s.io/v1beta1", "hcp-b", "v1.16"} {
		if !strings.Contains(description, want) {
			t.Errorf("description %q does not say %s", description, want)
		}
	}
	if strings.Contains(description, "<no value>") {
		t.Errorf("description %q names a label the expression drops", description)
	}
}
