package conversion

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift/hypershift-capi-proxy/proxy/convert"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/metricstesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

func newHandler(t *testing.T, o Options) *Handler {
	t.Helper()
	c, err := convert.New(translate.NewTable(routes.Routes), routes.APIVersionGetterSetters)
	if err != nil {
		t.Fatal(err)
	}
	return New(c, o)
}

const machineV1beta2 = `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m1","namespace":"ns"},` +
	`"spec":{"clusterName":"c1","bootstrap":{"dataSecretName":"s"},` +
	`"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"AWSMachine","name":"m"}}}`

func review(objects ...string) string {
	return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u-1",` +
		`"desiredAPIVersion":"cluster.hypershift.openshift.io/v1beta1","objects":[` + strings.Join(objects, ",") + `]}}`
}

func serve(h http.Handler, ctx context.Context, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(body)).WithContext(ctx)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func statusOf(t *testing.T, rec *httptest.ResponseRecorder) metav1.Status {
	t.Helper()
	var s metav1.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil || s.Kind != "Status" {
		t.Fatalf("%d %s is no Status: %v", rec.Code, rec.Body, err)
	}
	return s
}

// TestPanickingConversion: a conversion that panics, on one of a review's worker goroutines or on the
// handler's own, fails the review as controller-runtime's webhook fails it (and is counted as a 500); the
// process goes on.
func TestPanickingConversion(t *testing.T) {
	m := metrics.New()
	h := newHandler(t, Options{Metrics: m})
	h.convertObject = func(_ context.Context, obj []byte, _ string) ([]byte, error) {
		if strings.Contains(string(obj), `"name":"boom"`) {
			panic("converter bug")
		}
		return obj, nil
	}
	var objects []string
	for i := 0; i < 3*parallelAbove; i++ {
		objects = append(objects, machineV1beta2)
	}
	objects[2*parallelAbove] = strings.Replace(machineV1beta2, `"name":"m1"`, `"name":"boom"`, 1)
	rec := serve(h, context.Background(), review(objects...))
	var got apiextensionsv1.ConversionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != http.StatusOK || got.Response == nil {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	r := got.Response.Result
	// controller-runtime's words for a conversion that panicked, and no code or reason.
	if want := (metav1.Status{Status: metav1.StatusFailure, Message: "internal error occurred during conversion"}); r != want ||
		len(got.Response.ConvertedObjects) != 0 {
		t.Errorf("result: %+v", got.Response)
	}
	failed := map[string]string{"kind": "Machine", "desired_api_version": "cluster.x-k8s.io/v1beta1", "code": "500"}
	if v := metricstesting.Value(t, m.Registry(), "capi_proxy_conversion_webhook_requests_total", failed); v != 1 {
		t.Errorf("conversion_webhook_requests_total%v = %v", failed, v)
	}

	// A panic outside the conversions (here: of the labels' route table lookup) is a 500 Status.
	h.converter = nil
	rec = serve(h, context.Background(), review(machineV1beta2))
	if s := statusOf(t, rec); rec.Code != http.StatusInternalServerError || !strings.Contains(s.Message, "serving the ConversionReview panicked") {
		t.Errorf("%d %s", rec.Code, rec.Body)
	}
	if v := metricstesting.Value(t, m.Registry(), "capi_proxy_conversion_webhook_requests_total",
		map[string]string{"kind": "", "desired_api_version": "", "code": "500"}); v != 1 {
		t.Errorf("conversion_webhook_requests_total of the 500 = %v", v)
	}
}

func TestBodyLimit(t *testing.T) {
	h := newHandler(t, Options{})
	h.maxBody = int64(len(review(machineV1beta2)))
	if rec := serve(h, context.Background(), review(machineV1beta2)); rec.Code != http.StatusOK {
		t.Fatalf("at the limit: %d %s", rec.Code, rec.Body)
	}
	big := review(machineV1beta2, machineV1beta2)
	// Told by Content-Length, and found while reading a body without one.
	for _, contentLength := range []int64{int64(len(big)), -1} {
		req := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(big))
		req.Header.Set("Content-Type", "application/json")
		req.ContentLength = contentLength
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if s := statusOf(t, rec); rec.Code != http.StatusRequestEntityTooLarge || s.Reason != metav1.StatusReasonRequestEntityTooLarge ||
			!strings.Contains(s.Message, "ConversionReview is limited to") {
			t.Errorf("Content-Length %d: %d %s", contentLength, rec.Code, rec.Body)
		}
	}
}

// TestConcurrencyBound: with every slot taken, a review waits, and gives up with its request.
func TestConcurrencyBound(t *testing.T) {
	h := newHandler(t, Options{MaxConcurrentReviews: 1})
	entered, release := make(chan struct{}), make(chan struct{})
	h.convertObject = func(_ context.Context, obj []byte, _ string) ([]byte, error) {
		close(entered)
		<-release
		return obj, nil
	}
	first := make(chan *httptest.ResponseRecorder)
	go func() { first <- serve(h, context.Background(), review(machineV1beta2)) }()
	<-entered

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := serve(h, ctx, review(machineV1beta2))
	if s := statusOf(t, rec); rec.Code != http.StatusTooManyRequests || !strings.Contains(s.Message, "busy") {
		t.Errorf("a review beyond the bound: %d %s", rec.Code, rec.Body)
	}
	close(release)
	if rec := <-first; rec.Code != http.StatusOK {
		t.Errorf("the first review: %d %s", rec.Code, rec.Body)
	}
	// The slot is free again.
	h.convertObject = func(_ context.Context, obj []byte, _ string) ([]byte, error) { return obj, nil }
	if rec := serve(h, context.Background(), review(machineV1beta2)); rec.Code != http.StatusOK {
		t.Errorf("after the first: %d %s", rec.Code, rec.Body)
	}
}

func TestMetrics(t *testing.T) {
	m := metrics.New()
	h := newHandler(t, Options{Metrics: m})
	serve(h, context.Background(), review(machineV1beta2))
	serve(h, context.Background(), review(strings.Replace(machineV1beta2, "AWSMachine", "DockerMachine", 1)))
	serve(h, context.Background(), "{")
	// A kind the route table does not know gets empty labels.
	serve(h, context.Background(), review(strings.Replace(machineV1beta2, `"kind":"Machine"`, `"kind":"Madeup"`, 1)))
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"capi_proxy_conversion_webhook_requests_total", map[string]string{"kind": "Machine", "desired_api_version": "cluster.x-k8s.io/v1beta1", "code": "200"}, 1},
		{"capi_proxy_conversion_webhook_requests_total", map[string]string{"kind": "Machine", "desired_api_version": "cluster.x-k8s.io/v1beta1", "code": "422"}, 1},
		{"capi_proxy_conversion_webhook_requests_total", map[string]string{"kind": "", "desired_api_version": "", "code": "400"}, 1},
		{"capi_proxy_conversion_webhook_requests_total", map[string]string{"kind": "", "desired_api_version": "", "code": "422"}, 1},
		{"capi_proxy_conversion_webhook_duration_seconds", map[string]string{"kind": "Machine", "desired_api_version": "cluster.x-k8s.io/v1beta1"}, 2},
	} {
		if got := metricstesting.Value(t, m.Registry(), tc.name, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
}
