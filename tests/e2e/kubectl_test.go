package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	privclusterv1 "github.com/openshift/hypershift-capi-proxy/apis/private/core/v1beta2"
)

// kubectlDirect runs kubectl against the apiserver itself, as the admin.
func kubectlDirect(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(env.BinDir, "kubectl"), append([]string{"--kubeconfig", filepath.Join(env.Dir, "admin.kubeconfig"),
		"--cache-dir", filepath.Join(t.TempDir(), "cache")}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl (direct) %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestKubectlSession is a kubectl user's session through the proxy: apply --server-side (with a conflict
// and --force-conflicts), get (table, -o yaml, -w), describe, patch (json and merge), scale, explain,
// get crd, auth can-i, delete. Nothing the user sees names a private group.
func TestKubectlSession(t *testing.T) {
	ctx := context.Background()
	c, directClient := clients(t)
	ns := namespace(t, c)
	dir := t.TempDir()
	write := func(name, content string) string {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	noPrivate := func(what, out string) {
		t.Helper()
		if strings.Contains(out, "hypershift") {
			t.Errorf("%s shows a private group:\n%s", what, out)
		}
	}
	manifest := func(replicas int, infraName string) string {
		return fmt.Sprintf(`apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: c1, namespace: %[1]s}
spec:
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerCluster, name: c1}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata:
  name: md1
  namespace: %[1]s
  labels: {cluster.x-k8s.io/cluster-name: c1}
spec:
  clusterName: c1
  replicas: %[2]d
  selector: {matchLabels: {cluster.x-k8s.io/cluster-name: c1}}
  template:
    metadata: {labels: {cluster.x-k8s.io/cluster-name: c1}}
    spec:
      clusterName: c1
      bootstrap: {configRef: {apiGroup: bootstrap.cluster.x-k8s.io, kind: KubeadmConfigTemplate, name: md1}}
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerMachineTemplate, name: %[3]s}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Machine
metadata:
  name: m1
  namespace: %[1]s
  labels: {cluster.x-k8s.io/cluster-name: c1}
spec:
  clusterName: c1
  bootstrap: {dataSecretName: m1}
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerMachine, name: m1}
`, ns, replicas, infraName)
	}

	t.Run("apply --server-side", func(t *testing.T) {
		out := kubectl(t, "apply", "--server-side", "-f", write("v1.yaml", manifest(1, "md1")))
		if !strings.Contains(out, "machinedeployment.cluster.x-k8s.io/md1 serverside-applied") {
			t.Errorf("apply: %s", out)
		}
		// Another manager changing a field the first owns: the apiserver's conflict, then --force-conflicts.
		file := write("v2.yaml", manifest(1, "md1-v2"))
		out, err := runKubectl(t, env.AdminToken, "apply", "--server-side", "--field-manager", "other", "-f", file)
		if err == nil || !strings.Contains(out, "conflict") || !strings.Contains(out, ".spec.template.spec.infrastructureRef.name") {
			t.Errorf("a conflicting apply: %v\n%s", err, out)
		}
		noPrivate("the conflict", out)
		kubectl(t, "apply", "--server-side", "--field-manager", "other", "--force-conflicts", "-f", file)
		stored := &privclusterv1.MachineDeployment{}
		if err := directClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "md1"}, stored); err != nil {
			t.Fatal(err)
		}
		if r := stored.Spec.Template.Spec.InfrastructureRef; r.Name != "md1-v2" || r.APIGroup != privateInfra {
			t.Errorf("stored after --force-conflicts: %+v", r)
		}
	})

	t.Run("get", func(t *testing.T) {
		out := kubectl(t, "get", "machinedeployments,machines", "-n", ns)
		if !strings.Contains(out, "machinedeployment.cluster.x-k8s.io/md1") || !strings.Contains(out, "machine.cluster.x-k8s.io/m1") {
			t.Errorf("kubectl get:\n%s", out)
		}
		out = kubectl(t, "get", "ma", "-n", ns, "-o", "wide") // upstream's shortName
		if !strings.Contains(out, "m1") || !strings.Contains(out, "c1") {
			t.Errorf("kubectl get ma -o wide:\n%s", out)
		}
		noPrivate("kubectl get", out)
		// -o yaml is the apiserver's document but for the group.
		viaProxyYAML := kubectl(t, "get", "machine", "m1", "-n", ns, "-o", "yaml")
		directYAML := kubectlDirect(t, "get", "machines."+privateCore, "m1", "-n", ns, "-o", "yaml")
		sameButGroups(t, "kubectl get -o yaml", []byte(viaProxyYAML), []byte(directYAML))
		out = kubectl(t, "get", "crd", "machines.cluster.x-k8s.io", "clusters.cluster.x-k8s.io")
		if !strings.Contains(out, "machines.cluster.x-k8s.io") {
			t.Errorf("kubectl get crd:\n%s", out)
		}
		noPrivate("kubectl get crd", kubectl(t, "get", "crd"))
	})

	t.Run("get -w", func(t *testing.T) {
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(wctx, filepath.Join(env.BinDir, "kubectl"), "--server", proxy.URL, "--certificate-authority", proxy.CAFile,
			"--token", env.AdminToken, "--cache-dir", filepath.Join(t.TempDir(), "cache"), "get", "machines", "-n", ns, "-w", "--output-watch-events")
		cmd.Env = append(os.Environ(), "KUBECONFIG=/dev/null")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = cmd.Wait() }()
		lines := bufio.NewScanner(stdout)
		next := func() string {
			if !lines.Scan() {
				t.Fatalf("kubectl get -w ended: %v", lines.Err())
			}
			return lines.Text()
		}
		if header := next(); !strings.Contains(header, "NAME") {
			t.Fatalf("kubectl get -w header: %q", header)
		}
		if line := next(); !strings.Contains(line, "ADDED") || !strings.Contains(line, "m1") {
			t.Fatalf("kubectl get -w initial line: %q", line)
		}
		kubectl(t, "label", "machine", "m1", "-n", ns, "e2e=watched")
		if line := next(); !strings.Contains(line, "MODIFIED") || !strings.Contains(line, "m1") {
			t.Errorf("kubectl get -w after a change: %q", line)
		}
	})

	t.Run("describe", func(t *testing.T) {
		m := &privclusterv1.Machine{}
		if err := directClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "m1"}, m); err != nil {
			t.Fatal(err)
		}
		// An event as CAPI's controllers record it (stored with the private group, as they write it
		// through the proxy).
		if err := directClient.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "m1.e2e", Namespace: ns},
			InvolvedObject: corev1.ObjectReference{APIVersion: privateCore + "/v1beta2", Kind: "Machine", Namespace: ns, Name: "m1", UID: m.UID},
			Reason:         "DetectedUnhealthy", Message: "e2e event", Type: corev1.EventTypeNormal, Source: corev1.EventSource{Component: "capi"}}); err != nil {
			t.Fatal(err)
		}
		out := kubectl(t, "describe", "machine", "m1", "-n", ns)
		if !strings.Contains(out, "API Version:  cluster.x-k8s.io/v1beta2") || !strings.Contains(out, "infrastructure.cluster.x-k8s.io") ||
			!strings.Contains(out, "DetectedUnhealthy") {
			t.Errorf("kubectl describe:\n%s", out)
		}
		noPrivate("kubectl describe", out)
	})

	t.Run("patch", func(t *testing.T) {
		kubectl(t, "patch", "machine", "m1", "-n", ns, "--type", "json", "-p",
			`[{"op":"replace","path":"/spec/infrastructureRef","value":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"DockerMachine","name":"m1-json"}}]`)
		kubectl(t, "patch", "machine", "m1", "-n", ns, "--type", "merge", "-p",
			`{"spec":{"bootstrap":{"configRef":{"apiGroup":"bootstrap.cluster.x-k8s.io","kind":"KubeadmConfig","name":"m1-merge"}}}}`)
		out, err := runKubectl(t, env.AdminToken, "patch", "machine", "m1", "-n", ns, "-p", `{"metadata":{"labels":{"x":"y"}}}`)
		if err == nil || !strings.Contains(out, "strategic merge patch") && !strings.Contains(out, "not supported") {
			t.Errorf("a strategic merge patch of a custom resource: %v %s", err, out)
		}
		m := &privclusterv1.Machine{}
		if err := directClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "m1"}, m); err != nil {
			t.Fatal(err)
		}
		if m.Spec.InfrastructureRef.Name != "m1-json" || m.Spec.InfrastructureRef.APIGroup != privateInfra ||
			m.Spec.Bootstrap.ConfigRef.Name != "m1-merge" || m.Spec.Bootstrap.ConfigRef.APIGroup != privateBoot {
			t.Errorf("stored after the patches: %+v %+v", m.Spec.InfrastructureRef, m.Spec.Bootstrap.ConfigRef)
		}
	})

	t.Run("scale", func(t *testing.T) {
		kubectl(t, "scale", "machinedeployment", "md1", "-n", ns, "--replicas=3")
		md := &privclusterv1.MachineDeployment{}
		if err := directClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "md1"}, md); err != nil {
			t.Fatal(err)
		}
		if md.Spec.Replicas == nil || *md.Spec.Replicas != 3 {
			t.Errorf("replicas %v after kubectl scale", md.Spec.Replicas)
		}
	})

	t.Run("explain and auth can-i", func(t *testing.T) {
		out := kubectl(t, "explain", "machinedeployments.spec.template.spec.infrastructureRef")
		if !strings.Contains(out, "GROUP:      cluster.x-k8s.io") || !strings.Contains(out, "apiGroup") {
			t.Errorf("kubectl explain:\n%s", out)
		}
		if out := strings.TrimSpace(kubectl(t, "auth", "can-i", "delete", "machines.cluster.x-k8s.io", "-n", ns)); out != "yes" {
			t.Errorf("kubectl auth can-i: %q", out)
		}
	})

	t.Run("delete", func(t *testing.T) {
		out := kubectl(t, "delete", "machine", "m1", "-n", ns, "--wait=true")
		if !strings.Contains(out, `machine.cluster.x-k8s.io "m1" deleted`) {
			t.Errorf("kubectl delete: %s", out)
		}
		out = kubectl(t, "delete", "-f", filepath.Join(dir, "v2.yaml"), "--ignore-not-found")
		noPrivate("kubectl delete -f", out)
		err := directClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "m1"}, &privclusterv1.Machine{})
		if client.IgnoreNotFound(err) != nil || err == nil {
			t.Errorf("the Machine is still stored: %v", err)
		}
	})
}
