package install_test

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/openshift/hypershift-capi-proxy/install"
	"github.com/openshift/hypershift-capi-proxy/proxy/options"
)

func TestShared(t *testing.T) {
	if _, err := install.SharedObjects(install.Shared{}); err == nil {
		t.Error("no error without a namespace")
	}
	d := install.SharedDeployment(install.Shared{Namespace: "hypershift"})
	if *d.Spec.Replicas < 2 {
		t.Errorf("replicas %d, want at least 2", *d.Spec.Replicas)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || !slices.Contains(c.Args, "--auth-mode=pass-through") {
		t.Errorf("container %s: readiness %s, args %q", c.Name, c.ReadinessProbe.HTTPGet.Path, c.Args)
	}
	if d.Spec.Template.Spec.Affinity.PodAntiAffinity == nil {
		t.Error("no pod anti-affinity")
	}
	if pdb := install.SharedPodDisruptionBudget(install.Shared{Namespace: "hypershift"}); pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PDB maxUnavailable %v", pdb.Spec.MaxUnavailable)
	}
}

// TestAcknowledgeRBAC: the proxy may keep its acknowledging Lease in its own namespace only (a Role,
// never a ClusterRole), bound to the shared topology's ServiceAccount; every proxy container gets the
// downward API's pod name, namespace and UID, from which it names and owns the Lease.
func TestAcknowledgeRBAC(t *testing.T) {
	objs, err := install.SharedObjects(install.Shared{Namespace: "hypershift"})
	if err != nil {
		t.Fatal(err)
	}
	var role *rbacv1.Role
	var binding *rbacv1.RoleBinding
	for _, o := range objs {
		switch o := o.(type) {
		case *rbacv1.Role:
			role = o
		case *rbacv1.RoleBinding:
			binding = o
		}
	}
	if role == nil || binding == nil || role.Namespace != "hypershift" || binding.Namespace != "hypershift" {
		t.Fatalf("the shared objects hold Role %v and RoleBinding %v, want both in hypershift", role, binding)
	}
	if len(role.Rules) != 1 || !slices.Equal(role.Rules[0].Resources, []string{"leases"}) || !slices.Equal(role.Rules[0].APIGroups, []string{"coordination.k8s.io"}) {
		t.Errorf("role rules %+v: want leases alone", role.Rules)
	}
	if binding.RoleRef.Kind != "Role" || binding.RoleRef.Name != role.Name || len(binding.Subjects) != 1 || binding.Subjects[0].Name != install.Name {
		t.Errorf("binding %+v: want the Role bound to the ServiceAccount %s", binding, install.Name)
	}
	for _, r := range install.ProxyClusterRole().Rules {
		if slices.Contains(r.Resources, "leases") {
			t.Errorf("the proxy's ClusterRole grants leases cluster-wide: %+v", r)
		}
	}
	for name, c := range map[string]corev1.Container{
		"shared":  install.SharedDeployment(install.Shared{Namespace: "hypershift"}).Spec.Template.Spec.Containers[0],
		"sidecar": install.SidecarContainer(install.Sidecar{}),
	} {
		fields := map[string]string{}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
				fields[e.Name] = e.ValueFrom.FieldRef.FieldPath
			}
		}
		want := map[string]string{"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace", "POD_UID": "metadata.uid"}
		if !maps.Equal(fields, want) {
			t.Errorf("%s container's downward API env %v, want %v", name, fields, want)
		}
	}
}

