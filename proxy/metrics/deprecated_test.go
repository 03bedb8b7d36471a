package metrics

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/metricstesting"
)

// TestComponentOf reads the User-Agents the real binaries send: CAPI's managers'
// (controllers/remote.DefaultClusterAPIUserAgent: binary, version, source name), a whole User-Agent a
// manager sets, and client-go's default (rest.DefaultKubernetesUserAgent: binary, version, platform,
// commit; "$Format" where the binary was built without version ldflags).
func TestComponentOf(t *testing.T) {
	for ua, want := range map[string]string{
		// CAPI's managers: the source name wins over the binary, whatever the image names it.
		"capi-manager/v1.13.6 cluster-api-controller-manager (linux/amd64) cluster.x-k8s.io/unknown":                   "capi-manager",
		"manager/v1.13.6 cluster-api-controller-manager (linux/amd64) cluster.x-k8s.io/1a2b3c4":                        "capi-manager",
		"cluster-api-controller-manager/v1.13.6 cluster-api-controller-manager (linux/arm64) cluster.x-k8s.io/1a2b3c4": "capi-manager",
		"manager/v1.13.6 cluster-api-kubeadm-bootstrap-manager (linux/amd64) cluster.x-k8s.io/1a2b3c4":                 "kubeadm-bootstrap-manager",
		"manager/v1.13.6 cluster-api-kubeadm-control-plane-manager (linux/amd64) cluster.x-k8s.io/1a2b3c4":             "kubeadm-control-plane-manager",
		"manager/v1.16.1 cluster-api-vsphere-manager (linux/amd64) cluster.x-k8s.io/1a2b3c4":                           "capv-manager",
		// Set whole.
		"cluster-api-provider-aws-controller": "capa-manager",
		"cluster-api-provider-azure-manager":  "capz-manager",
		"hypershift-operator-manager":         "hypershift-operator",
		"hypershift-controlplane-manager":     "control-plane-operator",
		// client-go's default.
		"control-plane-operator/v0.0.0 (linux/amd64) kubernetes/$Format":                           "control-plane-operator",
		"hypershift-operator/v0.0.0 (linux/amd64) kubernetes/$Format":                              "hypershift-operator",
		"manager/v0.0.0 (linux/amd64) kubernetes/$Format":                                          "manager",
		"cluster-api-provider-ibmcloud-controller-manager/v0.0.0 (linux/amd64) kubernetes/$Format": "capibm-manager",
		"karpenter-operator/v0.0.0 (linux/amd64) kubernetes/$Format":                               "karpenter-operator",
		"cluster-autoscaler/v1.35.0 (linux/amd64) kubernetes/$Format":                              "cluster-autoscaler",
		"machine-approver/v0.0.0 (linux/amd64) kubernetes/$Format":                                 "machine-approver",
		"hypershift/v0.0.0 (darwin/arm64) kubernetes/$Format":                                      "hypershift-cli",
		"hcp/v0.0.0 (linux/amd64) kubernetes/$Format":                                              "hypershift-cli",
		"kubectl/v1.35.4 (linux/amd64) kubernetes/abcdef0":                                         "kubectl",
		"oc/4.20.0 (linux/amd64) kubernetes/abcdef0":                                               "oc",
		"capi-proxy/v0.0.0 (linux/amd64) kubernetes/$Format":                                       "capi-proxy",
		"  kubectl/v1.35.4\t(linux/amd64)":                                                         "kubectl",
		"kubectl(linux/amd64)":                                                                     "kubectl",
		// Everything else.
		"":                   "other",
		"Go-http-client/1.1": "other",
		"e2e.test/v0.0.0 (linux/amd64) kubernetes/$Format": "other",
		"KUBECTL/v1.35.4":               "other",
		"kubectl-evil/v1.35.4":          "other",
		"(kubectl/v1.35.4)":             "other",
		"x/1 (comment) kubectl/v1.35.4": "other", // after a comment: not read
		"x/1 y/2 kubectl/v1.35.4":       "other", // a third word: not read
		"manager/v1.13.6 some-other-manager (linux/amd64) cluster.x-k8s.io/1a2b3c4": "manager",
		"other/1": "other",
		// Long headers: only whole words of the first 256 bytes are read.
		"kubectl/v1.35.4 " + strings.Repeat("x", 1<<20):                              "kubectl",
		strings.Repeat("a", 248) + " kubectl-evil/1":                                 "other",   // cut after "kubectl"
		strings.Repeat("a", 248) + " kubectl":                                        "kubectl", // 256 bytes: read whole
		strings.Repeat("a", 250) + " kubectl":                                        "other",   // the limit cuts the word
		strings.Repeat("a", 246) + " kubectl (linux/amd64)":                          "kubectl",
		strings.Repeat("a", 300) + " kubectl":                                        "other",
		"manager/v1 " + strings.Repeat("b", 300) + " cluster-api-controller-manager": "manager",
	} {
		if got := ComponentOf(ua); got != want {
			t.Errorf("ComponentOf(%q) = %q, want %q", ua, got, want)
		}
	}
}

