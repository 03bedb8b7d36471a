package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/modfile"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
)

func TestNextVersions(t *testing.T) {
	for v, want := range map[string][]string{
		"v1.13.6":                            {"v1.13.7", "v1.14.0"},
		"v2.13.0":                            {"v2.13.1", "v2.14.0"},
		"v0.11.2":                            {"v0.11.3", "v0.12.0"},
		"v1.14.0-rc.1":                       {"v1.14.0", "v1.15.0"},
		"v0.0.0-00010101000000-000000000000": nil,
		"v2.0.0-20260408192533-25e2208e0dc3": nil,
		"v1.2":                               nil,
		"latest":                             nil,
	} {
		if got := nextVersions(v); !slices.Equal(got, want) {
			t.Errorf("nextVersions(%s) = %q, want %q", v, got, want)
		}
	}
}

// TestProbeWalksServedVersions: after a served version the probe asks for its own next patch and minor;
// a refused one ends its line; the line says every answer and the newest version served.
func TestProbeWalksServedVersions(t *testing.T) {
	served := map[string]bool{"v1.27.0": true, "v1.27.1": true}
	var asked []string
	ask := func(module, v string) Answer {
		asked = append(asked, v)
		if served[v] {
			return Answer{Version: v, Served: true}
		}
		return Answer{Version: v, Why: "403 Forbidden: This module version is not available."}
	}
	p := probe("example.com/azure", "v1.26.0", ask)
	if want := []string{"v1.26.1", "v1.27.0", "v1.27.1", "v1.28.0", "v1.27.2"}; !slices.Equal(asked, want) {
		t.Errorf("asked for %q, want %q", asked, want)
	}
	want := "example.com/azure v1.26.0: v1.26.1 not served (403 Forbidden: This module version is not available.);" +
		" v1.27.0 served; v1.27.1 served; v1.28.0 not served (403 Forbidden: This module version is not available.);" +
		" v1.27.2 not served (403 Forbidden: This module version is not available.). NEWER THAN THE PIN: v1.27.1"
	if d := cmp.Diff(want, p.Line()); d != "" {
		t.Errorf("line (-want +got):\n%s", d)
	}

	none := probe("example.com/azure", "v1.27.1", func(_, v string) Answer { return Answer{Version: v, Why: "gone"} })
	if got := none.Line(); got != "example.com/azure v1.27.1: v1.27.2 not served (gone); v1.28.0 not served (gone)" {
		t.Errorf("line without a newer version: %q", got)
	}

	// Every version served: the probe stops after maxProbes.
	all := probe("example.com/a", "v1.0.0", func(_, v string) Answer { return Answer{Version: v, Served: true} })
	if len(all.Answers) != maxProbes {
		t.Errorf("%d answers, want %d", len(all.Answers), maxProbes)
	}
}

// TestDownloadErrorNamesNoAddress: what go mod download says when the module proxy refuses a version
// (the URL it read, the status, the server's words) comes back without the URL.
func TestDownloadErrorNamesNoAddress(t *testing.T) {
	const mod, version, moduleProxy = "sigs.k8s.io/cluster-api-provider-aws/v2", "v2.14.0", "https://proxy.example.com"
	msg := fmt.Sprintf("%s@%s: reading %s/%s/@v/%s.info: 403 Forbidden\n\tserver response: This module version is not available.",
		mod, version, moduleProxy, mod, version)
	if got := downloadError(mod, version, msg); got != "403 Forbidden: This module version is not available." {
		t.Errorf("downloadError: %q", got)
	}
}

func TestProbedModules(t *testing.T) {
	mods := map[string]string{"sigs.k8s.io/cluster-api": "v1.14.2", "sigs.k8s.io/cluster-api/api": "v1.14.2",
		"example.com/provider": "v1.0.0", "k8s.io/api": "v0.36.3"}
	pkgs := []upstream.Package{{Path: "sigs.k8s.io/cluster-api/api/core/v1beta2"}, {Path: "example.com/provider/api/v1"},
		{Path: "github.com/openshift/hypershift-capi-proxy/apis/upstream/agent/v1beta1"}}
	conv := []upstream.ConversionModule{{Module: "sigs.k8s.io/cluster-api"}, {Module: "example.com/absent"}}
	got := probedModules(mods, pkgs, conv)
	want := map[string]string{"sigs.k8s.io/cluster-api": "v1.14.2", "sigs.k8s.io/cluster-api/api": "v1.14.2", "example.com/provider": "v1.0.0"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("probed modules (-want +got):\n%s", d)
	}
}

