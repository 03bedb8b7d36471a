// Package framework runs the real components the e2e tests drive: a kube-apiserver, etcd and
// kube-controller-manager built from the Go module proxy (hack/kube-env.sh), the private CRDs beside the
// platform's own upstream CAPI CRDs (as on a real management cluster), and the proxy binary built from
// ./proxy, serving TLS on loopback. Its *_helpers.go files hold one helper per action or wait of a
// test (a raw request and what its client must see, CRDs created or labelled until a test ends,
// namespaces, a wait for the proxy to follow a namespace's label), each taking an XInput struct;
// README.md lists them.
package framework

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Env is a running control plane.
type Env struct {
	// Dir holds the control plane's state, logs and credentials.
	Dir string
	// APIServerURL is https://127.0.0.1:<port>; CAFile its serving CA.
	APIServerURL, CAFile string
	// AdminToken is a system:masters bearer token; UserToken the restricted user "alice".
	AdminToken, UserToken string
	// AdminKubeconfig and UserKubeconfig are kubeconfig files with these tokens.
	AdminKubeconfig, UserKubeconfig string
	// BinDir holds kube-apiserver, etcd, kube-controller-manager and kubectl.
	BinDir string
	// Root is the repository root.
	Root string
}

// RepoRoot finds the repository root (the directory holding go.mod) above the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// StartEnv starts a control plane in a new directory with hack/kube-env.sh (which builds or reuses the
// binaries; KUBE_BIN_DIR names a cached build).
func StartEnv() (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "capi-proxy-e2e-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(root, "hack", "kube-env.sh"), "up", dir)
	cmd.Stderr = os.Stderr
	if out, err := cmd.Output(); err != nil {
		return nil, fmt.Errorf("hack/kube-env.sh up: %w\n%s", err, out)
	}
	vars, err := readEnvFile(filepath.Join(dir, "env"))
	if err != nil {
		return nil, err
	}
	return &Env{
		Dir: dir, Root: root,
		APIServerURL: vars["KUBE_APISERVER_URL"], CAFile: vars["KUBE_CA_FILE"],
		AdminToken: vars["KUBE_ADMIN_TOKEN"], UserToken: vars["KUBE_USER_TOKEN"],
		AdminKubeconfig: vars["KUBECONFIG_ADMIN"], UserKubeconfig: vars["KUBECONFIG_USER"],
		BinDir: vars["KUBE_BIN_DIR"],
	}, nil
}

// Stop stops the control plane (hack/kube-env.sh down) and removes its directory unless keep is set.
func (e *Env) Stop(keep bool) {
	cmd := exec.Command(filepath.Join(e.Root, "hack", "kube-env.sh"), "down", e.Dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	_ = cmd.Run()
	if !keep {
		_ = os.RemoveAll(e.Dir)
	}
}

// StopAPIServer stops kube-apiserver only; etcd and kube-controller-manager keep running.
func (e *Env) StopAPIServer() error { return e.kubeEnv("stop-apiserver") }

// StartAPIServer starts kube-apiserver again with the same port, flags and etcd (after StopAPIServer),
// and waits until it is ready.
func (e *Env) StartAPIServer() error { return e.kubeEnv("start-apiserver") }

// RestartAPIServer is StopAPIServer and StartAPIServer.
func (e *Env) RestartAPIServer() error { return e.kubeEnv("restart-apiserver") }

func (e *Env) kubeEnv(command string) error {
	cmd := exec.Command(filepath.Join(e.Root, "hack", "kube-env.sh"), command, e.Dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/kube-env.sh %s: %w", command, err)
	}
	return nil
}

// readEnvFile reads the `export NAME=value` lines kube-env.sh writes (values quoted by printf %q; the
// values it writes are paths, URLs and hex tokens, which %q leaves bare).
func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	vars := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(s.Text()), "export ")
		if k, v, ok := strings.Cut(line, "="); ok {
			vars[k] = strings.Trim(v, `'"`)
		}
	}
	return vars, s.Err()
}

// DirectConfig is a rest.Config talking straight to the apiserver with token.
func (e *Env) DirectConfig(token string) *rest.Config {
	return &rest.Config{Host: e.APIServerURL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAFile: e.CAFile},
		QPS: 200, Burst: 400}
}

