package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	certutil "k8s.io/client-go/util/cert"
)

// Managers built by hack/build-capi.sh.
const (
	// CAPIManager is Cluster API's core manager (sigs.k8s.io/cluster-api's main package).
	CAPIManager = "capi-manager"
	// KubeadmBootstrapManager is the kubeadm bootstrap provider's manager.
	KubeadmBootstrapManager = "kubeadm-bootstrap-manager"
	// KubeadmControlPlaneManager is the kubeadm control plane provider's manager.
	KubeadmControlPlaneManager = "kubeadm-control-plane-manager"
)

// Manager is a running Cluster API manager talking to the apiserver through a proxy.
type Manager struct {
	// WebhookURL is https://127.0.0.1:<port>, its webhook server; WebhookCAFile the self-signed
	// certificate it serves there.
	WebhookURL, WebhookCAFile string
	// HealthURL is http://127.0.0.1:<port>, where it serves /healthz and /readyz.
	HealthURL string
	// Log is the file holding its output.
	Log    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// CAPIBinDir builds (or reuses from the cache) the Cluster API managers with hack/build-capi.sh and
// returns their directory. CAPI_BIN_DIR, when set, names a directory that already holds them.
func (e *Env) CAPIBinDir() (string, error) {
	if dir := os.Getenv("CAPI_BIN_DIR"); dir != "" {
		return dir, nil
	}
	cmd := exec.Command(filepath.Join(e.Root, "hack", "build-capi.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/build-capi.sh: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

// StartManager runs the Cluster API manager binary (CAPIManager, ...) with an admin kubeconfig that
// points at the proxy, as HyperShift runs one per hosted-control-plane namespace (--namespace), without
// leader election, its webhook server on a free loopback port with a fresh self-signed certificate, and
// its health and diagnostics endpoints on free loopback ports. extraArgs are appended to its flags (a
// flag given again there wins). It returns once /readyz answers 200.
func (e *Env) StartManager(ctx context.Context, p *Proxy, binary, namespace string, extraArgs ...string) (*Manager, error) {
	binDir, err := e.CAPIBinDir()
	if err != nil {
		return nil, err
	}
	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	webhookPort, healthPort, diagnosticsPort := ports[0], ports[1], ports[2]
	dir := filepath.Join(e.Dir, fmt.Sprintf("%s-%d", binary, webhookPort))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
	if err != nil {
		return nil, err
	}
	m := &Manager{WebhookURL: fmt.Sprintf("https://127.0.0.1:%d", webhookPort), WebhookCAFile: filepath.Join(dir, "tls.crt"),
		HealthURL: fmt.Sprintf("http://127.0.0.1:%d", healthPort), Log: dir + ".log"}
	if err := os.WriteFile(m.WebhookCAFile, certPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: proxy
  cluster: {server: %q, certificate-authority: %q}
users:
- name: admin
  user: {token: %q}
contexts:
- name: proxy
  context: {cluster: proxy, user: admin}
current-context: proxy
`, p.URL, p.CAFile, e.AdminToken)), 0o600); err != nil {
		return nil, err
	}
	logFile, err := os.Create(m.Log)
	if err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig", kubeconfig,
		"--leader-elect=false",
		"--webhook-port", fmt.Sprint(webhookPort), "--webhook-cert-dir", dir,
		"--health-addr", fmt.Sprintf("127.0.0.1:%d", healthPort),
		"--diagnostics-address", fmt.Sprintf("127.0.0.1:%d", diagnosticsPort), "--insecure-diagnostics",
		"--v", "2",
	}
	if namespace != "" {
		args = append(args, "--namespace", namespace)
	}
	m.cmd = exec.Command(filepath.Join(binDir, binary), append(args, extraArgs...)...)
	m.cmd.Stdout, m.cmd.Stderr = logFile, logFile
	if err := m.cmd.Start(); err != nil {
		return nil, err
	}
	m.exited = make(chan struct{})
	go func() { _ = m.cmd.Wait(); close(m.exited) }()
	hc := &http.Client{Timeout: 2 * time.Second}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		select {
		case <-m.exited:
			return false, fmt.Errorf("%s exited: %s", binary, m.cmd.ProcessState)
		default:
		}
		resp, err := hc.Get(m.HealthURL + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		m.Stop()
		logs, _ := os.ReadFile(m.Log)
		return nil, fmt.Errorf("%s not ready: %w\n%s", binary, err, logs)
	}
	return m, nil
}

// WebhookClient is an HTTP client that trusts the manager's webhook certificate.
func (m *Manager) WebhookClient() (*http.Client, error) {
	pem, err := os.ReadFile(m.WebhookCAFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}, nil
}

// Stop terminates the manager.
func (m *Manager) Stop() {
	if m.exited == nil {
		return
	}
	_ = m.cmd.Process.Signal(os.Interrupt)
	select {
	case <-m.exited:
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.exited
	}
}
