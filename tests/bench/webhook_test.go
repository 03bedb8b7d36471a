package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openshift/hypershift-capi-proxy/proxy/convert"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook/conversion"
	"github.com/openshift/hypershift-capi-proxy/tests/framework"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

const reviewSize = 1000

func webhookHandler(b *testing.B) (*conversion.Handler, *convert.Converter) {
	c, err := convert.New(translate.NewTable(routes.Routes), routes.APIVersionGetterSetters)
	if err != nil {
		b.Fatal(err)
	}
	return conversion.New(c, conversion.Options{}), c
}

// conversionReview is a ConversionReview of reviewSize private v1beta2 Machines (as the apiserver sends one
// for a list of that many), to be converted to desired; with toHub, the Machines are first converted to
// v1beta1 (conversion data included), and the review asks for v1beta2.
func conversionReview(b *testing.B, c *convert.Converter, toHub bool) []byte {
	desired := "cluster.hypershift.openshift.io/v1beta1"
	objects := make([]runtime.RawExtension, reviewSize)
	for i := range objects {
		data, err := json.Marshal(machine(i))
		if err != nil {
			b.Fatal(err)
		}
		if toHub {
			if data, err = c.Private(context.Background(), data, desired); err != nil {
				b.Fatal(err)
			}
		}
		objects[i] = runtime.RawExtension{Raw: data}
	}
	if toHub {
		desired = "cluster.hypershift.openshift.io/v1beta2"
	}
	data, err := json.Marshal(apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request:  &apiextensionsv1.ConversionRequest{UID: "bench", DesiredAPIVersion: desired, Objects: objects},
	})
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func benchmarkWebhook(b *testing.B, toHub bool) {
	h, c := webhookHandler(b)
	runReviews(b, h, conversionReview(b, c, toHub))
}

// runReviews posts review to h b.N times and reports the objects converted per second.
func runReviews(b *testing.B, h http.Handler, review []byte) {
	b.SetBytes(int64(len(review)))
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, conversion.Path, bytes.NewReader(review))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || bytes.Contains(rec.Body.Bytes(), []byte(`"status":"Failure"`)) {
			b.Fatalf("%d %.300s", rec.Code, rec.Body)
		}
	}
	b.ReportMetric(float64(reviewSize)*float64(b.N)/b.Elapsed().Seconds(), "objects/s")
}

// BenchmarkWebhookMachines1000ToSpoke: the conversion webhook, a 1,000-Machine ConversionReview from the
// hub (v1beta2) to v1beta1: decode, translate to upstream, upstream's conversion from the hub (references resolved through
// the contract labels, the hub kept as conversion data), translate back, encode.
func BenchmarkWebhookMachines1000ToSpoke(b *testing.B) { benchmarkWebhook(b, false) }

// BenchmarkWebhookMachines1000ToHub: the same Machines from v1beta1, with their conversion data, to the hub.
func BenchmarkWebhookMachines1000ToHub(b *testing.B) { benchmarkWebhook(b, true) }

// upstreamWebhook is what a provider deploys: controller-runtime's conversion webhook over the upstream
// Go types, with the converters upstream registers (framework.UpstreamConversionHandler), for the baseline; the review is the same, translated to the upstream groups.
func upstreamWebhook(b *testing.B, toHub bool) (http.Handler, []byte) {
	_, c := webhookHandler(b) // installs the apiVersion getter upstream's conversions use
	table := translate.NewTable(routes.Routes)
	scheme := runtime.NewScheme()
	for _, r := range table.Routes() {
		up, _ := r.Object.New()
		scheme.AddKnownTypeWithName(r.UpstreamGVK(), up.(runtime.Object))
	}
	review := conversionReview(b, c, toHub)
	var cr apiextensionsv1.ConversionReview
	if err := json.Unmarshal(review, &cr); err != nil {
		b.Fatal(err)
	}
	cr.Request.DesiredAPIVersion = translate.ToUpstream.APIVersion(cr.Request.DesiredAPIVersion)
	for i, obj := range cr.Request.Objects {
		var tm metav1.TypeMeta
		if err := json.Unmarshal(obj.Raw, &tm); err != nil {
			b.Fatal(err)
		}
		r, ok := table.ByPrivateKind(tm.GroupVersionKind())
		if !ok {
			b.Fatalf("no route for %s", tm.GroupVersionKind())
		}
		up, _, err := r.Object.ToUpstream(obj.Raw)
		if err != nil {
			b.Fatal(err)
		}
		cr.Request.Objects[i].Raw = up
	}
	data, err := json.Marshal(cr)
	if err != nil {
		b.Fatal(err)
	}
	h, err := framework.UpstreamConversionHandler(scheme, routes.Routes)
	if err != nil {
		b.Fatal(err)
	}
	return h, data
}

// BenchmarkUpstreamWebhookMachines1000ToSpoke: the baseline of BenchmarkWebhookMachines1000ToSpoke,
// controller-runtime's webhook over upstream types and groups, without the translation.
func BenchmarkUpstreamWebhookMachines1000ToSpoke(b *testing.B) {
	h, review := upstreamWebhook(b, false)
	runReviews(b, h, review)
}

// BenchmarkUpstreamWebhookMachines1000ToHub: the baseline of BenchmarkWebhookMachines1000ToHub.
func BenchmarkUpstreamWebhookMachines1000ToHub(b *testing.B) {
	h, review := upstreamWebhook(b, true)
	runReviews(b, h, review)
}
