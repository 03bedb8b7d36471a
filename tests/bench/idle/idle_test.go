// Package idle measures what an idle proxy costs in memory: the image's binary (static, trimmed, stripped:
// make release) started in front of a real kube-apiserver holding the private CRDs, read once it has
// synced its caches and returned the memory of its startup. It is a benchmark, not a test: it reports
// figures and asserts none.
//
//	KUBE_BIN_DIR=... go test -run '^$' -bench Idle ./tests/bench/idle/
//
// Reported, in MiB: RSS and its anonymous and file-backed parts (/proc/<pid>/status), and the Go heap in
// use and goroutine stacks (the proxy's go_memstats_* metrics). The file-backed part is the binary's pages
// the process has mapped; the page cache holds them once per node for every container running the image,
// so what each further sidecar adds is about the anonymous part. The binary is dropped from the page cache
// before the start, so that its pages come in as on a node that has just pulled the image (readahead), not
// as the linker left them.
package idle

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/openshift/hypershift-capi-proxy/tests/framework"
)

// startupReleased is what the proxy logs (at -v 2) once it has returned the memory of its startup.
const startupReleased = "Returned the memory of startup to the operating system"

func BenchmarkIdleMemory(b *testing.B) {
	if os.Getenv("KUBE_BIN_DIR") == "" {
		b.Skip("KUBE_BIN_DIR is not set: the benchmark needs a built kube-apiserver (make kube)")
	}
	ctx := context.Background()
	env, err := framework.StartEnv()
	if err != nil {
		b.Fatal(err)
	}
	defer env.Stop(false)

	// The image's binary, at the path StartProxy runs (it builds one only where none is).
	bin := filepath.Join(env.Dir, "capi-proxy")
	b.Setenv("CGO_ENABLED", "0")
	if err := env.Build(bin, "./proxy", "-trimpath", "-ldflags=-s -w"); err != nil {
		b.Fatal(err)
	}
	// The private CRDs, installed through another proxy: the measured one lists their metadata at start
	// (for the contract labels), as it does in a cluster. That proxy stops before the measured one
	// starts (nothing is converted here), so that no process maps the binary when its pages are dropped.
	installer, err := env.StartProxy(ctx, "-v", "0")
	if err != nil {
		b.Fatal(err)
	}
	err = installer.InstallCRDs(ctx, filepath.Join(env.Root, "apis", "private", "crds"))
	installer.Stop()
	if err != nil {
		b.Fatal(err)
	}
	if err := framework.DropPageCache(bin); err != nil {
		b.Fatal(err)
	}

	proxy, err := env.StartProxy(ctx, "-v", "2")
	if err != nil {
		b.Fatal(err)
	}
	defer proxy.Stop()
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		log, err := os.ReadFile(proxy.Log)
		return err == nil && strings.Contains(string(log), startupReleased), nil
	}); err != nil {
		b.Fatalf("the proxy did not log %q: %v", startupReleased, err)
	}
	pid := proxy.PID()

	var status map[string]float64
	for b.Loop() {
		if status, err = procStatus(pid); err != nil {
			b.Fatal(err)
		}
	}
	metrics, err := goMemStats(proxy.MetricsURL)
	if err != nil {
		b.Fatal(err)
	}
	const kib, mib = 1 << 10, 1 << 20
	b.ReportMetric(status["VmRSS"]/kib, "RSS-MiB")
	b.ReportMetric(status["RssAnon"]/kib, "anon-MiB")
	b.ReportMetric(status["RssFile"]/kib, "file-MiB")
	b.ReportMetric(metrics["go_memstats_heap_inuse_bytes"]/mib, "heap-inuse-MiB")
	b.ReportMetric(metrics["go_memstats_heap_alloc_bytes"]/mib, "heap-live-MiB")
	b.ReportMetric(metrics["go_memstats_stack_inuse_bytes"]/mib, "stacks-MiB")
	b.ReportMetric(0, "ns/op") // a reading of /proc, not what is measured
}

// procStatus returns the kB figures of /proc/<pid>/status by name ("VmRSS", "RssAnon", "RssFile").
func procStatus(pid int) (map[string]float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(data), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if f := strings.Fields(value); ok && len(f) == 2 && f[1] == "kB" {
			out[name], _ = strconv.ParseFloat(f[0], 64)
		}
	}
	return out, nil
}

// goMemStats returns the go_memstats_* gauges the proxy serves on /metrics.
func goMemStats(metricsURL string) (map[string]float64, error) {
	resp, err := http.Get(metricsURL + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	s := bufio.NewScanner(resp.Body)
	for s.Scan() {
		name, value, ok := strings.Cut(s.Text(), " ")
		if ok && strings.HasPrefix(name, "go_memstats_") {
			out[name], _ = strconv.ParseFloat(value, 64)
		}
	}
	return out, s.Err()
}
