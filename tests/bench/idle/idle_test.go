// Package idle measures what an idle proxy costs in memory: the image's binary (static, trimmed, stripped:
// make release) started in front of a real kube-apiserver holding the private CRDs, read once it has
// synced its caches and returned the memory of its startup. It is a benchmark, not a test: it reports
// figures and asserts none.
//
//	KUBE_BIN_DIR=... go test -run '^$' -bench Idle ./tests/bench/idle/
//
// Reported, in MiB: RSS and its anonymous and file-backed parts (/proc/<pid>/status), and the Go heap in
// use and goroutine stacks (the proxy's go_memstats_* metrics), once just after the start and again
// after the proxy has been idle for -idle-for (steady-*): a Prometheus scrapes its /metrics every 30 s
// meanwhile, and 150 s covers the runtime's forced collection (every 2 minutes) and the apiserver's
// watch bookmarks. What an idle proxy runs uses pages of the binary again, and its heap grows to the
// collector's goal between collections, so the steady figures are the ones to hold to a goal.
//
// The file-backed part is the binary's pages the process has mapped; the page cache holds them once per
// node for every container running the image, so what each further sidecar adds is about the anonymous
// part. The binary is dropped from the page cache before the start, so that its pages come in as on a
// node that has just pulled the image (readahead), not as the linker left them, and the proxy runs as a
// process that does not own its binary (notOwner; it needs root and setpriv, or -as-owner).
package idle

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openshift/hypershift-capi-proxy/tests/framework"
)

var (
	idleFor        = flag.Duration("idle-for", 150*time.Second, "how long the proxy stays idle before the steady-* figures are read")
	asOwner        = flag.Bool("as-owner", false, "run the proxy as the owner of its binary, not as a non-owner as the image runs (see notOwner)")
	scrapeInterval = 30 * time.Second // Prometheus Operator's default for a ServiceMonitor
)

// notOwner makes the proxy at bin run as a process that neither owns its binary nor may write it, as the
// image runs it (uid 65532, a root-owned binary, a read-only root filesystem): Linux pages out a file's
// pages only for its owner or a writer (mm/madvise.c, can_do_file_pageout), so a benchmark run as the
// owner measured a page-out that does nothing where the proxy is deployed. As root, it gives the binary
// to nobody (65534), read-only, and returns a script that runs it through setpriv(1) without
// CAP_FOWNER and CAP_DAC_OVERRIDE. It fails without root or setpriv.
func notOwner(bin string) (string, error) {
	if os.Geteuid() != 0 {
		return "", errors.New("running the proxy as a non-owner of its binary needs root (or -as-owner)")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		return "", fmt.Errorf("running the proxy as a non-owner of its binary needs setpriv (util-linux), or -as-owner: %w", err)
	}
	const nobody = 65534
	if err := os.Chown(bin, nobody, nobody); err != nil {
		return "", err
	}
	if err := os.Chmod(bin, 0o555); err != nil {
		return "", err
	}
	script := bin + "-not-owner"
	body := fmt.Sprintf("#!/bin/sh\nexec %s --bounding-set -fowner,-dac_override %s \"$@\"\n", setpriv, bin)
	return script, os.WriteFile(script, []byte(body), 0o755)
}

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

	start := bin
	if !*asOwner {
		if start, err = notOwner(bin); err != nil {
			b.Fatal(err)
		}
	}
	proxy, err := env.StartProxyFrom(ctx, start, "-v", "2")
	if err != nil {
		b.Fatal(err)
	}
	defer proxy.Stop()
	if err := proxy.WaitStartupReleased(ctx, time.Minute); err != nil {
		b.Fatal(err)
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
	report(b, "", status, metrics)

	// Idle, scraped as a Prometheus would; the last scrape's figures are read after it.
	for idle := time.Duration(0); idle < *idleFor; idle += scrapeInterval {
		time.Sleep(min(scrapeInterval, *idleFor-idle))
		if metrics, err = goMemStats(proxy.MetricsURL); err != nil {
			b.Fatal(err)
		}
	}
	if status, err = procStatus(pid); err != nil {
		b.Fatal(err)
	}
	report(b, "steady-", status, metrics)
	b.ReportMetric(0, "ns/op") // a reading of /proc, not what is measured
}

// report reports the figures of one reading, their units prefixed with prefix.
func report(b *testing.B, prefix string, status, metrics map[string]float64) {
	const kib, mib = 1 << 10, 1 << 20
	b.ReportMetric(status["VmRSS"]/kib, prefix+"RSS-MiB")
	b.ReportMetric(status["RssAnon"]/kib, prefix+"anon-MiB")
	b.ReportMetric(status["RssFile"]/kib, prefix+"file-MiB")
	b.ReportMetric(metrics["go_memstats_heap_inuse_bytes"]/mib, prefix+"heap-inuse-MiB")
	b.ReportMetric(metrics["go_memstats_heap_alloc_bytes"]/mib, prefix+"heap-live-MiB")
	b.ReportMetric(metrics["go_memstats_stack_inuse_bytes"]/mib, prefix+"stacks-MiB")
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