// InstallCRDs creates the CRDs in the YAML files and waits until each is Established.
func (e *Env) InstallCRDs(ctx context.Context, c client.Client, files ...string) error {
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if err := createEstablished(ctx, c, crd); err != nil {
			return err
		}
	}
	return nil
}

// createEstablished creates crd and waits until it is Established.
func createEstablished(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) error {
	if err := c.Create(ctx, crd); err != nil {
		return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
	}
	return waitEstablished(ctx, c, crd)
}

// waitEstablished waits until crd is Established.
func waitEstablished(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) error {
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
			return false, nil
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		return fmt.Errorf("CRD %s not established: %w", crd.Name, err)
	}
	return nil
}

// UpstreamCRDs returns the CRD files of another CAPI release (from the Go module cache, downloaded on
// demand), to install beside the private ones as the platform's own copy.
func UpstreamCRDs(module, version string) ([]string, error) {
	dir, err := ModuleDir(module, version)
	if err != nil {
		return nil, err
	}
	return filepath.Glob(filepath.Join(dir, "config", "crd", "bases", "*.yaml"))
}

// ModuleDir returns the directory of a module version in the Go module cache, downloading it on demand.
func ModuleDir(module, version string) (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", module+"@"+version).Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", module, version, err)
	}
	var dir string
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), `"Dir": `); ok {
			dir = strings.Trim(strings.TrimSuffix(v, ","), `"`)
		}
	}
	if dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: no Dir in %s", module, version, out)
	}
	return dir, nil
}

// Proxy is a running proxy binary.
type Proxy struct {
	// URL is https://127.0.0.1:<port>; CAFile its serving certificate.
	URL, CAFile string
	// MetricsURL is http://127.0.0.1:<port>, where it serves /metrics, /healthz and /readyz.
	MetricsURL string
	// Log is the file holding its output.
	Log string
	cmd *exec.Cmd
	// exited is closed when the process has ended.
	exited chan struct{}
	// Bin is the proxy binary.
	Bin string
	env *Env
}

// Build builds the package pkg of the repository (./proxy, for example) into bin with go build and
// flags, the build's output on stderr.
func (e *Env) Build(bin, pkg string, flags ...string) error {
	build := exec.Command("go", append(append([]string{"build"}, flags...), "-o", bin, pkg)...)
	build.Dir, build.Stdout, build.Stderr = e.Root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building %s: %w", pkg, err)
	}
	return nil
}

// StartProxy builds ./proxy and runs it on a free loopback port in front of the env's apiserver, serving
// TLS with a fresh self-signed certificate for 127.0.0.1, in pass-through mode with the admin kubeconfig
// (whose credentials it then ignores), and its metrics on another free loopback port. extraArgs are
// appended to its flags; a flag given again there wins (--auth-mode=sidecar --kubeconfig=...).
func (e *Env) StartProxy(ctx context.Context, extraArgs ...string) (*Proxy, error) {
	return e.StartProxyFrom(ctx, filepath.Join(e.Dir, "capi-proxy"), extraArgs...)
}

// StartProxyFrom is StartProxy running the binary at bin, which it builds from ./proxy only where none
// is. A benchmark runs the proxy it measures from a binary of its own, so that no other process maps
// its pages (a page two processes map stays resident in both, whatever either does).
func (e *Env) StartProxyFrom(ctx context.Context, bin string, extraArgs ...string) (*Proxy, error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
	if err != nil {
		return nil, err
	}
	return e.StartProxyWithCert(ctx, bin, certPEM, keyPEM, extraArgs...)
}

