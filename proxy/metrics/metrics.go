// Package metrics holds the proxy's Prometheus metrics, in a registry of their own (never the global
// one), with the Go runtime and process collectors beside them: those of the handler chain (package
// server, and WithRequests), of the serving modes of namespaces (cutover.Namespaces) and of the conversion and admission
// webhooks (packages webhook/conversion and webhook/admission). Every one is defined here, in New, and
// listed by Definitions, from which docs/operations.md's table of metrics is generated (hack/docgen):
// names, types, help and labels.
//
// Every label has a bounded set of values: API groups, resources and kinds come from the route table,
// never from a request's raw path, so that a client cannot grow the series by asking for made-up names.
// class is the proxy's classification of the request (classify.Class: Mapped, Other, Unrouted, Discovery,
// Private, Upgrade, OpenAPI, CRD, APIService, and Webhook and Admission for the conversion and admission
// webhooks on the API listener; the webhook listener counts none);
// group, resource and subresource are set for Mapped requests only (the upstream group and resource,
// subresource "status", "scale" or "other") and empty otherwise. verb is the Kubernetes verb (get, list,
// watch, create, update, patch, delete, deletecollection), or the lower-case HTTP method of a
// non-resource request, or "other". direction is "request" (upstream to private) or "response" (private
// to upstream); reason is the metav1.StatusReason of the error the client got (BadRequest,
// UnsupportedMediaType, RequestEntityTooLarge, InternalError, ...). The webhooks' kind and
// desired_api_version are upstream terms from the route table, empty for what it does not know; manager
// is a configured --admission-webhook name; operation is an AdmissionReview's (CREATE, UPDATE, DELETE,
// CONNECT); webhook is "conversion" or "admission"; mode is a serving.Mode or "unknown".
//
// requested_deprecated_apis_total mirrors kube-apiserver's apiserver_requested_deprecated_apis (package
// k8s.io/apiserver/pkg/endpoints/metrics: group, version, resource, subresource and removed_release of
// each deprecated API requested), for the upstream versions the proxy serves, which kube-apiserver
// never sees: it counts the requests of a route upstream marks deprecated (translate.Route.Deprecated,
// its group, version and resource the upstream ones, subresource as above), removed_release is the
// route's RemovedRelease ("v1.16" for CAPI's v1beta1, "" where no removal is known), and component names
// the client by its User-Agent (ComponentOf: one of apis/upstream.Components, or "other"). It is a
// counter where kube-apiserver's is a gauge set to 1: a gauge says that someone asked since the process
// started, a counter's rate says who still asks, and falls to 0 once a component has moved on, without
// a restart of the proxy.
//
// A nil *Metrics is valid and records nothing.
//
// WithRequests is the handler chain's filter that counts, times and logs every request (requests.go);
// Timed and its kin time the translations of a request's bodies (translations.go).
// APIServerText is kube-apiserver's own /metrics as the proxy's clients see it: the private groups
// under their upstream names, the platform's upstream groups dropped (apiserver.go).
package metrics

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/migration/serving"
)

const namespace = "capi_proxy"

// Directions of a translation, the values of the direction label.
const (
	// Request is a translation from the upstream groups to the private groups (a request body).
	Request = "request"
	// Response is a translation from the private groups to the upstream groups (a response body, a list
	// item, a watch event).
	Response = "response"
)

// Metrics are the proxy's metrics and the registry that holds them. Create it with New.
type Metrics struct {
	registry *prometheus.Registry

	requests            *prometheus.CounterVec
	requestDuration     *prometheus.HistogramVec
	openWatches         *prometheus.GaugeVec
	translationDuration *prometheus.HistogramVec
	translationErrors   *prometheus.CounterVec
	conversionRequests  *prometheus.CounterVec
	conversionDuration  *prometheus.HistogramVec
	namespaceModes      *prometheus.GaugeVec
	heldRequests        *prometheus.CounterVec
	servingGuarded      prometheus.Gauge
	deprecatedRequests  *prometheus.CounterVec
	admissionRequests   *prometheus.CounterVec
	admissionDuration   *prometheus.HistogramVec
	admissionErrors     *prometheus.CounterVec
	webhookHeldBytes    *prometheus.GaugeVec
	webhookActive       *prometheus.GaugeVec

	// definitions are the metrics above, in the order New defines them.
	definitions []Definition
}

