package install

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openshift/hypershift-capi-proxy/install"
	"github.com/openshift/hypershift-capi-proxy/install/crds"
	"github.com/openshift/hypershift-capi-proxy/migration/serving"
	"github.com/openshift/hypershift-capi-proxy/tests/framework"
)

var machines = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machines"}

// TestSharedTopology runs the proxy with the shared Deployment's arguments (install.SharedArgs): pass-through
// authentication, the backend by the in-cluster kubeconfig (standing for it: the env's admin kubeconfig),
// the serving certificate from the mounted Secret.
func TestSharedTopology(t *testing.T) {
	ports := freePorts(t, 3)
	tlsDir := t.TempDir()
	ca := newCA(t)
	ca.writeServing(t, tlsDir, 1)
	installReferencedCRD(t, ca.pem)
	p := startProxy(t, install.SharedArgs(),
		map[string]string{
			"--listen":         "127.0.0.1:" + ports[0],
			"--webhook-listen": "127.0.0.1:" + ports[1],
			"--metrics-listen": "127.0.0.1:" + ports[2],
			"--kubeconfig":     env.AdminKubeconfig,
		},
		map[string]string{install.ServingCertDir: tlsDir})
	// A client of the shared proxy: the Service's API port, its own token.
	cfg := &rest.Config{Host: "https://127.0.0.1:" + ports[0], BearerToken: env.AdminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca.pem}}
	exercise(t, p, cfg, ca, tlsDir, "shared")
}

// TestSidecarTopology runs the proxy with the sidecar container's arguments (install.SidecarArgs, with a
// backend kubeconfig Secret standing for the pod's service account) and a client using the manager's
// kubeconfig (install.KubeconfigConfigMapFor) as the manager's container mounts it: no credentials of
// its own, the loopback listener, the serving CA.
func TestSidecarTopology(t *testing.T) {
	ports := freePorts(t, 3)
	tlsDir, backendDir := t.TempDir(), t.TempDir()
	ca := newCA(t)
	ca.writeServing(t, tlsDir, 1)
	installReferencedCRD(t, ca.pem)
	admin, err := os.ReadFile(env.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(backendDir, install.KubeconfigKey), admin, 0o600); err != nil {
		t.Fatal(err)
	}
	args := install.SidecarArgs(install.Sidecar{BackendKubeconfigSecret: "backend-kubeconfig"})
	if !contains(args, "--auth-mode=sidecar") || !contains(args, "--listen=127.0.0.1:"+strconv.Itoa(install.APIPort)) {
		t.Fatalf("the sidecar's arguments %q do not serve the sidecar mode on loopback", args)
	}
	dirs := map[string]string{install.ServingCertDir: tlsDir, install.BackendKubeconfigDir: backendDir}
	p := startProxy(t, args,
		map[string]string{
			"--listen":         "127.0.0.1:" + ports[0],
			"--webhook-listen": "127.0.0.1:" + ports[1],
			"--metrics-listen": "127.0.0.1:" + ports[2],
		}, dirs)

	cm, err := install.KubeconfigConfigMapFor("ns", install.Sidecar{})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := strings.ReplaceAll(cm.Data[install.KubeconfigKey], "127.0.0.1:"+strconv.Itoa(install.APIPort), "127.0.0.1:"+ports[0])
	kubeconfig = strings.ReplaceAll(kubeconfig, install.ServingCertDir, tlsDir)
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(kubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BearerToken != "" || cfg.CertFile != "" || cfg.CertData != nil {
		t.Fatal("the manager's kubeconfig carries credentials; the sidecar sends the pod's")
	}
	exercise(t, p, cfg, ca, tlsDir, "sidecar")
}

// exercise checks a running proxy: the private Machine CRD's conversion webhook pointed at its webhook
// listener, a Machine written through cfg and read back at v1beta1 (which the apiserver converts with
// that webhook: the proxy's conversion metrics count it), then a watch opened, the serving certificate
// rotated on disk, a new connection given the new certificate while the watch still delivers events.
func exercise(t *testing.T, p *runningProxy, cfg *rest.Config, ca *testCA, tlsDir, name string) {
	ctx := t.Context()
	installMachineCRD(t, p.webhookURL, ca.pem)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := metav1.NamespaceDefault
	created, err := dyn.Resource(machines).Namespace(ns).Create(ctx, machine(name+"-1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a Machine through the proxy: %v", err)
	}
	if created.GetAPIVersion() != "cluster.x-k8s.io/v1beta2" {
		t.Fatalf("created %s, want cluster.x-k8s.io/v1beta2", created.GetAPIVersion())
	}
	before := p.conversions(t)
	old, err := dyn.Resource(schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "machines"}).
		Namespace(ns).Get(ctx, name+"-1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the Machine at v1beta1 (the apiserver converts it with the proxy's webhook): %v", err)
	}
	if old.GetAPIVersion() != "cluster.x-k8s.io/v1beta1" {
		t.Fatalf("read %s, want cluster.x-k8s.io/v1beta1", old.GetAPIVersion())
	}
	if after := p.conversions(t); after <= before {
		t.Fatalf("the proxy's webhook counted %v conversions before the v1beta1 read and %v after: the apiserver did not call it", before, after)
	}

	w, err := dyn.Resource(machines).Namespace(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: created.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	ca.writeServing(t, tlsDir, 2)
	for _, addr := range []string{p.apiAddr, p.webhookAddr} {
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
			return servedSerial(addr, ca.pem) == 2, nil
		})
		if err != nil {
			t.Fatalf("%s still serves the old certificate after it was rotated on disk: %v", addr, err)
		}
	}

	if _, err := dyn.Resource(machines).Namespace(ns).Create(ctx, machine(name+"-2"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a Machine after the rotation: %v", err)
	}
	timeout := time.After(60 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch opened before the rotation ended")
			}
			if ev.Type == watch.Added && ev.Object.(*unstructured.Unstructured).GetName() == name+"-2" {
				return
			}
		case <-timeout:
			t.Fatal("the watch opened before the rotation did not deliver the Machine created after it")
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// machine is a v1beta2 Machine named name.
func machine(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"clusterName": "c1", "bootstrap": map[string]any{"dataSecretName": "bootstrap"},
			"infrastructureRef": map[string]any{"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AWSMachine", "name": name}},
	}}
}

