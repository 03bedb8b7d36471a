package conversion_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift/hypershift-capi-proxy/proxy/convert"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook/conversion"
	"github.com/openshift/hypershift-capi-proxy/tests/framework"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

func handler(t *testing.T) http.Handler {
	t.Helper()
	c, err := convert.New(translate.NewTable(routes.Routes), routes.APIVersionGetterSetters)
	if err != nil {
		t.Fatal(err)
	}
	return conversion.New(c, conversion.Options{})
}

func machine(name, infraKind string) string {
	return `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"` + name + `","namespace":"ns"},` +
		`"spec":{"clusterName":"c1","bootstrap":{"dataSecretName":"s"},` +
		`"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"` + infraKind + `","name":"m"}}}`
}

func post(t *testing.T, h http.Handler, contentType, body string) (*httptest.ResponseRecorder, *apiextensionsv1.ConversionReview) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, conversion.Path, strings.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return rec, nil
	}
	review := &apiextensionsv1.ConversionReview{}
	if err := json.Unmarshal(rec.Body.Bytes(), review); err != nil {
		t.Fatalf("decoding the answer %s: %v", rec.Body, err)
	}
	return rec, review
}

func reviewOf(objects ...string) string {
	return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u-1",` +
		`"desiredAPIVersion":"cluster.hypershift.openshift.io/v1beta1","objects":[` + strings.Join(objects, ",") + `]}}`
}