// Types of metrics, Definition.Type.
const (
	Counter   = "counter"
	Gauge     = "gauge"
	Histogram = "histogram"
)

// Definition is one of the proxy's metrics as New defines it: what /metrics shows of it.
type Definition struct {
	// Name is the metric's full name (capi_proxy_...).
	Name string
	// Type is Counter, Gauge or Histogram.
	Type string
	// Help is the metric's HELP text.
	Help string
	// Labels are its variable labels, in order; none for a single series.
	Labels []string
}

// definer makes the metrics' collectors, recording each as a Definition, in the order made.
type definer struct {
	definitions []Definition
	collectors  []prometheus.Collector
}

func (d *definer) add(c prometheus.Collector, typ, namespace, name, help string, labels []string) {
	d.definitions = append(d.definitions, Definition{Name: prometheus.BuildFQName(namespace, "", name), Type: typ, Help: help, Labels: labels})
	d.collectors = append(d.collectors, c)
}

func (d *definer) counterVec(o prometheus.CounterOpts, labels []string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(o, labels)
	d.add(c, Counter, o.Namespace, o.Name, o.Help, labels)
	return c
}

func (d *definer) gaugeVec(o prometheus.GaugeOpts, labels []string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(o, labels)
	d.add(g, Gauge, o.Namespace, o.Name, o.Help, labels)
	return g
}

func (d *definer) gauge(o prometheus.GaugeOpts) prometheus.Gauge {
	g := prometheus.NewGauge(o)
	d.add(g, Gauge, o.Namespace, o.Name, o.Help, nil)
	return g
}

func (d *definer) histogramVec(o prometheus.HistogramOpts, labels []string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(o, labels)
	d.add(h, Histogram, o.Namespace, o.Name, o.Help, labels)
	return h
}

// requestBuckets are seconds, from 5ms to kube-apiserver's default request timeout (60s).
var requestBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// translationBuckets are seconds, from 10µs to 2.6s by factors of 4.
var translationBuckets = prometheus.ExponentialBuckets(0.00001, 4, 10)

