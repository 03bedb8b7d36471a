// Package install tests the install assets and the topologies as make generate writes them (config/)
// and package install renders them, against a real kube-apiserver: every kustomize base and overlay
// builds (sigs.k8s.io/kustomize/api, as kubectl apply -k) and every object it holds is accepted by a
// server-side dry-run apply; the shared and sidecar configurations run the proxy binary with the
// rendered flags, kubeconfig and certificates, serve a client, serve the apiserver's conversion calls,
// and pick up a rotated serving certificate without cutting an open watch.
package install

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/openshift/hypershift-capi-proxy/tests/framework"
)

var (
	env *framework.Env
	// proxyBin is the proxy binary, built once.
	proxyBin string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	e, err := framework.StartEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	failed := 1
	defer func() { e.Stop(os.Getenv("E2E_KEEP") != "" || failed != 0) }()
	proxyBin = filepath.Join(e.Dir, "capi-proxy")
	if err := e.Build(proxyBin, "./proxy"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env = e
	failed = m.Run()
	if failed != 0 {
		fmt.Fprintf(os.Stderr, "tests failed; control plane state and logs kept in %s\n", e.Dir)
	}
	return failed
}
