package admission_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook/admission"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

// privateReview is an AdmissionReview as the apiserver sends it for a private Machine.
const privateReview = `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"u1",` +
	`"kind":{"group":"cluster.hypershift.openshift.io","version":"v1beta2","kind":"Machine"},` +
	`"resource":{"group":"cluster.hypershift.openshift.io","version":"v1beta2","resource":"machines"},` +
	`"requestKind":{"group":"cluster.hypershift.openshift.io","version":"v1beta1","kind":"Machine"},` +
	`"requestResource":{"group":"cluster.hypershift.openshift.io","version":"v1beta1","resource":"machines"},` +
	`"name":"m1","namespace":"ns","operation":"UPDATE","userInfo":{"username":"alice","groups":["cluster.hypershift.openshift.io"]},` +
	`"object":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m1","namespace":"ns"},` +
	`"spec":{"clusterName":"c1","infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"AWSMachine","name":"m1"},"minReadySeconds":0}},` +
	`"oldObject":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m1","namespace":"ns"},"spec":{"clusterName":"c1"}},` +
	`"dryRun":false,"options":{"kind":"UpdateOptions","apiVersion":"meta.k8s.io/v1"}}}`

// upstreamReview is what the webhook server must receive: the same review in upstream terms, every other
// byte kept (userInfo's groups are no group-carrying field).
var upstreamReview = strings.NewReplacer(
	`"group":"cluster.hypershift.openshift.io","version"`, `"group":"cluster.x-k8s.io","version"`,
	`"apiVersion":"cluster.hypershift.openshift.io/v1beta2"`, `"apiVersion":"cluster.x-k8s.io/v1beta2"`,
	`"apiGroup":"infrastructure.cluster.hypershift.openshift.io"`, `"apiGroup":"infrastructure.cluster.x-k8s.io"`,
).Replace(privateReview)

func admissionHandler(t *testing.T, server http.Handler) (*admission.Handler, *metrics.Metrics) {
	t.Helper()
	srv := httptest.NewServer(server)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL + "/base")
	m := metrics.New()
	return admission.New(translate.NewTable(routes.Routes), admission.Options{
		Servers: map[string]*url.URL{"cluster-api": u}, Metrics: m}), m
}