// admissionBuckets are seconds, from 1ms to 30s (the longest timeoutSeconds a webhook may have).
var admissionBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// New returns the metrics, registered in a new registry together with the Go runtime and process
// collectors.
func New() *Metrics {
	d := &definer{}
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		requests: d.counterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "requests_total",
			Help: "Requests served, by classification, Kubernetes verb, upstream group, resource and subresource (of mapped resources only) and HTTP status code.",
		}, []string{"class", "verb", "group", "resource", "subresource", "code"}),
		requestDuration: d.histogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "request_duration_seconds", Buckets: requestBuckets,
			Help: "Time to serve a request that is not long-running (watches, logs, exec, ... are not observed), backend included.",
		}, []string{"class", "verb", "group", "resource", "subresource"}),
		openWatches: d.gaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "open_watches",
			Help: "Watches being served, by upstream group and resource (empty for resources the proxy does not map).",
		}, []string{"group", "resource"}),
		translationDuration: d.histogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "translation_duration_seconds", Buckets: translationBuckets,
			Help: "Time to translate one request body, response body, list item or watch event, by upstream group and kind (empty outside the mapped resources) and direction.",
		}, []string{"group", "kind", "direction"}),
		translationErrors: d.counterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "translation_errors_total",
			Help: "Bodies that could not be translated, by upstream group and kind (empty outside the mapped resources), direction and the reason of the Status the client got.",
		}, []string{"group", "kind", "direction", "reason"}),
		conversionRequests: d.counterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "conversion_webhook_requests_total",
			Help: "ConversionReviews served by the conversion webhook, by kind, desired apiVersion and HTTP status code.",
		}, []string{"kind", "desired_api_version", "code"}),
		conversionDuration: d.histogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "conversion_webhook_duration_seconds", Buckets: requestBuckets,
			Help: "Time to serve one ConversionReview, by kind and desired apiVersion.",
		}, []string{"kind", "desired_api_version"}),
	}
	m.namespaceModes = d.gaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "namespaces",
		Help: "Namespaces by the serving mode their " + serving.Label + " label gives (unknown: a value that is not a mode, or a label not guarded); unlabelled namespaces and those labelled private are not counted.",
	}, []string{"mode"})
	for _, mode := range serving.Modes {
		m.namespaceModes.WithLabelValues(string(mode))
	}
	m.namespaceModes.WithLabelValues(UnknownMode)
	m.heldRequests = d.counterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "held_requests_total",
		Help: "Writes to mapped kinds answered with 429 Too Many Requests because their namespace's writes are held, by upstream group and resource.",
	}, []string{"group", "resource"})
	m.servingGuarded = d.gauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "serving_label_guarded",
		Help: "1 while the ValidatingAdmissionPolicy and binding " + serving.PolicyName + " guard the namespaces' " + serving.Label +
			" label, 0 otherwise: then every labelled namespace's writes are held and its reads served from the private groups.",
	})
	m.deprecatedRequests = d.counterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "requested_deprecated_apis_total",
		Help: "Requests of mapped kinds at a version upstream deprecates, by upstream group, version, resource and subresource, " +
			"the release that stops serving the version (empty where none is known) and the calling component as its " +
			"User-Agent names it (other: a client not known). Requests answered 401 are not counted.",
	}, []string{"group", "version", "resource", "subresource", "removed_release", "component"})
	admission := []string{"manager", "kind", "operation"}
	m.admissionRequests = d.counterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "admission_webhook_requests_total",
		Help: "AdmissionReviews served, by manager, upstream kind, operation and HTTP status code (a denial's status code).",
	}, append(admission, "code"))
	m.admissionDuration = d.histogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "admission_webhook_duration_seconds", Buckets: admissionBuckets,
		Help: "Time to serve one AdmissionReview, the manager's webhook server included, by manager, upstream kind and operation.",
	}, admission)
	m.admissionErrors = d.counterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "admission_webhook_errors_total",
		Help: "AdmissionReviews whose call failed for the apiserver, by manager, upstream kind, operation and reason.",
	}, append(admission, "reason"))
	m.webhookHeldBytes = d.gaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "webhook_held_bytes",
		Help: "Bytes of webhook requests (their bodies as read) the webhook holds while it reads, waits with and serves them, by webhook (conversion, admission).",
	}, []string{"webhook"})
	m.webhookActive = d.gaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "webhook_active_requests",
		Help: "Webhook requests being served (read, and holding one of the webhook's turns), by webhook (conversion, admission).",
	}, []string{"webhook"})
	m.definitions = d.definitions
	m.registry.MustRegister(append([]prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}, d.collectors...)...)
	return m
}

// Definitions returns the proxy's own metrics, in the order New defines them; the registry also holds
// the Go runtime's (go_*) and the process's (process_*). It does not need a *Metrics: docs are generated
// from it.
func Definitions() []Definition { return New().definitions }

// UnknownMode is the mode label of a namespace whose label the proxy does not follow: a value that is not
// a serving.Mode, or any label while it is not guarded.
const UnknownMode = "unknown"

// NamespaceModeChanged moves one namespace from the mode label from to the mode label to (a serving.Mode
// or UnknownMode); "" is not counted (an unlabelled namespace, or one labelled private).
func (m *Metrics) NamespaceModeChanged(from, to string) {
	if m == nil {
		return
	}
	if from != "" {
		m.namespaceModes.WithLabelValues(from).Dec()
	}
	if to != "" {
		m.namespaceModes.WithLabelValues(to).Inc()
	}
}

// HeldRequest counts a write answered 429 because its namespace is held; group and resource are the
// route table's upstream ones.
func (m *Metrics) HeldRequest(group, resource string) {
	if m == nil {
		return
	}
	m.heldRequests.WithLabelValues(group, resource).Inc()
}

// SetServingLabelGuarded records whether the serve-from label is guarded.
func (m *Metrics) SetServingLabelGuarded(guarded bool) {
	if m == nil {
		return
	}
	v := 0.0
	if guarded {
		v = 1
	}
	m.servingGuarded.Set(v)
}