// TestComponentsBounded: whatever User-Agents clients send, the component label takes only the names
// of apis/upstream.Components and "other", so the series of a route stay bounded.
func TestComponentsBounded(t *testing.T) {
	allowed := map[string]bool{upstream.OtherComponent: true}
	var words []string
	for _, c := range upstream.Components {
		allowed[c.Name] = true
		words = append(words, c.Products...)
	}
	words = append(words, "(", ")", "/", " ", "\t", "v1.2.3", "x", "", "\x00", "é")
	rng := rand.New(rand.NewPCG(1, 2))
	m := New()
	l := DeprecatedRequestLabels{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "machines", RemovedRelease: "v1.16"}
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(6) {
			b.WriteString(words[rng.IntN(len(words))])
		}
		ua := b.String()
		if c := ComponentOf(ua); !allowed[c] {
			t.Fatalf("ComponentOf(%q) = %q, not a known component", ua, c)
		}
		m.DeprecatedRequest(l, ua)
	}
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "capi_proxy_requested_deprecated_apis_total" && len(f.GetMetric()) > len(allowed) {
			t.Errorf("%d series from random User-Agents, want at most %d", len(f.GetMetric()), len(allowed))
		}
	}
}

func TestDeprecatedRequest(t *testing.T) {
	m := New()
	l := DeprecatedRequestLabels{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "machines", Subresource: "status", RemovedRelease: "v1.16"}
	m.DeprecatedRequest(l, "hypershift-operator-manager")
	m.DeprecatedRequest(l, "hypershift-operator-manager")
	m.DeprecatedRequest(l, "curl/8.5.0")
	series := map[string]string{"group": "cluster.x-k8s.io", "version": "v1beta1", "resource": "machines", "subresource": "status", "removed_release": "v1.16"}
	for component, want := range map[string]float64{"hypershift-operator": 2, "other": 1} {
		if v := metricstesting.Value(t, m.Registry(), "capi_proxy_requested_deprecated_apis_total", metricstesting.With(series, "component", component)); v != want {
			t.Errorf("requested_deprecated_apis_total{component=%q} = %v, want %v", component, v, want)
		}
	}
	var nilMetrics *Metrics
	nilMetrics.DeprecatedRequest(l, "kubectl/v1.35.4")
}

// BenchmarkDeprecatedRequest is the cost the proxy adds to a request of a deprecated version: reading
// the component off the User-Agent and counting, for CAPI's manager, client-go's default and a 32 KiB
// header without a space (read to its end).
func BenchmarkDeprecatedRequest(b *testing.B) {
	m := New()
	l := DeprecatedRequestLabels{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "machines", RemovedRelease: "v1.16"}
	for name, ua := range map[string]string{
		"capi-manager": "manager/v1.13.6 cluster-api-controller-manager (linux/amd64) cluster.x-k8s.io/1a2b3c4",
		"client-go":    "control-plane-operator/v0.0.0 (linux/amd64) kubernetes/$Format",
		"long":         strings.Repeat("a", 32<<10),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m.DeprecatedRequest(l, ua)
			}
		})
	}
}
