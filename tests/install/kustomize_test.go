package install

import (
	"context"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/openshift/hypershift-capi-proxy/generator/emit"
	"github.com/openshift/hypershift-capi-proxy/install"
	"github.com/openshift/hypershift-capi-proxy/tests/framework"
)

// kustomizations are every kustomize base and overlay make generate writes.
var kustomizations = []string{
	"apis/private", "apis/private/webhooks",
	"config/private", "config/admission", "config/proxy-rbac", "config/serving", "config/network-policy", "config/hosted-control-plane", "config/monitoring",
	"config/shared", "config/sidecar",
}

// TestKustomizeDryRun builds every kustomization as kubectl apply -k does (kustomize's default options:
// files only below each kustomization) and applies each object it yields server-side with dryRun=All:
// the apiserver validates, defaults and admits it without storing it. The namespaces the overlays name
// exist; the ServiceMonitor and PrometheusRule kinds come from stand-in CRDs (testdata).
func TestKustomizeDryRun(t *testing.T) {
	ctx := t.Context()
	c, err := client.New(env.DirectConfig(env.AdminToken), client.Options{Scheme: framework.PrivateScheme})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{emit.SharedNamespace, emit.SidecarNamespace} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	monitoring, err := filepath.Glob("testdata/monitoring-crds/*.yaml")
	if err != nil || len(monitoring) == 0 {
		t.Fatalf("no monitoring CRDs in testdata: %v", err)
	}
	if err := env.InstallCRDs(ctx, c, monitoring...); err != nil {
		t.Fatal(err)
	}

	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	for _, dir := range kustomizations {
		t.Run(dir, func(t *testing.T) {
			resources, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(env.Root, dir))
			if err != nil {
				t.Fatalf("kustomize build %s: %v", dir, err)
			}
			if resources.Size() == 0 {
				t.Fatalf("kustomize build %s: no objects", dir)
			}
			var objs []*unstructured.Unstructured
			for _, r := range resources.Resources() {
				// Through JSON: r.Map holds ints, which unstructured's helpers cannot copy.
				data, err := r.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				obj := &unstructured.Unstructured{}
				if err := obj.UnmarshalJSON(data); err != nil {
					t.Fatal(err)
				}
				objs = append(objs, obj)
			}
			checkWebhookService(t, objs)
			for _, obj := range objs {
				if err := dryRunApply(ctx, c, obj); err != nil {
					t.Errorf("%s %s/%s: %v", obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName(), err)
				}
			}
			t.Logf("%s: %d objects accepted", dir, resources.Size())
		})
	}
}

// dryRunApply applies obj server-side with dryRun=All, in namespace "default" when it is namespaced and
// names none (a base meant for an overlay's namespace).
func dryRunApply(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	namespaced, err := c.IsObjectNamespaced(obj)
	if err != nil {
		return err
	}
	if namespaced && obj.GetNamespace() == "" {
		obj.SetNamespace(metav1.NamespaceDefault)
	}
	//nolint:staticcheck // client.Apply with an unstructured object is controller-runtime's server-side apply
	return c.Patch(ctx, obj, client.Apply, client.DryRunAll, client.ForceOwnership, client.FieldOwner("install-test"))
}

// checkWebhookService: in a build holding the proxy's Service, every CRD converting by webhook calls it,
// in its namespace, on a port the Service exposes.
func checkWebhookService(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	var svc *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Service" && o.GetName() == install.Name {
			svc = o
		}
	}
	if svc == nil {
		return
	}
	ports := map[int64]bool{}
	list, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	for _, p := range list {
		port, _, _ := unstructured.NestedInt64(p.(map[string]any), "port")
		ports[port] = true
	}
	webhooks := 0
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		ref, found, _ := unstructured.NestedMap(o.Object, "spec", "conversion", "webhook", "clientConfig", "service")
		if !found {
			continue
		}
		webhooks++
		port := int64(443)
		if p, ok := ref["port"].(int64); ok {
			port = p
		}
		if ref["namespace"] != svc.GetNamespace() || ref["name"] != svc.GetName() || !ports[port] || ref["path"] != install.WebhookPath {
			t.Errorf("CRD %s: conversion webhook %v, want the Service %s/%s (ports %v), path %s", o.GetName(), ref, svc.GetNamespace(), svc.GetName(), ports, install.WebhookPath)
		}
	}
	if webhooks == 0 {
		t.Error("no CRD converts by webhook")
	}
}