// ObserveAdmissionReview records one AdmissionReview an admission webhook served: manager is the
// configured manager's name, kind the reviewed object's upstream kind ("" outside the route table),
// operation the review's (CREATE, UPDATE, DELETE, CONNECT or ""), code the HTTP status code of the answer
// or, for a denial, the code of its status (403 without one), d the time it took, the manager's webhook
// server included.
func (m *Metrics) ObserveAdmissionReview(manager, kind, operation string, code int, d time.Duration) {
	if m == nil {
		return
	}
	m.admissionRequests.WithLabelValues(manager, kind, operation, strconv.Itoa(code)).Inc()
	m.admissionDuration.WithLabelValues(manager, kind, operation).Observe(d.Seconds())
}

// AdmissionError records an AdmissionReview whose call failed for the apiserver, by reason: unreachable,
// timeout, bad_response (a non-200 answer or no AdmissionReview) or translation.
func (m *Metrics) AdmissionError(manager, kind, operation, reason string) {
	if m == nil {
		return
	}
	m.admissionErrors.WithLabelValues(manager, kind, operation, reason).Inc()
}

// WebhookGauges returns the gauges of a webhook's bounds (webhook is "conversion" or "admission"): the
// bytes of requests it holds against its budget, and the requests holding one of its turns. Nil records
// nothing: both are then nil.
func (m *Metrics) WebhookGauges(webhook string) (heldBytes, activeRequests prometheus.Gauge) {
	if m == nil {
		return nil, nil
	}
	return m.webhookHeldBytes.WithLabelValues(webhook), m.webhookActive.WithLabelValues(webhook)
}

// Registry returns the registry holding the metrics, to register more collectors or gather in tests.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the metrics in the Prometheus exposition formats, and counts its own scrapes. It never
// compresses them, whatever the scraper accepts: promhttp's gzip writer holds about 800 KB (compress/flate's
// hash tables and window) and stays in a sync.Pool from one scrape to the next (Prometheus asks for gzip
// every scrape interval), so an idle proxy would hold it most of the time, to save a few tens of KB of
// text on the wire every interval.
func (m *Metrics) Handler() http.Handler {
	return promhttp.InstrumentMetricHandler(m.registry, promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{
		Registry:           m.registry,
		DisableCompression: true,
	}))
}

// RequestLabels are the labels of one request. Group, Resource and Subresource must come from the route
// table (see the package doc); Verb is bounded by StartRequest.
type RequestLabels struct {
	Class, Verb, Group, Resource, Subresource string
}

// verbs are the verb label's values; any other becomes "other". They are kube-apiserver's verbs of
// resource requests and the lower-case HTTP methods of non-resource requests.
var verbs = sets.New("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "proxy",
	"post", "put", "head", "options", "connect")

// StartRequest records the start of a request and returns the func to call, exactly once, when it has
// been served, with the HTTP status code the client got. A watch counts as open until then; the duration
// of a long-running request is not observed.
func (m *Metrics) StartRequest(l RequestLabels, watch, longRunning bool) (done func(code int)) {
	if m == nil {
		return func(int) {}
	}
	if !verbs.Has(l.Verb) {
		l.Verb = "other"
	}
	start := time.Now()
	var gauge prometheus.Gauge
	if watch {
		gauge = m.openWatches.WithLabelValues(l.Group, l.Resource)
		gauge.Inc()
	}
	return func(code int) {
		if gauge != nil {
			gauge.Dec()
		}
		m.requests.WithLabelValues(l.Class, l.Verb, l.Group, l.Resource, l.Subresource, strconv.Itoa(code)).Inc()
		if !longRunning {
			m.requestDuration.WithLabelValues(l.Class, l.Verb, l.Group, l.Resource, l.Subresource).Observe(time.Since(start).Seconds())
		}
	}
}

// ObserveTranslation records the time one translation took. group and kind are the upstream group and
// kind of a mapped resource's route, empty otherwise; direction is Request or Response.
func (m *Metrics) ObserveTranslation(group, kind, direction string, d time.Duration) {
	if m == nil {
		return
	}
	m.translationDuration.WithLabelValues(group, kind, direction).Observe(d.Seconds())
}

