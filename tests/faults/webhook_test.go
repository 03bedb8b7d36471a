package faults

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/openshift/hypershift-capi-proxy/tests/framework"
)

// machineCRD is the file of the private Machine CRD, whose conversion webhook the test points at the
// proxy under attack.
const machineCRD = "cluster.hypershift.openshift.io_machines.yaml"

// TestWebhookSlowloris: clients that reach the proxy's webhook paths without credentials and send
// the headers of a ConversionReview (Content-Length 100000) and one byte of its body, then nothing, on
// both listeners (the API listener and --webhook-listen), more of them than the webhook has turns, do not
// delay a real conversion: a v1beta1 GET through the proxy, which the apiserver converts through the
// proxy's webhook listener, answers 200 (before the webhook took a turn only once a body was read, it
// failed with 500 after the apiserver's 30 s), and a review posted to the API listener's /convert is
// converted. Both listeners' reviews are counted in the same metrics.
func TestWebhookSlowloris(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	webhookAddr := fmt.Sprintf("127.0.0.1:%d", port)
	p, err := env.StartProxy(ctx, "--webhook-listen", webhookAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	webhookURL := "https://" + webhookAddr

	// The apiserver converts Machines through the attacked proxy's webhook listener for the test, then
	// through the package's proxy again.
	crd := filepath.Join(env.Root, "apis", "private", "crds", machineCRD)
	if err := installCRDs(ctx, p, webhookURL+"/convert", crd); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := proxy.InstallCRDs(context.Background(), crd); err != nil {
			t.Errorf("pointing the Machine CRD back at the package's proxy: %v", err)
		}
	}()
	ns := newNamespace(t)
	createMachine(t, ns, "m1")
	path := "/apis/cluster.x-k8s.io/v1beta1/namespaces/" + ns + "/machines/m1"
	hc, err := rest.HTTPClientFor(p.Config(env.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	// The apiserver takes the new webhook configuration in a moment: until the attacked proxy has
	// converted a Machine, the GETs may go to the package's proxy.
	converted := func() float64 {
		return metric(t, p.MetricsURL, `capi_proxy_conversion_webhook_requests_total{code="200",desired_api_version="cluster.x-k8s.io/v1beta1",kind="Machine"}`)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		code, _ := get(ctx, t, hc, p.URL+path)
		return code == http.StatusOK && converted() > 0, nil
	}); err != nil {
		t.Fatalf("the apiserver does not convert through the proxy's webhook listener: %v", err)
	}

	// The attack: twice as many slow reviews on each listener as the webhook has turns.
	const slow = 8
	for _, base := range []string{p.URL, webhookURL} {
		for range slow {
			slowReview(t, base, p.CAFile)
		}
	}
	// Every one is being read: each holds its first buffer (4 KiB) of the budget, not the 100000 bytes it
	// declares.
	heldBytes := `capi_proxy_webhook_held_bytes{webhook="conversion"}`
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return metric(t, p.MetricsURL, heldBytes) >= 2*slow*4096, nil
	}); err != nil {
		t.Fatalf("the slow reviews are not read: %s = %v", heldBytes, metric(t, p.MetricsURL, heldBytes))
	}
	if held := metric(t, p.MetricsURL, heldBytes); held > 2*slow*4096 {
		t.Errorf("the slow reviews hold %v bytes, more than their first buffers", held)
	}

	// A real conversion: through the webhook listener, as the apiserver converts a GET.
	before := converted()
	getCtx, cancelGet := context.WithTimeout(ctx, 20*time.Second) // the attack made it fail after 30 s
	defer cancelGet()
	code, body := get(getCtx, t, hc, p.URL+path)
	if code != http.StatusOK || !strings.Contains(body, `"apiVersion":"cluster.x-k8s.io/v1beta1"`) {
		t.Fatalf("a v1beta1 GET through the proxy under attack: %d %.300s", code, body)
	}
	// And one posted to the API listener's /convert, as the apiserver posts it where the CRDs name it.
	review := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u1",` +
		`"desiredAPIVersion":"cluster.hypershift.openshift.io/v1beta1","objects":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2",` +
		`"kind":"Machine","metadata":{"name":"m2","namespace":"` + ns + `"},"spec":{"clusterName":"c","bootstrap":{"dataSecretName":"s"},` +
		`"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"AWSMachine","name":"m2"}}}]}}`
	req, err := http.NewRequestWithContext(getCtx, http.MethodPost, p.URL+"/convert", strings.NewReader(review))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(data), `"status":"Success"`) {
		t.Fatalf("a review posted to the API listener under attack: %d %.300s", resp.StatusCode, data)
	}
	// One handler serves both listeners: both reviews are counted in its metrics.
	if after := converted(); after < before+2 {
		t.Errorf("conversion_webhook_requests_total went from %v to %v, want both listeners' reviews counted", before, after)
	}
}

// installCRDs installs CRD files with their conversion webhook at webhookURL, trusting p's certificate,
// as Proxy.InstallCRDs does for p's API listener.
func installCRDs(ctx context.Context, p *framework.Proxy, webhookURL string, paths ...string) error {
	args := append([]string{"install-crds", "--kubeconfig", filepath.Join(env.Dir, "admin.kubeconfig"),
		"--webhook-url", webhookURL, "--ca-bundle-file", p.CAFile}, paths...)
	out, err := exec.CommandContext(ctx, p.Bin, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("capi-proxy install-crds: %w\n%s", err, out)
	}
	return nil
}

// slowReview opens a TLS connection to base (HTTP/1.1) and sends the headers of a POST of a
// ConversionReview declaring 100000 bytes, and one byte of it; it sends nothing more. The connection
// closes with the test.
func slowReview(t *testing.T, base, caFile string) {
	t.Helper()
	ca, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	conn, err := tls.Dial("tcp", strings.TrimPrefix(base, "https://"), &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := fmt.Fprintf(conn, "POST /convert HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
}

// get sends a GET with the client and returns the status code and body.
func get(ctx context.Context, t *testing.T, hc *http.Client, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// metric returns the value of the sample (name and labels as /metrics prints them) on the proxy's
// metrics listener, 0 if absent.
func metric(t *testing.T, metricsURL, sample string) float64 {
	t.Helper()
	resp, err := http.Get(metricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	s := bufio.NewScanner(resp.Body)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), sample+" "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