func TestPinChanges(t *testing.T) {
	parse := func(s string) *modfile.File {
		f, err := modfile.Parse("go.mod", []byte(s), nil)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	before := parse(`module m
require (
	sigs.k8s.io/cluster-api v1.13.6
	sigs.k8s.io/controller-runtime v0.23.3
	example.com/gone v1.0.0
	k8s.io/cluster-bootstrap v0.35.4 // indirect
	golang.org/x/text v0.30.0 // indirect
	golang.org/x/sys v0.40.0 // indirect
)
`)
	after := parse(`module m
require (
	sigs.k8s.io/cluster-api v1.14.2
	sigs.k8s.io/controller-runtime v0.24.1
	sigs.k8s.io/cluster-api/errors v0.0.0-00010101000000-000000000000
	k8s.io/cluster-bootstrap v0.36.3 // indirect
	golang.org/x/text v0.31.0 // indirect
	golang.org/x/sys v0.40.0
	sigs.k8s.io/cluster-api/api v1.14.2 // indirect
)
replace sigs.k8s.io/cluster-api/errors => ./hack/compat/cluster-api-errors
`)
	want := []string{
		"- example.com/gone v1.0.0",
		"golang.org/x/sys v0.40.0 (was indirect)",
		"sigs.k8s.io/cluster-api v1.13.6 -> v1.14.2",
		"+ sigs.k8s.io/cluster-api/errors v0.0.0-00010101000000-000000000000",
		"sigs.k8s.io/controller-runtime v0.23.3 -> v0.24.1",
		"+ replace sigs.k8s.io/cluster-api/errors => ./hack/compat/cluster-api-errors",
		"(and 3 indirect requirements)",
	}
	if d := cmp.Diff(want, pinChanges(before, after)); d != "" {
		t.Errorf("pin changes (-want +got):\n%s", d)
	}
	if got := pinChanges(after, after); len(got) != 0 {
		t.Errorf("no change reported as %q", got)
	}
}

// TestImporters finds the mirrored packages whose Go files import a path, tests aside.
func TestImporters(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("api/v1/types.go", "package v1\n\nimport capierrors \"sigs.k8s.io/cluster-api/errors\"\n\nvar _ capierrors.MachineStatusError\n")
	write("api/v2/types.go", "package v2\n\nimport \"fmt\"\n\nvar _ = fmt.Sprint\n")
	write("api/v2/types_test.go", "package v2\n\nimport _ \"sigs.k8s.io/cluster-api/errors\"\n")
	pkgs := []upstream.Package{{Path: "example.com/p/api/v1"}, {Path: "example.com/p/api/v2"}, {Path: "example.com/own/api/v1"}}
	mods := map[string]string{"example.com/p": "v1.0.0"}
	got, err := importers("sigs.k8s.io/cluster-api/errors", pkgs, mods, func(m, v string) (string, error) {
		if m != "example.com/p" || v != "v1.0.0" {
			t.Errorf("asked for the directory of %s@%s", m, v)
		}
		return dir, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []Importer{{Package: "example.com/p/api/v1", Module: "example.com/p", Version: "v1.0.0"}}; !slices.Equal(got, want) {
		t.Errorf("importers: %v, want %v", got, want)
	}
}

// TestCRDGenerators reads the controller-gen version of every published CRD of a module, tests aside.
func TestCRDGenerators(t *testing.T) {
	dir := t.TempDir()
	write := func(name, version string) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		doc := "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  annotations:\n    controller-gen.kubebuilder.io/version: " + version + "\n"
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("config/crd/bases/a.yaml", "v0.20.0")
	write("config/crd/bases/b.yaml", "v0.20.0")
	write("exp/config/crd/bases/c.yaml", "v0.21.0")
	write("test/infrastructure/config/crd/bases/d.yaml", "v0.16.0")
	write("config/crd/patches/e.yaml", "v0.16.0")
	got, err := crdGenerators(map[string]string{"example.com/p": "v1.0.0"}, func(string, string) (string, error) { return dir, nil })
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"v0.20.0 (2)", "v0.21.0 (1)"}; !slices.Equal(got["example.com/p"], want) {
		t.Errorf("crdGenerators: %q, want %q", got["example.com/p"], want)
	}
}

// TestCommittedReportsNameNoMachinePath: the bump reports kept in hack/bump-reports name no machine path
// and no registry host (hack/bump.sh scrubs them: module-relative paths, "the module proxy").
func TestCommittedReportsNameNoMachinePath(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "hack", "bump-reports", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no report in hack/bump-reports: %v", err)
	}
	bad := regexp.MustCompile(`(^|[^\w.])/(root|home|tmp|var|work|usr)/|://|proxy\.golang\.org|sum\.golang\.org`)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if bad.MatchString(line) {
				t.Errorf("%s:%d names a machine path or a registry: %s", filepath.Base(f), i+1, line)
			}
		}
	}
}