// TestWebhookNetworkPolicy: the policy selects the shared Deployment's pods, lets the host network (the
// apiserver) alone reach the webhook port, and every other port of the container anyone.
func TestWebhookNetworkPolicy(t *testing.T) {
	d := install.SharedDeployment(install.Shared{Namespace: "hypershift"})
	p := install.WebhookNetworkPolicy("hypershift")
	for k, v := range p.Spec.PodSelector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("the policy selects %s=%s, which the proxy's pods lack", k, v)
		}
	}
	open := map[int32]bool{}
	for _, rule := range p.Spec.Ingress {
		for _, port := range rule.Ports {
			n := port.Port.IntVal
			switch {
			case n == install.WebhookPort:
				if len(rule.From) != 1 || rule.From[0].NamespaceSelector.MatchLabels[install.HostNetworkPolicyGroup] != "" ||
					len(rule.From[0].NamespaceSelector.MatchLabels) != 1 {
					t.Errorf("the webhook port's peers: %+v", rule.From)
				}
			case len(rule.From) != 0:
				t.Errorf("port %d is restricted to %+v", n, rule.From)
			default:
				open[n] = true
			}
		}
	}
	for _, c := range d.Spec.Template.Spec.Containers[0].Ports {
		if c.ContainerPort != install.WebhookPort && !open[c.ContainerPort] {
			t.Errorf("the policy shuts the container's port %s (%d)", c.Name, c.ContainerPort)
		}
	}
}

func TestInjectSidecar(t *testing.T) {
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "manager"}}}
	if err := install.InjectSidecar(&spec, "other", install.Sidecar{}); err == nil {
		t.Error("no error for a container the pod lacks")
	}
	if err := install.InjectSidecar(&spec, "manager", install.Sidecar{}); err != nil {
		t.Fatal(err)
	}
	if err := install.InjectSidecar(&spec, "manager", install.Sidecar{}); err == nil {
		t.Error("no error injecting twice")
	}
	if len(spec.Containers) != 2 || spec.Containers[1].Name != install.Name {
		t.Fatalf("containers %v", spec.Containers)
	}
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
	}
	for _, c := range spec.Containers {
		for _, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				t.Errorf("container %s mounts %s, which the pod lacks", c.Name, m.Name)
			}
		}
	}
	if env := spec.Containers[0].Env; len(env) != 1 || env[0].Name != "KUBECONFIG" || !strings.HasPrefix(env[0].Value, install.KubeconfigDir) {
		t.Errorf("manager env %v", env)
	}
	if !slices.Contains(spec.Containers[1].Args, "--listen=127.0.0.1:6443") {
		t.Errorf("sidecar args %q: the API not on loopback", spec.Containers[1].Args)
	}
}

func TestCRDs(t *testing.T) {
	crds, err := install.CRDs("hypershift", "capi-proxy", []byte("ca"))
	if err != nil {
		t.Fatal(err)
	}
	webhooks := 0
	for _, crd := range crds {
		if c := crd.Spec.Conversion; c != nil && c.Webhook != nil {
			webhooks++
			s := c.Webhook.ClientConfig.Service
			if s == nil || s.Namespace != "hypershift" || s.Name != "capi-proxy" || *s.Path != install.WebhookPath || string(c.Webhook.ClientConfig.CABundle) != "ca" {
				t.Errorf("%s: conversion webhook %+v", crd.Name, c.Webhook.ClientConfig)
			}
		}
	}
	if len(crds) < 100 || webhooks == 0 {
		t.Errorf("%d CRDs, %d with a conversion webhook", len(crds), webhooks)
	}
}

// TestArgsAreTheProxysFlags: the arguments each topology renders are flags of the proxy command, with
// values it accepts (the files they name are mounted in the pod), and the metrics port is its default.
func TestArgsAreTheProxysFlags(t *testing.T) {
	for name, args := range map[string][]string{
		"shared":                 install.SharedArgs(),
		"sidecar":                install.SidecarArgs(install.Sidecar{}),
		"sidecar with a backend": install.SidecarArgs(install.Sidecar{BackendKubeconfigSecret: "backend"}),
	} {
		o := options.NewOptions()
		var fss cliflag.NamedFlagSets
		o.AddFlags(&fss)
		fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
		for _, section := range fss.Order {
			fs.AddFlagSet(fss.FlagSets[section])
		}
		if err := fs.Parse(args); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if err := errors.Join(append([]error{o.Complete()}, o.Validate()...)...); err != nil {
			t.Errorf("%s: %q: %v", name, args, err)
		}
	}
	if want := ":" + strconv.Itoa(install.MetricsPort); options.DefaultMetricsListen != want {
		t.Errorf("the proxy's --metrics-listen defaults to %s, install.MetricsPort is %s", options.DefaultMetricsListen, want)
	}
}