// StartProxyWithCert is StartProxyFrom serving certPEM and keyPEM (PEM, a self-signed certificate for
// 127.0.0.1, which is also the Proxy's CAFile) instead of a fresh certificate: a proxy started in place of
// another (behind one address, as a rolling update behind a Service) serves what its clients trust.
func (e *Env) StartProxyWithCert(ctx context.Context, bin string, certPEM, keyPEM []byte, extraArgs ...string) (*Proxy, error) {
	if _, err := os.Stat(bin); err != nil {
		if err := e.Build(bin, "./proxy"); err != nil {
			return nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	metricsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	// Files are named by port: several proxies may run in one environment.
	name := fmt.Sprintf("proxy-%d", port)
	certFile, keyFile := filepath.Join(e.Dir, name+".crt"), filepath.Join(e.Dir, name+".key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return nil, err
	}
	p := &Proxy{URL: fmt.Sprintf("https://127.0.0.1:%d", port), CAFile: certFile, Log: filepath.Join(e.Dir, name+".log"),
		MetricsURL: fmt.Sprintf("http://127.0.0.1:%d", metricsPort), Bin: bin, env: e}
	logFile, err := os.Create(p.Log)
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--kubeconfig", filepath.Join(e.Dir, "admin.kubeconfig"),
		"--tls-cert-file", certFile, "--tls-private-key-file", keyFile,
		"--metrics-listen", fmt.Sprintf("127.0.0.1:%d", metricsPort),
		// The tests' clients reach the proxy on loopback, and are answered gzip'ed as kube-apiserver
		// answers them (the default, said here so that a test does not depend on it);
		// "--gzip-loopback=false" among extraArgs answers them uncompressed.
		"--gzip-loopback",
		"-v", "2",
	}, extraArgs...)
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	// Not the downward API's variables of a pod the tests may run in: a proxy publishes an acknowledging
	// Lease only where a test says so (--acknowledge-lease-namespace and --acknowledge-lease-name).
	p.cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == "POD_NAME" || name == "POD_NAMESPACE" || name == "POD_UID"
	})
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	p.exited = make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	// Ready when its /readyz says the apiserver answers, and it answers /version through to it.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		select {
		case <-p.exited:
			return false, fmt.Errorf("the proxy exited: %s", p.cmd.ProcessState)
		default:
		}
		if ready, err := hc.Get(p.MetricsURL + "/readyz"); err != nil {
			return false, nil
		} else if ready.Body.Close(); ready.StatusCode != http.StatusOK {
			return false, nil
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/version", nil)
		req.Header.Set("Authorization", "Bearer "+e.AdminToken)
		resp, err := hc.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		p.Stop()
		logs, _ := os.ReadFile(p.Log)
		return nil, fmt.Errorf("proxy not ready: %w\n%s", err, logs)
	}
	return p, nil
}

// InstallCRDs installs CRDs (files or directories) as an administrator would, with the proxy binary's
// install-crds command: the conversion webhook of each CRD that has one points at this proxy
// (https://127.0.0.1:<port>/convert, its self-signed certificate as CA bundle).
func (p *Proxy) InstallCRDs(ctx context.Context, paths ...string) error {
	args := append([]string{"install-crds", "--kubeconfig", filepath.Join(p.env.Dir, "admin.kubeconfig"),
		"--webhook-url", p.URL + "/convert", "--ca-bundle-file", p.CAFile}, paths...)
	out, err := exec.CommandContext(ctx, p.Bin, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("capi-proxy install-crds: %w\n%s", err, out)
	}
	return nil
}

// Config is a rest.Config talking to the apiserver through the proxy with token.
func (p *Proxy) Config(token string) *rest.Config {
	return &rest.Config{Host: p.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAFile: p.CAFile},
		QPS: 200, Burst: 400}
}

// PID is the proxy's process ID, for readings of /proc/<pid>.
// WaitStartupReleased waits up to timeout for the proxy (at -v 2 or more) to log that it returns the
// memory of its startup (releaseStartupMemory in package main), then a second more: the release
// (debug.FreeOSMemory and the page-out of the executable) follows the line at once and takes
// milliseconds. Memory readings of an idle proxy are taken after it.
func (p *Proxy) WaitStartupReleased(ctx context.Context, timeout time.Duration) error {
	const line = "Returning the memory of startup to the operating system"
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		log, err := os.ReadFile(p.Log)
		return err == nil && strings.Contains(string(log), line), nil
	})
	if err != nil {
		return fmt.Errorf("the proxy did not log %q: %w", line, err)
	}
	select {
	case <-time.After(time.Second):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *Proxy) PID() int { return p.cmd.Process.Pid }

// Stop terminates the proxy.
func (p *Proxy) Stop() {
	if p.exited == nil {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// DropPageCache writes path's pages back and evicts them from the page cache (posix_fadvise(2)
// POSIX_FADV_DONTNEED), so that the next process to run it reads it from disk, as on a node that has
// just pulled an image. Pages that a running process maps stay.
func DropPageCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return err
	}
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
