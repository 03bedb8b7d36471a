// Package benchkit holds what the end-to-end benchmarks (tests/bench/e2e, tests/bench/scale) share: the
// bare reverse proxy they measure the capi-proxy against (tests/bench/e2e/bare, built and run as a
// process of its own), a process's CPU time and memory read from /proc, and percentiles.
package benchkit

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	certutil "k8s.io/client-go/util/cert"

	"github.com/openshift/hypershift-capi-proxy/tests/framework"
)

// BarePackage is the bare reverse proxy's package, relative to the repository root.
const BarePackage = "./tests/bench/e2e/bare"

// Bare is a running bare reverse proxy.
type Bare struct {
	// URL is https://127.0.0.1:<port>; CAFile the self-signed certificate it serves.
	URL, CAFile string
	// PID is its process, for readings of /proc/<pid>.
	PID    int
	cmd    *exec.Cmd
	exited chan struct{}
}

// BuildBare builds the bare reverse proxy into the env's directory and returns the binary's path.
func BuildBare(env *framework.Env) (string, error) {
	bin := filepath.Join(env.Dir, "bare-proxy")
	return bin, env.Build(bin, BarePackage)
}

// SelfSignedCert writes a fresh self-signed certificate and key for 127.0.0.1 (PEM) as <name>.crt and
// <name>.key in dir and returns their paths.
func SelfSignedCert(dir, name string) (cert, key string, err error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		return "", "", err
	}
	cert, key = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(cert, certPEM, 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(key, keyPEM, 0o600); err != nil {
		return "", "", err
	}
	return cert, key, nil
}

// NewBare builds the bare reverse proxy and runs it in front of the env's apiserver with a fresh
// certificate (BuildBare, SelfSignedCert, StartBare).
func NewBare(env *framework.Env) (*Bare, error) {
	bin, err := BuildBare(env)
	if err != nil {
		return nil, err
	}
	cert, key, err := SelfSignedCert(env.Dir, "bare")
	if err != nil {
		return nil, err
	}
	return StartBare(bin, env, cert, key)
}

// StartBare runs the bare reverse proxy binary bin on a free loopback port in front of the env's
// apiserver, serving cert and key, and returns once it listens (it prints READY).
func StartBare(bin string, env *framework.Env, cert, key string) (*Bare, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	cmd := exec.Command(bin, "-backend", env.APIServerURL, "-backend-ca", env.CAFile, "-listen", addr, "-cert", cert, "-key", key)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	b := &Bare{URL: "https://" + addr, CAFile: cert, PID: cmd.Process.Pid, cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(b.exited) }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "READY" {
		b.Stop()
		return nil, fmt.Errorf("the bare proxy did not start: %q %w", line, err)
	}
	return b, nil
}

// Stop kills the bare proxy (it has no graceful shutdown: its connections are reset) and waits until it
// has exited.
func (b *Bare) Stop() {
	_ = b.cmd.Process.Kill()
	<-b.exited
}

// CPU returns the user and system CPU time process pid has used (/proc/<pid>/stat), at the kernel's
// tick (10 ms); 0 for pid 0 or a process that is gone.
func CPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which ends with the last ')'): utime and stime are the 12th and
	// 13th, in clock ticks (USER_HZ, 100 on Linux).
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// Memory is a reading of /proc/<pid>/status, in MiB: VmRSS, its anonymous and file-backed parts (RssAnon,
// RssFile) and the peak RSS (VmHWM).
type Memory struct{ RSS, Anon, File, HWM float64 }

// ReadMemory reads process pid's memory; zero if it cannot be read.
func ReadMemory(pid int) Memory {
	var m Memory
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			m.RSS = kb / 1024
		case "RssAnon:":
			m.Anon = kb / 1024
		case "RssFile:":
			m.File = kb / 1024
		case "VmHWM:":
			m.HWM = kb / 1024
		}
	}
	return m
}

// ResetPeak resets process pid's VmHWM to its current RSS (proc(5): clear_refs "5").
func ResetPeak(pid int) {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// Percentile returns the p-th percentile (0-100) of v, the nearest sample by rank; 0 for no samples.
func Percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(float64(len(s)-1)*p/100 + 0.5)
	return s[i]
}

// CPUModel is the machine's CPU model name (/proc/cpuinfo), or "unknown CPU".
func CPUModel() string {
	data, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