func admit(t *testing.T, h http.Handler, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestAdmissionTranslates forwards a review in upstream terms to the manager's server at the upstream
// path with the apiserver's query, and translates its answer's patch (values), status and warnings back.
func TestAdmissionTranslates(t *testing.T) {
	var got, gotPath string
	patch := `[{"op":"add","path":"/spec/bootstrap","value":{"configRef":{"apiGroup":"bootstrap.cluster.x-k8s.io","kind":"KubeadmConfig","name":"m1"}}},` +
		`{"op":"replace","path":"/metadata/ownerReferences/0/apiVersion","value":"cluster.x-k8s.io/v1beta2"},{"op":"add","path":"/spec/minReadySeconds","value":0}]`
	h, m := admissionHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		got, gotPath = string(data), r.URL.RequestURI()
		_, _ = w.Write([]byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":"u1","allowed":true,` +
			`"patchType":"JSONPatch","patch":"` + base64.StdEncoding.EncodeToString([]byte(patch)) + `",` +
			`"warnings":["spec.infrastructureRef: AWSMachine.infrastructure.cluster.x-k8s.io is deprecated"],"auditAnnotations":{"a":"cluster.x-k8s.io"}}}`))
	}))
	rec := admit(t, h, "/admission/cluster-api/mutate-cluster-x-k8s-io-v1beta2-machine?timeout=10s", privateReview)
	if rec.Code != http.StatusOK {
		t.Fatalf("code %d: %s", rec.Code, rec.Body)
	}
	if gotPath != "/base/mutate-cluster-x-k8s-io-v1beta2-machine?timeout=10s" {
		t.Errorf("forwarded to %s", gotPath)
	}
	if got != upstreamReview {
		t.Errorf("the webhook server got\n%s\nwant\n%s", got, upstreamReview)
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil {
		t.Fatal(err)
	}
	wantPatch := `[{"op":"add","path":"/spec/bootstrap","value":{"configRef":{"apiGroup":"bootstrap.cluster.hypershift.openshift.io","kind":"KubeadmConfig","name":"m1"}}},` +
		`{"op":"replace","path":"/metadata/ownerReferences/0/apiVersion","value":"cluster.hypershift.openshift.io/v1beta2"},{"op":"add","path":"/spec/minReadySeconds","value":0}]`
	if diff := cmp.Diff(wantPatch, string(review.Response.Patch)); diff != "" {
		t.Errorf("patch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"spec.infrastructureRef: AWSMachine.infrastructure.cluster.hypershift.openshift.io is deprecated"}, review.Response.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if review.Response.AuditAnnotations["a"] != "cluster.x-k8s.io" {
		t.Errorf("audit annotations changed: %v", review.Response.AuditAnnotations)
	}
	if n := counterValue(t, m, "capi_proxy_admission_webhook_requests_total", map[string]string{"manager": "cluster-api", "kind": "Machine", "operation": "UPDATE", "code": "200"}); n != 1 {
		t.Errorf("requests_total = %v", n)
	}
}

// TestAdmissionDenial translates a denial's status: details.group, message and causes' messages; the
// fields are paths in the object, the same on both sides.
func TestAdmissionDenial(t *testing.T) {
	h, _ := admissionHandler(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":"u1","allowed":false,"status":{` +
			`"metadata":{},"status":"Failure","message":"Machine.cluster.x-k8s.io \"m1\" is invalid: spec.infrastructureRef.apiGroup: Invalid value: \"infrastructure.cluster.x-k8s.io\": field is immutable",` +
			`"reason":"Invalid","details":{"name":"m1","group":"cluster.x-k8s.io","kind":"Machine","causes":[{"reason":"FieldValueInvalid",` +
			`"message":"Invalid value: \"infrastructure.cluster.x-k8s.io\": field is immutable","field":"spec.infrastructureRef.apiGroup"}]},"code":422}}}`))
	}))
	rec := admit(t, h, "/admission/cluster-api/validate-cluster-x-k8s-io-v1beta2-machine", privateReview)
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil || review.Response == nil || review.Response.Result == nil {
		t.Fatalf("%v: %s", err, rec.Body)
	}
	s := review.Response.Result
	if s.Code != 422 || s.Details.Group != "cluster.hypershift.openshift.io" ||
		s.Message != `Machine.cluster.hypershift.openshift.io "m1" is invalid: spec.infrastructureRef.apiGroup: Invalid value: "infrastructure.cluster.hypershift.openshift.io": field is immutable` ||
		s.Details.Causes[0].Message != `Invalid value: "infrastructure.cluster.hypershift.openshift.io": field is immutable` ||
		s.Details.Causes[0].Field != "spec.infrastructureRef.apiGroup" {
		t.Errorf("status %+v", s)
	}
}

// TestAdmissionFailures: what the apiserver sees as a failing webhook (and applies the webhook's
// failurePolicy to), and what is not an admission webhook at all.
func TestAdmissionFailures(t *testing.T) {
	h, m := admissionHandler(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	if rec := admit(t, h, "/admission/cluster-api/validate-cluster-x-k8s-io-v1beta2-machine", privateReview); rec.Code != http.StatusInternalServerError || rec.Body.String() != "boom\n" {
		t.Errorf("a failing server: %d %s", rec.Code, rec.Body)
	}
	if rec := admit(t, h, "/admission/aws/validate-x", privateReview); rec.Code != http.StatusNotFound {
		t.Errorf("an unknown manager: %d", rec.Code)
	}
	down, _ := url.Parse("http://127.0.0.1:1")
	unreachable := admission.New(translate.NewTable(routes.Routes), admission.Options{Servers: map[string]*url.URL{"cluster-api": down}})
	if rec := admit(t, unreachable, "/admission/cluster-api/validate-x", privateReview); rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), `"kind":"Status"`) {
		t.Errorf("an unreachable server: %d %s", rec.Code, rec.Body)
	}
	if rec := admit(t, h, "/admission/cluster-api/validate-x", `{"kind":"AdmissionReview"}`); rec.Code != http.StatusBadRequest {
		t.Errorf("a review without request: %d", rec.Code)
	}
	if n := counterValue(t, m, "capi_proxy_admission_webhook_errors_total", map[string]string{"manager": "cluster-api", "kind": "Machine", "operation": "UPDATE", "reason": "bad_response"}); n != 1 {
		t.Errorf("errors_total = %v", n)
	}
}

func counterValue(t *testing.T, m *metrics.Metrics, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue metric
				}
			}
			return mt.GetCounter().GetValue()
		}
	}
	return 0
}