// installReferencedCRD creates or updates the private AWSMachine CRD as install.CRDs renders it: the
// test's Machine references an AWSMachine, whose version the proxy's conversion to v1beta1 reads from
// that CRD's contract labels, as CAPI's does; installed before the proxy starts, its first list of the
// CRDs has it.
func installReferencedCRD(t *testing.T, caBundle []byte) {
	t.Helper()
	all, err := install.CRDs("ns", install.Name, caBundle)
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range all {
		if crd.Name != "awsmachines.infrastructure.cluster.hypershift.openshift.io" {
			continue
		}
		c, err := client.New(env.DirectConfig(env.AdminToken), client.Options{Scheme: framework.PrivateScheme})
		if err != nil {
			t.Fatal(err)
		}
		if err := crds.Apply(t.Context(), c, []*apiextensionsv1.CustomResourceDefinition{crd}, time.Minute); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatal("install.CRDs has no AWSMachine CRD")
}

// installMachineCRD creates or updates the private Machine CRD as install.CRDs renders it, but for the
// webhook's address: the test's apiserver has no Service routing (no kube-proxy), so it calls the URL of
// the proxy's webhook listener instead of the Service in front of it.
func installMachineCRD(t *testing.T, webhookURL string, caBundle []byte) {
	t.Helper()
	all, err := install.CRDs("ns", install.Name, caBundle)
	if err != nil {
		t.Fatal(err)
	}
	var machineCRD *apiextensionsv1.CustomResourceDefinition
	for _, crd := range all {
		if crd.Name == "machines.cluster.hypershift.openshift.io" {
			machineCRD = crd
		}
	}
	if machineCRD == nil || machineCRD.Spec.Conversion.Webhook.ClientConfig.Service == nil {
		t.Fatal("install.CRDs has no Machine CRD converting by a webhook Service")
	}
	if !crds.SetWebhook(machineCRD, crds.Webhook{URL: webhookURL, CABundle: caBundle}) {
		t.Fatal("the Machine CRD does not convert by webhook")
	}
	c, err := client.New(env.DirectConfig(env.AdminToken), client.Options{Scheme: framework.PrivateScheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := crds.Apply(t.Context(), c, []*apiextensionsv1.CustomResourceDefinition{machineCRD}, time.Minute); err != nil {
		t.Fatal(err)
	}
}

// runningProxy is a proxy process.
type runningProxy struct {
	apiAddr, webhookAddr, webhookURL, metricsURL string
}

// startProxy runs the proxy binary with args as rendered, with the values of the flags in values
// replaced (listen addresses, and the backend's address where it is the in-cluster one) and the mounted
// directories in dirs replaced by local ones; every other argument is passed as it is. Its environment
// has the downward API's POD_NAME and POD_NAMESPACE as the rendered container's (a pod name of the
// test's, namespace default; no POD_UID, whose Pod the garbage collector would not find). It waits for
// /readyz, checks that the proxy acknowledges with a Lease of that name (readiness waits for it), and
// stops the process at the end of the test.
func startProxy(t *testing.T, rendered []string, values, dirs map[string]string) *runningProxy {
	t.Helper()
	args := make([]string, 0, len(rendered)+2)
	used := map[string]bool{}
	for _, arg := range rendered {
		flag, value, ok := strings.Cut(arg, "=")
		if !ok {
			t.Fatalf("rendered argument %q is not --flag=value", arg)
		}
		if v, ok := values[flag]; ok {
			value, used[flag] = v, true
		}
		for from, to := range dirs {
			if strings.HasPrefix(value, from+"/") {
				value = to + strings.TrimPrefix(value, from)
			}
		}
		args = append(args, flag+"="+value)
	}
	for flag := range values {
		if !used[flag] {
			t.Fatalf("the rendered arguments %q have no %s", rendered, flag)
		}
	}
	args = append(args, "-v=2")
	logFile, err := os.Create(filepath.Join(env.Dir, fmt.Sprintf("%s.log", strings.ReplaceAll(t.Name(), "/", "_"))))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(proxyBin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	podName := "capi-proxy-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "POD_NAME=") || strings.HasPrefix(kv, "POD_NAMESPACE=") || strings.HasPrefix(kv, "POD_UID=")
	}), "POD_NAME="+podName, "POD_NAMESPACE="+metav1.NamespaceDefault)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(40 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = logFile.Close()
		if t.Failed() {
			logs, _ := os.ReadFile(logFile.Name())
			t.Logf("proxy log:\n%s", logs)
		}
	})
	p := &runningProxy{apiAddr: values["--listen"], webhookAddr: values["--webhook-listen"],
		webhookURL: "https://" + values["--webhook-listen"] + install.WebhookPath, metricsURL: "http://" + values["--metrics-listen"]}
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		select {
		case <-exited:
			return false, fmt.Errorf("the proxy exited: %s", cmd.ProcessState)
		default:
		}
		resp, err := http.Get(p.metricsURL + "/readyz")
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("the proxy %q is not ready: %v", args, err)
	}
	kube, err := kubernetes.NewForConfig(env.DirectConfig(env.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	lease, err := kube.CoordinationV1().Leases(metav1.NamespaceDefault).Get(t.Context(), podName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the ready proxy's acknowledging Lease (named by POD_NAME and POD_NAMESPACE): %v", err)
	}
	if lease.Labels[serving.AcknowledgeLabel] != serving.AcknowledgeLabelValue || lease.Annotations[serving.AcknowledgedAnnotation] == "" {
		t.Errorf("the proxy's Lease has labels %v and annotations %v: want %s and %s", lease.Labels, lease.Annotations,
			serving.AcknowledgeLabel, serving.AcknowledgedAnnotation)
	}
	return p
}

// conversions sums capi_proxy_conversion_webhook_requests_total on the proxy's /metrics.
func (p *runningProxy) conversions(t *testing.T) float64 {
	t.Helper()
	resp, err := http.Get(p.metricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "capi_proxy_conversion_webhook_requests_total{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

// servedSerial is the serial number of the certificate a new TLS connection to addr gets (0 on error).
func servedSerial(addr string, caPEM []byte) int64 {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		return 0
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var listeners []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listeners = append(listeners, l)
		out = append(out, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	for _, l := range listeners {
		_ = l.Close()
	}
	return out
}

// testCA issues serving certificates for 127.0.0.1, as a cluster's CA would rotate them: same CA,
// new serial.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1000), Subject: pkix.Name{CommonName: "capi-proxy-test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// writeServing writes tls.crt, tls.key and ca.crt into dir as a kubernetes.io/tls Secret volume holds
// them, with a new certificate of serial serial; each file is replaced by a rename, never seen half
// written.
func (c *testCA) writeServing(t *testing.T, dir string, serial int64) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "capi-proxy"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"ca.crt":  c.pem,
		"tls.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
	}
	// The key first: certwatcher reloads on the certificate's change and reads both.
	for _, name := range []string{"ca.crt", "tls.key", "tls.crt"} {
		tmp := filepath.Join(dir, "."+name+".tmp")
		if err := os.WriteFile(tmp, files[name], 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}
