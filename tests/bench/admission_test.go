package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	proxyadmission "github.com/openshift/hypershift-capi-proxy/proxy/webhook/admission"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

// machineDefaulter stands for CAPI's Machine defaulting webhook (internal/webhooks.Machine.Default): it
// sets the cluster-name label, and the version's "v" prefix.
type machineDefaulter struct{}

func (machineDefaulter) Default(_ context.Context, m *clusterv1.Machine) error {
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels[clusterv1.ClusterNameLabel] = m.Spec.ClusterName
	if m.Spec.Version != "" && !strings.HasPrefix(m.Spec.Version, "v") {
		m.Spec.Version = "v" + m.Spec.Version
	}
	return nil
}

// admissionReview is an AdmissionReview (CREATE) of one private Machine, as the apiserver sends it, with a
// version the defaulter changes.
func admissionReview(b *testing.B) []byte {
	m := machine(0)
	m.Spec.Version = "1.34.2"
	obj, err := json.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	group := "cluster.hypershift.openshift.io"
	req := &admissionv1.AdmissionRequest{UID: "bench",
		Kind:     metav1.GroupVersionKind{Group: group, Version: "v1beta2", Kind: "Machine"},
		Resource: metav1.GroupVersionResource{Group: group, Version: "v1beta2", Resource: "machines"},
		Name:     m.Name, Namespace: m.Namespace, Operation: admissionv1.Create,
		Object:  runtime.RawExtension{Raw: obj},
		Options: runtime.RawExtension{Raw: []byte(`{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1"}`)},
	}
	data, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkAdmissionReview posts an AdmissionReview of a Machine to a controller-runtime webhook server
// running a Machine defaulter, alternately directly (the review in upstream terms) and through the
// proxy's admission handler (in private terms, as the apiserver sends it), both over TLS on loopback with
// kept-alive connections, and reports the median latency of each and the proxy's added latency at p50
// (p50-added-µs; the goal is under 1 ms).
func BenchmarkAdmissionReview(b *testing.B) {
	scheme := runtime.NewScheme()
	if err := clusterv1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	server := httptest.NewTLSServer(admission.WithDefaulter[*clusterv1.Machine](scheme, machineDefaulter{}))
	defer server.Close()
	base, _ := url.Parse(server.URL)
	handler := proxyadmission.New(translate.NewTable(routes.Routes), proxyadmission.Options{
		Servers: map[string]*url.URL{"cluster-api": base}, Transport: server.Client().Transport})
	proxied := httptest.NewTLSServer(handler)
	defer proxied.Close()
	client := proxied.Client() // httptest's servers share one certificate

	privateBody := admissionReview(b)
	// Every private group name of this review ends in cluster.hypershift.openshift.io.
	upstreamBody := bytes.ReplaceAll(privateBody, []byte("cluster.hypershift.openshift.io"), []byte("cluster.x-k8s.io"))
	post := func(url string, body []byte) time.Duration {
		start := time.Now()
		resp, err := client.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"allowed":true`)) || !bytes.Contains(out, []byte(`"patch"`)) {
			b.Fatalf("%s: %d %s", url, resp.StatusCode, out)
		}
		return d
	}
	directURL := server.URL + "/mutate-cluster-x-k8s-io-v1beta2-machine?timeout=10s"
	proxyURL := proxied.URL + proxyadmission.PathPrefix + "cluster-api/mutate-cluster-x-k8s-io-v1beta2-machine?timeout=10s"
	post(directURL, upstreamBody) // open the connections
	post(proxyURL, privateBody)

	direct := make([]time.Duration, 0, b.N)
	viaProxy := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		direct = append(direct, post(directURL, upstreamBody))
		viaProxy = append(viaProxy, post(proxyURL, privateBody))
	}
	b.StopTimer()
	p50 := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds())
	}
	d, p := p50(direct), p50(viaProxy)
	b.ReportMetric(d, "p50-direct-µs")
	b.ReportMetric(p, "p50-proxy-µs")
	b.ReportMetric(p-d, "p50-added-µs")
}