func TestConvertsEveryObject(t *testing.T) {
	h := handler(t)
	rec, review := post(t, h, "application/json", reviewOf(machine("m1", "AWSMachine"), machine("m2", "GCPMachine")))
	if review == nil {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if review.Request != nil || review.Response == nil || review.Response.UID != "u-1" || review.Response.Result.Status != metav1.StatusSuccess {
		t.Fatalf("answer: %s", rec.Body)
	}
	if review.Kind != "ConversionReview" || review.APIVersion != "apiextensions.k8s.io/v1" {
		t.Errorf("answer's kind: %s %s", review.APIVersion, review.Kind)
	}
	if len(review.Response.ConvertedObjects) != 2 {
		t.Fatalf("want 2 objects: %s", rec.Body)
	}
	for i, want := range []string{"infrastructure.cluster.hypershift.openshift.io/v1beta2", "infrastructure.cluster.hypershift.openshift.io/v1beta1"} {
		var m struct {
			APIVersion string `json:"apiVersion"`
			Spec       struct {
				InfrastructureRef struct {
					APIVersion string `json:"apiVersion"`
				} `json:"infrastructureRef"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(review.Response.ConvertedObjects[i].Raw, &m); err != nil {
			t.Fatal(err)
		}
		if m.APIVersion != "cluster.hypershift.openshift.io/v1beta1" || m.Spec.InfrastructureRef.APIVersion != want {
			t.Errorf("object %d: %s", i, review.Response.ConvertedObjects[i].Raw)
		}
	}
}

// TestFailureAsControllerRuntime: a review with an object that does not convert fails with exactly the
// result controller-runtime's conversion webhook answers for the same review in upstream terms (as a CAPI
// manager serves it over upstream's types, with the apiVersion getter the proxy installed).
func TestFailureAsControllerRuntime(t *testing.T) {
	private := reviewOf(machine("m1", "AWSMachine"), machine("m2", "DockerMachine"))
	rec, review := post(t, handler(t), "application/json", private)
	if review == nil {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	r := review.Response
	if r.UID != "u-1" || r.Result.Status != metav1.StatusFailure || len(r.ConvertedObjects) != 0 {
		t.Fatalf("answer: %s", rec.Body)
	}

	// upstream's converters, wherever the pinned CAPI keeps them (framework.UpstreamConversionHandler).
	scheme, err := framework.NewUpstreamKindsScheme(routes.Routes)
	if err != nil {
		t.Fatal(err)
	}
	upstreamWebhook, err := framework.UpstreamConversionHandler(scheme, routes.Routes)
	if err != nil {
		t.Fatal(err)
	}
	upstream := strings.ReplaceAll(private, "hypershift.openshift.io", "x-k8s.io")
	req := httptest.NewRequest(http.MethodPost, conversion.Path, strings.NewReader(upstream))
	req.Header.Set("Content-Type", "application/json")
	crRec := httptest.NewRecorder()
	upstreamWebhook.ServeHTTP(crRec, req)
	var want apiextensionsv1.ConversionReview
	if err := json.Unmarshal(crRec.Body.Bytes(), &want); err != nil || want.Response == nil {
		t.Fatalf("controller-runtime's webhook answered %d %s", crRec.Code, crRec.Body)
	}
	if diff := cmp.Diff(want.Response.Result, r.Result); diff != "" {
		t.Errorf("result (-controller-runtime +proxy):\n%s", diff)
	}
	if !strings.Contains(r.Result.Message, "DockerMachine") {
		t.Errorf("message %q does not name the kind it cannot resolve", r.Result.Message)
	}
}

func TestRefusesWhatIsNotAConversionReview(t *testing.T) {
	h := handler(t)
	for name, tc := range map[string]struct {
		method, contentType, body string
		code                      int
	}{
		"GET":            {method: http.MethodGet, code: http.StatusMethodNotAllowed},
		"PUT":            {method: http.MethodPut, contentType: "application/json", body: reviewOf(), code: http.StatusMethodNotAllowed},
		"YAML":           {method: http.MethodPost, contentType: "application/yaml", body: reviewOf(), code: http.StatusUnsupportedMediaType},
		"no type":        {method: http.MethodPost, body: reviewOf(), code: http.StatusUnsupportedMediaType},
		"garbage":        {method: http.MethodPost, contentType: "application/json", body: "{", code: http.StatusBadRequest},
		"no request":     {method: http.MethodPost, contentType: "application/json", body: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`, code: http.StatusBadRequest},
		"other kind":     {method: http.MethodPost, contentType: "application/json", body: `{"apiVersion":"v1","kind":"Pod","request":{}}`, code: http.StatusBadRequest},
		"v1beta1 review": {method: http.MethodPost, contentType: "application/json", body: strings.Replace(reviewOf(), "apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1", 1), code: http.StatusBadRequest},
	} {
		req := httptest.NewRequest(tc.method, conversion.Path, strings.NewReader(tc.body))
		if tc.contentType != "" {
			req.Header.Set("Content-Type", tc.contentType)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var s metav1.Status
		if rec.Code != tc.code || json.Unmarshal(rec.Body.Bytes(), &s) != nil || s.Kind != "Status" || s.Code != int32(tc.code) {
			t.Errorf("%s: %d %s, want a Status with %d", name, rec.Code, rec.Body, tc.code)
		}
	}
}

// TestLargeReviewKeepsOrder converts a review big enough to run on several goroutines: every object comes
// back in its place, and a failure is the first failing object's.
func TestLargeReviewKeepsOrder(t *testing.T) {
	h := handler(t)
	var objects []string
	for i := 0; i < 300; i++ {
		objects = append(objects, machine(fmt.Sprintf("m%03d", i), "AWSMachine"))
	}
	rec, review := post(t, h, "application/json", reviewOf(objects...))
	if review == nil || len(review.Response.ConvertedObjects) != 300 {
		t.Fatalf("status %d: %.300s", rec.Code, rec.Body)
	}
	for i, obj := range review.Response.ConvertedObjects {
		if want := fmt.Sprintf(`"name":"m%03d"`, i); !strings.Contains(string(obj.Raw), want) {
			t.Fatalf("object %d is %.200s", i, obj.Raw)
		}
	}
	objects[250] = machine("bad1", "DockerMachine")
	objects[260] = machine("bad2", "FooMachine")
	_, review = post(t, h, "application/json", reviewOf(objects...))
	if review == nil || !strings.Contains(review.Response.Result.Message, "kind DockerMachine") {
		t.Fatalf("failure: %+v", review)
	}
}