// TranslationError records a body that could not be translated; reason is the metav1.StatusReason the
// client got. group, kind and direction are as for ObserveTranslation.
func (m *Metrics) TranslationError(group, kind, direction, reason string) {
	if m == nil {
		return
	}
	m.translationErrors.WithLabelValues(group, kind, direction, reason).Inc()
}

// ObserveConversionReview records one ConversionReview the conversion webhook served: kind is the kind of
// the objects it converted and desiredAPIVersion the apiVersion it converted them to, both in upstream
// terms as the route table names them (pass "" for a review too malformed to tell, or naming what the
// route table does not know), code the HTTP status code of the answer, or for a review answered with a
// Failure result 422 (an object that does not convert) or 500 (a conversion that panicked), d the time it
// took.
func (m *Metrics) ObserveConversionReview(kind, desiredAPIVersion string, code int, d time.Duration) {
	if m == nil {
		return
	}
	m.conversionRequests.WithLabelValues(kind, desiredAPIVersion, strconv.Itoa(code)).Inc()
	m.conversionDuration.WithLabelValues(kind, desiredAPIVersion).Observe(d.Seconds())
}

// DeprecatedRequestLabels are the labels of a request of a deprecated version, all from its route (see
// the package doc): the upstream Group, Version and Resource, Subresource as RequestLabels has it, and
// the route's RemovedRelease.
type DeprecatedRequestLabels struct {
	Group, Version, Resource, Subresource, RemovedRelease string
}

// DeprecatedRequest counts one request of a deprecated version, sent with the User-Agent header
// userAgent (the component label is ComponentOf(userAgent)).
func (m *Metrics) DeprecatedRequest(l DeprecatedRequestLabels, userAgent string) {
	if m == nil {
		return
	}
	m.deprecatedRequests.WithLabelValues(l.Group, l.Version, l.Resource, l.Subresource, l.RemovedRelease, ComponentOf(userAgent)).Inc()
}

// components maps each product name of apis/upstream.Components to its component.
var components = func() map[string]string {
	out := map[string]string{}
	for _, c := range upstream.Components {
		for _, p := range c.Products {
			out[p] = c.Name
		}
	}
	return out
}()

// ComponentOf returns the component a User-Agent names: the Name of the apis/upstream.Components entry
// one of whose Products is the product name (what precedes the first "/", or the whole word) of the
// User-Agent's second word, or else of its first, both before its first comment "(...)"; any other
// User-Agent, the empty one included, is upstream.OtherComponent. The second word wins because it is
// the source name CAPI's managers send after their binary's
// ("manager/v1.13.6 cluster-api-controller-manager (linux/amd64) cluster.x-k8s.io/abc1234",
// controllers/remote.DefaultClusterAPIUserAgent), where the binary ("manager") says less. client-go's
// default ("<binary>/<version> (<os>/<arch>) kubernetes/<commit>", rest.DefaultKubernetesUserAgent) and a
// User-Agent set whole ("hypershift-operator-manager") have one word. Only the first two words within the
// first maxUserAgent bytes are read, however long the header: a word the limit cuts is not read, so that
// no cut makes a product name of a longer word.
func ComponentOf(userAgent string) string {
	if len(userAgent) > maxUserAgent {
		userAgent = userAgent[:maxUserAgent]
		if i := strings.LastIndexAny(userAgent, " \t("); i >= 0 {
			userAgent = userAgent[:i]
		} else {
			userAgent = ""
		}
	}
	first, rest := word(userAgent)
	second, _ := word(rest)
	for _, w := range []string{second, first} {
		product, _, _ := strings.Cut(w, "/")
		if c, ok := components[product]; ok {
			return c
		}
	}
	return upstream.OtherComponent
}

// maxUserAgent is how many bytes of a User-Agent ComponentOf reads: well over the first two words of
// the known clients' (under 80 bytes), so that a long header costs no more than a short one.
const maxUserAgent = 256

// word returns the first word of s (after spaces and tabs, up to the next one), or "" if s has none or
// it begins a comment, and what follows it.
func word(s string) (w, rest string) {
	s = strings.TrimLeft(s, " \t")
	if s == "" || s[0] == '(' {
		return "", ""
	}
	end := strings.IndexAny(s, " \t(")
	if end < 0 {
		return s, ""
	}
	return s[:end], s[end:]
}
