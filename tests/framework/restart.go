package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// RestartAPIServer stops kube-apiserver (TERM, then KILL after 10s) and starts it again with the same command line (same port,
// certificates and etcd, so every object survives), then waits until it is ready again. Clients see
// their connections break and the port refuse connections meanwhile, as in a rolling restart.
//
// It reads the running process from DIR/kube-apiserver.pid (written by hack/kube-env.sh) and writes the
// new one there, so that hack/kube-env.sh down still stops it.
func (e *Env) RestartAPIServer(ctx context.Context) error {
	pidFile := filepath.Join(e.Dir, "kube-apiserver.pid")
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return fmt.Errorf("%s: %w", pidFile, err)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return fmt.Errorf("kube-apiserver (pid %d) does not run: %w", pid, err)
	}
	args := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")

	proc, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	// TERM first; kube-apiserver drains its long-running requests (the proxy's watches) for a long time,
	// so KILL after a grace period, as kube-env.sh down does.
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		if err := proc.Signal(sig); err != nil && running(pid) {
			return fmt.Errorf("stopping kube-apiserver: %w", err)
		}
		if wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return !running(pid), nil
		}) == nil {
			break
		}
	}
	if running(pid) {
		return fmt.Errorf("kube-apiserver (pid %d) did not stop", pid)
	}

	logFile, err := os.OpenFile(filepath.Join(e.Dir, "kube-apiserver.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own session, as kube-env.sh starts it: it outlives the test binary's process group signals.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver: %w", err)
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }() // reap it when it ends

	return e.waitReady(ctx)
}

// waitReady polls the apiserver's /readyz with the admin token.
func (e *Env) waitReady(ctx context.Context) error {
	caPEM, err := os.ReadFile(e.CAFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.APIServerURL+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+e.AdminToken)
		resp, err := hc.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// running reports whether a process exists and is not a zombie.
func running(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndex(s, ") ")
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
