package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/generator/model"
)

var update = flag.Bool("update", false, "rewrite the golden reports under testdata")

// TestReportOfCurrentPinsIsEmpty takes two snapshots of the current pins, each from its own load of the
// upstream packages: a bump to the same versions must report nothing, or every real report would carry
// noise.
func TestReportOfCurrentPinsIsEmpty(t *testing.T) {
	if testing.Short() {
		t.Skip("loads every upstream package twice")
	}
	root := filepath.Join("..", "..")
	before, err := snapshotPins(root)
	if err != nil {
		t.Fatal(err)
	}
	if before.Error != "" {
		t.Fatalf("the model does not build at the current pins: %s", before.Error)
	}
	if len(before.Kinds) == 0 || len(before.Modules) == 0 {
		t.Fatalf("snapshot of the current pins has %d kinds and %d modules", len(before.Kinds), len(before.Modules))
	}
	after, err := snapshotPins(root)
	if err != nil {
		t.Fatal(err)
	}
	r := diff(before, after)
	if !r.Empty() {
		var b bytes.Buffer
		_ = r.Write(&b)
		t.Errorf("report of the current pins against themselves is not empty:\n%s", b.String())
	}
}

const (
	generatorFixtures = projectModule + "/generator/testdata/apis"
	reportFixtures    = projectModule + "/generator/bumpreport/testdata/apis"
)

var fixtureTables = model.Tables{
	OpaqueTypes: map[string]string{
		"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.JSON": "fixture",
		"k8s.io/apimachinery/pkg/runtime.RawExtension":                  "fixture",
	},
	ForeignTypes: map[string]string{generatorFixtures + "/foreign/v1.Template": "fixture"},
}

// TestReportGolden reports a bump of the generator's fixture API (generator/testdata/apis/widget, two
// versions) to its next release (testdata/apis/next: v1beta1 gone, fields, kinds and conversions
// changed), and a bump to a release the generator cannot classify.
func TestReportGolden(t *testing.T) {
	snap := func(mods map[string]string, pkgs ...upstream.Package) *Snapshot {
		m, err := model.LoadWith(projectModule, pkgs, fixtureTables)
		return takeSnapshot(m, err, mods)
	}
	before := snap(map[string]string{"example.com/widget": "v1.0.0"},
		upstream.Package{Path: generatorFixtures + "/widget/v1beta1", Dir: "widget/v1beta1", Contract: "v1beta1"},
		upstream.Package{Path: generatorFixtures + "/widget/v1beta2", Dir: "widget/v1beta2", Contract: "v1beta2"})
	next := snap(map[string]string{"example.com/widget": "v1.1.0", "example.com/widget/api": "v1.1.0"},
		upstream.Package{Path: reportFixtures + "/next/v1beta2", Dir: "widget/v1beta2", Contract: "v1beta2"})
	broken := snap(map[string]string{"example.com/widget": "v2.0.0"},
		upstream.Package{Path: generatorFixtures + "/broken/v1beta1", Dir: "broken/v1beta1"})

	for name, r := range map[string]*Report{"next": diff(before, next), "broken": diff(before, broken), "same": diff(next, next)} {
		var got bytes.Buffer
		if err := r.Write(&got); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", name+".golden")
		if *update {
			if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./generator/bumpreport -update)", err)
		}
		if d := cmp.Diff(string(want), got.String()); d != "" {
			t.Errorf("%s differs (-golden +got; go test ./generator/bumpreport -update if intended):\n%s", path, d)
		}
	}
}

// TestReportBrokenModule: the kinds of a module that does not build at the new pins are not reported as
// removed; the module is reported with go's message and what the module proxy offers.
func TestReportBrokenModule(t *testing.T) {
	kind := func(pkg, kind string) *KindVersion {
		return &KindVersion{Package: pkg, Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Kind: kind, Conversion: "NoConversion"}
	}
	before := &Snapshot{
		Modules: map[string]string{"example.com/a": "v1.0.0", "example.com/b": "v1.0.0"},
		Kinds: map[string]*KindVersion{
			"infrastructure.cluster.x-k8s.io/v1beta1 A": kind("example.com/a/api/v1beta1", "A"),
			"infrastructure.cluster.x-k8s.io/v1beta1 B": kind("example.com/b/api/v1beta1", "B"),
		},
	}
	after := &Snapshot{
		Modules: map[string]string{"example.com/a": "v1.1.0", "example.com/b": "v1.0.0"},
		Kinds:   map[string]*KindVersion{},
		BrokenModules: map[string]BrokenModule{"example.com/b": {
			Version: "v1.0.0", Build: "api/v1beta1/types.go:3:2: no required module provides package example.com/a/errors",
			Versions: "example.com/b v1.0.0",
		}},
	}
	var got bytes.Buffer
	if err := diff(before, after).Write(&got); err != nil {
		t.Fatal(err)
	}
	want := `## Upstream modules
  example.com/a v1.0.0 -> v1.1.0

## Modules that do not build at the new pins (not compared below: the project keeps its last good set until a release builds)
  example.com/b v1.0.0: its API packages do not build:
      api/v1beta1/types.go:3:2: no required module provides package example.com/a/errors
    the module proxy lists: example.com/b v1.0.0

## Kinds and versions removed
  infrastructure.cluster.x-k8s.io/v1beta1 A (NoConversion, resource )

`
	if d := cmp.Diff(want, got.String()); d != "" {
		t.Errorf("report (-want +got):\n%s", d)
	}
}

// TestReportConversionsMoved: a spoke whose conversions move from its Go type's methods to a conversion
// package's functions (CAPI v1.13 -> v1.14) is reported as moved, not as a changed conversion.
func TestReportConversionsMoved(t *testing.T) {
	spoke := func(by string) *Snapshot {
		return &Snapshot{Modules: map[string]string{"example.com/a": "v1.0.0"}, Kinds: map[string]*KindVersion{
			"cluster.x-k8s.io/v1beta1 Machine": {Package: "example.com/a/api/v1beta1", Group: "cluster.x-k8s.io",
				Version: "v1beta1", Kind: "Machine", Conversion: "Spoke", ConvertedBy: by},
		}}
	}
	var got bytes.Buffer
	if err := diff(spoke("methods of its Go type"),
		spoke("functions example.com/a/webhooks/conversion.ConvertMachineV1Beta1ToHub, ConvertMachineHubToV1Beta1")).Write(&got); err != nil {
		t.Fatal(err)
	}
	want := `## Conversions moved (where upstream keeps a spoke's conversions to and from the hub; the proxy follows)
  cluster.x-k8s.io/v1beta1 Machine: methods of its Go type -> functions example.com/a/webhooks/conversion.ConvertMachineV1Beta1ToHub, ConvertMachineHubToV1Beta1

`
	if d := cmp.Diff(want, got.String()); d != "" {
		t.Errorf("report (-want +got):\n%s", d)
	}
}
