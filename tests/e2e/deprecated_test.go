package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/remote"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/tests/framework"
)

// deprecatedFamily is the proxy's metric of requests of deprecated versions (package proxy/metrics).
const deprecatedFamily = "capi_proxy_requested_deprecated_apis_total"

// TestDeprecatedAPIsByComponent: requests of CAPI's v1beta1 through the proxy count in
// capi_proxy_requested_deprecated_apis_total by the component their User-Agent names, with the release
// that stops serving v1beta1, as an operator reads them off the proxy's /metrics:
//   - a controller-runtime client with the User-Agent CAPI's manager sets
//     (remote.DefaultClusterAPIUserAgent("cluster-api-controller-manager")) lists and watches v1beta1
//     MachineHealthChecks: capi-manager, 2, the watch counted while it is open; its v1beta2 list counts
//     nowhere;
//   - kubectl gets v1beta1 MachineHealthChecks: kubectl, 1;
//   - a request whose token the apiserver refuses (401) counts nowhere;
//   - attack: hundreds of distinct made-up User-Agents (long ones, ones close to a known product, ones
//     that name it past the words read) all count as other, and imitations of CAPI's managers with
//     made-up source names as the binary they name (manager), so the family keeps 4 series.
//
// The test runs a proxy of its own, whose counters no other test moves. MachineHealthChecks, not
// Machines: the apiserver serves a v1beta1 list from a watch cache of every namespace's objects, which
// it fills again after a restart (TestWatch restarts it) by converting them all, and other tests leave
// Machines and Clusters whose references name kinds no CRD serves (their conversion fails, as directly).
func TestDeprecatedAPIsByComponent(t *testing.T) {
	o := startOwnProxy(t)
	ctx := context.Background()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, clusterv1beta1.AddToScheme, clusterv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	cfg := o.p.Config(env.AdminToken)
	cfg.UserAgent = remote.DefaultClusterAPIUserAgent("cluster-api-controller-manager")
	manager, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ns := namespace(t, manager)

	if err := manager.List(ctx, &clusterv1beta1.MachineHealthCheckList{}, client.InNamespace(ns)); err != nil {
		t.Fatalf("v1beta1 list: %v", err)
	}
	if err := manager.List(ctx, &clusterv1.MachineHealthCheckList{}, client.InNamespace(ns)); err != nil {
		t.Fatalf("v1beta2 list: %v", err)
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	w, err := manager.Watch(watchCtx, &clusterv1beta1.MachineHealthCheckList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatalf("v1beta1 watch: %v", err)
	}
	series := map[string]string{"group": "cluster.x-k8s.io", "version": "v1beta1", "resource": "machinehealthchecks", "subresource": "",
		"removed_release": upstream.CAPIV1Beta1Removal, "component": "capi-manager"}
	// The watch is open: it counted when the apiserver answered it, before its headers reached the client.
	if v := deprecatedRequests(t, o.p)[labelString(series)]; v != 2 {
		t.Errorf("during the watch, %v = %v, want 2 (the list and the watch)", series, v)
	}
	w.Stop()
	stopWatch()

	kubectlVia(t, o.p, "get", "machinehealthchecks.v1beta1.cluster.x-k8s.io", "-n", ns)

	path := "/apis/cluster.x-k8s.io/v1beta1/namespaces/" + ns + "/machinehealthchecks"
	refused := newRawClient(t, o.p.Config("not-a-token"))
	if resp, data := refused.do(t, http.MethodGet, path, "", "User-Agent: kubectl/v1.35.4 (linux/amd64) kubernetes/abcdef0"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a list with a token the apiserver does not know: %d, want 401: %s", resp.StatusCode, data)
	}

	hostile, imitations := hostileUserAgents()
	rc := newRawClient(t, o.p.Config(env.AdminToken))
	for _, ua := range append(hostile, imitations...) {
		rc.mustDo(t, http.StatusOK, http.MethodGet, path, "", "User-Agent: "+ua)
	}

	got := deprecatedRequests(t, o.p)
	want := map[string]float64{
		labelString(series): 2,
		labelString(withLabel(series, "component", "kubectl")): 1,
		// Imitations that begin with a binary's name known as "manager" (CAPK's, CAPO's).
		labelString(withLabel(series, "component", "manager")): float64(len(imitations)),
		labelString(withLabel(series, "component", "other")):   float64(len(hostile)),
	}
	for s, v := range want {
		if got[s] != v {
			t.Errorf("%s%s = %v, want %v", deprecatedFamily, s, got[s], v)
		}
	}
	for s, v := range got {
		if _, ok := want[s]; !ok {
			t.Errorf("unexpected series %s%s = %v", deprecatedFamily, s, v)
		}
	}
	t.Logf("%d distinct User-Agents, one request each: %d series", len(hostile)+len(imitations), len(got))
}

// hostileUserAgents are distinct User-Agents a client may send to raise the proxy's series: made-up
// products, names close to known ones, known ones past the two words read or inside a comment, and long
// headers, all "other"; and imitations of CAPI's managers with a source name of their own, which
// begin with the binary name "manager".
func hostileUserAgents() (others, imitations []string) {
	for i := range 60 {
		others = append(others,
			fmt.Sprintf("attacker-%d/v1.0.%d (linux/amd64) kubernetes/%07d", i, i, i),
			fmt.Sprintf("kubectl-%d/v1.35.4 (linux/amd64) kubernetes/abcdef0", i),
			fmt.Sprintf("x/%d y/%d cluster-api-controller-manager", i, i),
			fmt.Sprintf("x/%d (cluster-api-controller-manager) kubectl", i),
		)
		imitations = append(imitations,
			fmt.Sprintf("manager/v1.13.6 cluster-api-controller-manager-%d (linux/amd64) cluster.x-k8s.io/abc1234", i))
	}
	for i := range 4 {
		others = append(others, strings.Repeat("a", 32<<10)+fmt.Sprint(i), strings.Repeat("w/1 ", 4<<10)+fmt.Sprint(i))
	}
	return others, imitations
}

// deprecatedRequests reads p's /metrics: the samples of deprecatedFamily by labelString of their labels.
func deprecatedRequests(t *testing.T, p *framework.Proxy) map[string]float64 {
	t.Helper()
	resp, err := http.Get(p.MetricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	out := map[string]float64{}
	f, ok := families[deprecatedFamily]
	if !ok {
		return out
	}
	if f.GetType() != dto.MetricType_COUNTER {
		t.Fatalf("%s is a %s, want a counter", deprecatedFamily, f.GetType())
	}
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		out[labelString(labels)] = m.GetCounter().GetValue()
	}
	return out
}

// labelString writes labels as Prometheus does, sorted by name: {a="x", b="y"}.
func labelString(labels map[string]string) string {
	set := model.LabelSet{}
	for k, v := range labels {
		set[model.LabelName(k)] = model.LabelValue(v)
	}
	return set.String()
}

// withLabel is labels with name set to value.
func withLabel(labels map[string]string, name, value string) map[string]string {
	out := map[string]string{name: value}
	for k, v := range labels {
		if k != name {
			out[k] = v
		}
	}
	return out
}
