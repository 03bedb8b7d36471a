package install

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Alert is one alerting rule of PrometheusRule, as prometheus-operator's monitoring.coreos.com/v1 Rule
// writes it.
type Alert struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Job is the Prometheus job of the proxy's targets: the name of the Service ServiceMonitor scrapes
// (prometheus-operator's default job label).
const Job = Name

// Alerts are the proxy's alerting rules, named after what an SRE sees: a symptom of the CAPI controllers
// behind the proxy, not a cause inside it. Their metrics are the proxy's (package proxy/metrics) and
// Prometheus' own up; tests parse every expression with Prometheus' parser and check each metric name.
// Severities: critical (CAPI objects cannot be read or written), warning (they are, slowly or partly),
// info (nothing fails yet: CAPIDeprecatedVersionInUse, which may fire for months before the release it
// warns of, like OpenShift's APIRemovedInNextReleaseInUse).
func Alerts() []Alert {
	const runbook = "https://github.com/openshift/hypershift-capi-proxy/blob/main/docs/operations.md#"
	alert := func(name, severity, forDuration, expr, summary, description string) Alert {
		return Alert{
			Alert: name, Expr: expr, For: forDuration,
			Labels: map[string]string{"severity": severity},
			Annotations: map[string]string{
				"summary": summary, "description": description,
				"runbook_url": runbook + toAnchor(name),
			},
		}
	}
	return []Alert{
		alert("CAPIProxyDown", "critical", "5m",
			`up{job="`+Job+`"} == 0`,
			"The CAPI proxy does not answer: the CAPI controllers behind it cannot reach the API.",
			"Prometheus cannot scrape the CAPI proxy in {{ $labels.namespace }} ({{ $labels.pod }}) for 5 minutes. "+
				"Clusters, Machines and the other CAPI objects behind it are neither read nor written, and their "+
				"conversion webhook may fail."),
		alert("CAPIProxyBackendUnreachable", "critical", "5m",
			`sum by (namespace, pod) (rate(capi_proxy_requests_total{code=~"503|504"}[5m]))`+
				` / sum by (namespace, pod) (rate(capi_proxy_requests_total[5m])) > 0.5`,
			"The CAPI proxy cannot reach kube-apiserver: most CAPI requests fail with 503 or 504.",
			"More than half of the requests through {{ $labels.namespace }}/{{ $labels.pod }} got 503 or 504 for 5 "+
				"minutes: the backend kube-apiserver is unreachable, refuses connections or does not answer in time, "+
				"or its certificate is no longer trusted."),
		alert("CAPIConversionWebhookFailing", "critical", "10m",
			`sum by (namespace) (rate(capi_proxy_conversion_webhook_requests_total{code!="200"}[5m]))`+
				` / sum by (namespace) (rate(capi_proxy_conversion_webhook_requests_total[5m])) > 0.05`,
			"CAPI objects cannot be read or written in another version: conversions fail.",
			"More than 5% of the conversion reviews the apiserver sent the CAPI proxy in {{ $labels.namespace }} "+
				"failed for 10 minutes; clients asking for a version other than the stored one get errors."),
		alert("CAPIObjectsNotTranslated", "warning", "10m",
			`sum by (namespace, group, kind, direction) (rate(capi_proxy_translation_errors_total[5m])) > 0`,
			"Some CAPI objects cannot be translated between the upstream and the private groups.",
			"{{ $labels.kind }} objects of {{ $labels.group }} fail to translate ({{ $labels.direction }}) in the "+
				"CAPI proxy in {{ $labels.namespace }}: their clients get errors for them."),
		alert("CAPIRequestsSlow", "warning", "15m",
			`histogram_quantile(0.99, sum by (namespace, le) (rate(capi_proxy_request_duration_seconds_bucket[5m]))) > 1`,
			"CAPI API requests are slow: the 99th percentile through the proxy is above 1 second.",
			"The 99th percentile of the requests (not watches) through the CAPI proxy in {{ $labels.namespace }} "+
				"took more than 1 second for 15 minutes: CAPI controllers reconcile slowly."),
		alert("CAPINamespaceServingUnguarded", "warning", "10m",
			`min by (namespace, pod) (capi_proxy_serving_label_guarded) == 0`,
			"Hosted clusters in migration are held: the namespaces' serve-from label is not guarded.",
			"The CAPI proxy {{ $labels.namespace }}/{{ $labels.pod }} does not see the ValidatingAdmissionPolicy and binding "+
				"capi-proxy-serve-from for 10 minutes: it holds the writes of every namespace labelled serve-from and serves "+
				"them from the private groups, and migrations refuse to run."),
		alert("CAPIConversionWebhookSlow", "warning", "15m",
			`histogram_quantile(0.99, sum by (namespace, le) (rate(capi_proxy_conversion_webhook_duration_seconds_bucket[5m]))) > 2`,
			"CAPI version conversions are slow: the 99th percentile is above 2 seconds.",
			"The apiserver waits more than 2 seconds for 1% of the CAPI proxy's conversions in {{ $labels.namespace }}; "+
				"near its 30-second webhook timeout lists of CAPI objects in another version fail."),
		alert("CAPIDeprecatedVersionInUse", "info", "1h",
			`sum by (namespace, component, group, version, removed_release) `+
				`(increase(capi_proxy_requested_deprecated_apis_total{removed_release!=""}[1h])) > 0`,
			"A component still uses a CAPI API version that a coming release stops serving.",
			"{{ $labels.component }} has been requesting {{ $labels.group }}/{{ $labels.version }} through the CAPI proxy "+
				"in {{ $labels.namespace }} for more than an hour, and release {{ $labels.removed_release }} stops serving that "+
				"version: move the component to a newer version before upgrading to that release, or its requests will fail."),
	}
}

// toAnchor is the GitHub anchor of a heading equal to name in lower case.
func toAnchor(name string) string {
	b := []byte(name)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// PrometheusRule is the monitoring.coreos.com/v1 PrometheusRule holding Alerts, in namespace.
func PrometheusRule(namespace string) (*unstructured.Unstructured, error) {
	var rules []any
	for _, a := range Alerts() {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&a)
		if err != nil {
			return nil, err
		}
		rules = append(rules, m)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "PrometheusRule",
		"metadata":   metadata(namespace),
		"spec": map[string]any{"groups": []any{map[string]any{
			"name":  Name,
			"rules": rules,
		}}},
	}}, nil
}

// ServiceMonitor is the monitoring.coreos.com/v1 ServiceMonitor scraping the "metrics" port of the
// proxy's Services (SharedService, WebhookService) in namespace every 30 seconds.
func ServiceMonitor(namespace string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "ServiceMonitor",
		"metadata":   metadata(namespace),
		"spec": map[string]any{
			"selector":  map[string]any{"matchLabels": toAny(map[string]string{"app.kubernetes.io/name": Name})},
			"endpoints": []any{map[string]any{"port": "metrics", "interval": "30s", "scheme": "http", "path": "/metrics"}},
		},
	}}
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// metadata is the metadata of the monitoring objects: Name in namespace (none if empty), labelled.
func metadata(namespace string) map[string]any {
	m := map[string]any{"name": Name, "labels": toAny(map[string]string{"app.kubernetes.io/name": Name})}
	if namespace != "" {
		m["namespace"] = namespace
	}
	return m
}
