package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Main runs a test package against a control plane of its own: it starts one (StartEnv), installs the
// admission policy that guards the namespaces' serving label (InstallServingPolicy, as the install
// assets do), runs setup (installing CRDs, ...), starts the proxy (StartProxy), installs (or updates) the private CRDs with their
// conversion webhook pointed at that proxy (Proxy.InstallCRDs), sets *env and *proxy, runs the tests and
// stops everything. The control plane's directory, with every log, is kept when a test failed or E2E_KEEP is
// set. It returns the exit code for os.Exit.
func Main(m *testing.M, setup func(context.Context, *Env) error, env **Env, proxy **Proxy) int {
	ctx := context.Background()
	e, err := StartEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	failed := 1
	defer func() { e.Stop(os.Getenv("E2E_KEEP") != "" || failed != 0) }()
	if err := e.InstallServingPolicy(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := setup(ctx, e); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	p, err := e.StartProxy(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer p.Stop()
	if err := p.InstallCRDs(ctx, filepath.Join(e.Root, "apis", "private", "crds")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*env, *proxy = e, p

	failed = m.Run()
	if failed != 0 {
		fmt.Fprintf(os.Stderr, "tests failed; control plane state and logs kept in %s (proxy log: %s)\n", e.Dir, p.Log)
	}
	return failed
}
