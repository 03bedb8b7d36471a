package migration

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/openshift/hypershift-capi-proxy/migration/serving"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// TestCommand drives `capi-proxy migrate` as an SRE would: adopt, a dry run, run, status, rollback.
func TestCommand(t *testing.T) {
	ctx := context.Background()
	c := newClients(t)
	ns := newNamespace(ctx, t, c, "cli")
	smallShape.create(ctx, t, c.dyn, c.kube, ns)
	before := readShape(ctx, t, c, ns, translate.ToPrivate)
	secrets := secretsOf(ctx, t, c, ns)
	run := func(args ...string) string {
		t.Helper()
		args = append([]string{"migrate"}, append(args, "--kubeconfig", env.AdminKubeconfig, "-n", ns)...)
		out, err := exec.CommandContext(ctx, proxy.Bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("capi-proxy %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("adopt")
	if out := run("run", "--dry-run"); !strings.Contains(out, "Move ToPrivate: 9 objects, 11 ownerReferences to re-point") {
		t.Errorf("dry run:\n%s", out)
	}
	if out := run("run", "--grace-period", "0"); !strings.Contains(out, "ToPrivate complete") {
		t.Errorf("run:\n%s", out)
	}
	checkNamespace(ctx, t, c, ns, serving.Private, translate.ToPrivate)
	checkMoved(ctx, t, c, ns, before, secrets, translate.ToPrivate)
	out := run("status")
	found := false
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == ns {
			found = true
			if want := []string{ns, "private", "Complete", "ToPrivate", "0", "9", "0"}; strings.Join(f, " ") != strings.Join(want, " ") {
				t.Errorf("status line %q, want %q", f, want)
			}
		}
	}
	if !found {
		t.Errorf("status:\n%s", out)
	}
	run("rollback", "--grace-period", "0")
	checkNamespace(ctx, t, c, ns, serving.Upstream, translate.ToUpstream)
}
