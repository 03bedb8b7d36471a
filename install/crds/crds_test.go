package crds

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The generated CRDs: one that converts by webhook (Machine), one of several versions with one schema
// (AgentMachine, strategy None) and one of a single version.
var generated = []string{
	"../../apis/private/crds/cluster.hypershift.openshift.io_machines.yaml",
	"../../apis/private/crds/capi-provider.agent-install.hypershift.openshift.io_agentmachines.yaml",
	"../../apis/private/crds/openstack.k-orc.hypershift.openshift.io_images.yaml",
}

func TestSetWebhook(t *testing.T) {
	list, err := Read(generated...)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 {
		t.Fatalf("read %d CRDs", len(list))
	}
	w := Webhook{URL: "https://127.0.0.1:8443/convert", CABundle: []byte("PEM")}
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	var set []string
	for _, crd := range list {
		if SetWebhook(crd, w) {
			set = append(set, crd.Name)
		}
	}
	if strings.Join(set, ",") != "machines.cluster.hypershift.openshift.io" {
		t.Fatalf("webhook set on %v", set)
	}
	cc := list[0].Spec.Conversion.Webhook.ClientConfig
	if cc.URL == nil || *cc.URL != w.URL || cc.Service != nil || string(cc.CABundle) != "PEM" {
		t.Errorf("client config %+v", cc)
	}
	if list[1].Spec.Conversion != nil && list[1].Spec.Conversion.Strategy != apiextensionsv1.NoneConverter {
		t.Errorf("AgentMachine got %+v", list[1].Spec.Conversion)
	}

	// What Write prints reads back the same.
	var buf bytes.Buffer
	if err := Write(&buf, list); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "\nstatus:") || strings.Contains(buf.String(), "\n  creationTimestamp:") {
		t.Errorf("the manifest carries what the apiserver sets:\n%.300s", buf.String())
	}
	file := filepath.Join(t.TempDir(), "out.yaml")
	if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := Read(filepath.Dir(file))
	if err != nil || len(again) != 3 || *again[0].Spec.Conversion.Webhook.ClientConfig.URL != w.URL {
		t.Fatalf("reading the written CRDs back: %v, %d", err, len(again))
	}
}

func TestValidateAndRead(t *testing.T) {
	for _, w := range []Webhook{
		{},
		{URL: "http://127.0.0.1/convert"},
		{URL: "https://a/convert", Service: &apiextensionsv1.ServiceReference{Namespace: "n", Name: "s"}},
	} {
		if w.Validate() == nil {
			t.Errorf("%+v validated", w)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pod.yaml"), []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); err == nil {
		t.Error("read a Pod as a CRD")
	}
	if _, err := Read(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("read a missing file")
	}
}

func TestYAMLFilesSkipsKustomization(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"b.yaml", "a.yaml", "kustomization.yaml", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	files, err := YAMLFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")}; !slices.Equal(files, want) {
		t.Errorf("YAMLFiles(%s) = %v, want %v", dir, files, want)
	}
}
