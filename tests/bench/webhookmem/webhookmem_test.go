// Package webhookmem measures what a ConversionReview costs the proxy in memory: the proxy binary
// started in front of a real kube-apiserver holding the private CRDs is sent one review of -review-mib
// MiB of private v1beta2 Machines (tests/bench/machines, about 6.1 KB each) to convert to v1beta1, the
// direction that adds each Machine's conversion-data annotation, as the apiserver sends the whole of
// an unpaginated list; then -concurrent reviews at once whose sizes add up to -concurrent-mib MiB. It is
// a benchmark, not a test: it reports figures and asserts none.
//
//	KUBE_BIN_DIR=... go test -run '^$' -bench WebhookMemory -benchtime 1x ./tests/bench/webhookmem/
//
// Reported per case, in MiB: the review's size, the proxy's RSS before it (after its startup memory
// was returned), its peak RSS while serving it (VmHWM, reset just before: proc(5) clear_refs "5"), the
// growth, and the growth as a multiple of the review's size (growth-x); the Go heap in use after the
// review (go_memstats_heap_inuse_bytes). Each case runs in a proxy of its own. -proxy-bin measures
// another build of the proxy (an older one, to compare). A review must be converted and answered within
// the webhook's write timeout (40 s, as the apiserver waits 30 s): on a busy machine a review of 250 MiB,
// or four of 64 MiB at once, may not be, and its case fails with the stream the proxy reset.
package webhookmem

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openshift/hypershift-capi-proxy/proxy/convert"
	"github.com/openshift/hypershift-capi-proxy/tests/bench/machines"
	"github.com/openshift/hypershift-capi-proxy/tests/framework"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

var (
	reviewMiB     = flag.String("review-mib", "96,200", "sizes of the single reviews, in MiB, comma-separated")
	concurrent    = flag.Int("concurrent", 4, "how many reviews the concurrent case sends at once (0: none)")
	concurrentMiB = flag.Int("concurrent-mib", 256, "what the concurrent case's reviews add up to, in MiB")
	proxyBin      = flag.String("proxy-bin", "", "the proxy binary to measure; empty builds ./proxy")
)

const mib = 1 << 20

func BenchmarkWebhookMemory(b *testing.B) {
	if os.Getenv("KUBE_BIN_DIR") == "" {
		b.Skip("KUBE_BIN_DIR is not set: the benchmark needs a built kube-apiserver (make kube)")
	}
	ctx := context.Background()
	env, err := framework.StartEnv()
	if err != nil {
		b.Fatal(err)
	}
	defer env.Stop(false)
	// The references of the Machines (AWSMachine, KubeadmConfig) resolve from their private CRDs.
	if err := env.InstallPrivateCRDs(ctx); err != nil {
		b.Fatal(err)
	}
	// The objects convert (in process, as the proxy converts them), or nothing is measured.
	c, err := convert.New(translate.NewTable(routes.Routes), routes.APIVersionGetterSetters)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Private(context.Background(), object(0), "cluster.hypershift.openshift.io/v1beta1"); err != nil {
		b.Fatal(err)
	}
	bin := *proxyBin
	if bin == "" {
		bin = filepath.Join(env.Dir, "capi-proxy-webhookmem")
		if err := env.Build(bin, "./proxy"); err != nil {
			b.Fatal(err)
		}
	}

	var cases []struct {
		name  string
		sizes []int
	}
	for _, s := range strings.Split(*reviewMiB, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			b.Fatalf("-review-mib %q: %v", *reviewMiB, err)
		}
		cases = append(cases, struct {
			name  string
			sizes []int
		}{fmt.Sprintf("%dMiB", n), []int{n}})
	}
	if *concurrent > 0 {
		sizes := make([]int, *concurrent)
		for i := range sizes {
			sizes[i] = *concurrentMiB / *concurrent
		}
		cases = append(cases, struct {
			name  string
			sizes []int
		}{fmt.Sprintf("%dx%dMiB", *concurrent, sizes[0]), sizes})
	}

	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			reviews := make([][]byte, len(c.sizes))
			total := 0
			for i, size := range c.sizes {
				reviews[i] = review(size * mib)
				total += len(reviews[i])
			}
			proxy, err := env.StartProxyFrom(ctx, bin)
			if err != nil {
				b.Fatal(err)
			}
			defer proxy.Stop()
			if err := proxy.WaitStartupReleased(ctx, time.Minute); err != nil {
				b.Fatal(err)
			}
			hc, err := client(proxy.CAFile)
			if err != nil {
				b.Fatal(err)
			}
			pid := proxy.PID()
			before, err := procStatus(pid)
			if err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				var wg sync.WaitGroup
				errs := make([]error, len(reviews))
				for i, r := range reviews {
					wg.Go(func() { errs[i] = post(ctx, hc, proxy.URL+"/convert", r) })
				}
				wg.Wait()
				for _, err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			after, err := procStatus(pid)
			if err != nil {
				b.Fatal(err)
			}
			heap, err := heapInuse(proxy.MetricsURL)
			if err != nil {
				b.Fatal(err)
			}
			const kib = 1 << 10
			growth := (after["VmHWM"] - before["VmRSS"]) * kib
			b.ReportMetric(float64(total)/mib, "review-MiB")
			b.ReportMetric(before["VmRSS"]/kib, "rss-before-MiB")
			b.ReportMetric(after["VmHWM"]/kib, "peak-rss-MiB")
			b.ReportMetric(growth/mib, "growth-MiB")
			b.ReportMetric(growth/float64(total), "growth-x")
			b.ReportMetric(heap/mib, "heap-inuse-after-MiB")
			b.ReportMetric(0, "ns/op") // one review's wall clock on a shared machine says little
		})
	}
}

// review returns a ConversionReview of private v1beta2 Machines, to be converted to v1beta1, of about
// size bytes.
func review(size int) []byte {
	var buf bytes.Buffer
	buf.Grow(size + 64<<10)
	buf.WriteString(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"bench",` +
		`"desiredAPIVersion":"cluster.hypershift.openshift.io/v1beta1","objects":[`)
	for i := 0; buf.Len() < size; i++ {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(object(i))
	}
	buf.WriteString(`]}}`)
	return buf.Bytes()
}

// object is Machine i of a review: tests/bench/machines' Object, without the one field of its node info
// that CAPI's Go types lack (the proxy would refuse to drop it).
func object(i int) []byte {
	return bytes.Replace(machines.Object(fmt.Sprintf("machine-%d", i), "bench", true), []byte(`"containerRuntimeVersion2":"",`), nil, 1)
}

// client is an HTTP/2 client trusting the proxy's certificate, as the apiserver's webhook client is.
func client(caFile string) (*http.Client, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}, nil
}

// post sends one review and checks that every object converted.
func post(ctx context.Context, hc *http.Client, url string, review []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(review))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// The answer is read into a head of its own: the client's memory is not the proxy's.
	var head struct {
		Response struct {
			Result struct {
				Status, Message string
			} `json:"result"`
		} `json:"response"`
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %.300s", resp.Status, data)
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return fmt.Errorf("the review did not convert: %w", err)
	}
	if head.Response.Result.Status != "Success" {
		return fmt.Errorf("the review did not convert: %+v", head.Response.Result)
	}
	return nil
}

// procStatus returns the kB figures of /proc/<pid>/status by name ("VmRSS", "VmHWM").
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

// heapInuse returns the proxy's go_memstats_heap_inuse_bytes.
func heapInuse(metricsURL string) (float64, error) {
	resp, err := http.Get(metricsURL + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "go_memstats_heap_inuse_bytes "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("no go_memstats_heap_inuse_bytes in /metrics")
}
