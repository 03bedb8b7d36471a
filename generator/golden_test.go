package main

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/generator/emit"
	"github.com/openshift/hypershift-capi-proxy/generator/model"
)

// update rewrites the golden files from the generator's current output: go test ./generator -update.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// fixtures is the import path of the fixture API packages (testdata/apis; see its README).
const fixtures = projectModule + "/generator/testdata/apis"

// fixtureTables list the fixtures' opaque and foreign types the way apis/upstream lists the real ones.
var fixtureTables = model.Tables{
	OpaqueTypes: map[string]string{
		"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.JSON": "fixture: free-form values",
	},
	ForeignTypes: map[string]string{
		fixtures + "/foreign/v1.Template": "fixture: another API's template, naming only its own kinds",
	},
	NotGroupFields: upstream.NotGroupFields,
}

// TestGolden runs the model and the Go emitters (private types, converters, route table; not
// controller-gen) over the fixture packages and compares every file written with
// testdata/golden/<case>, byte for byte, and no file more or less. The cases are the two places upstream
// keeps whole-object conversions: widget's Go types convert themselves (methods, CAPI v1.13), gizmo's
// are converted by functions of a package of their own (CAPI v1.14). Each lists a candidate conversion
// package that does not exist, which the generator must skip.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name        string
		pkgs        []upstream.Package
		conversions []string          // candidate conversion packages, relative to this module
		removed     map[string]string // Tables.RemovedReleases
	}{{
		name: "widget",
		pkgs: []upstream.Package{
			{Path: fixtures + "/widget/v1beta1", Dir: "widget/v1beta1", Contract: "v1beta1"},
			{Path: fixtures + "/widget/v1beta2", Dir: "widget/v1beta2", Contract: "v1beta2"},
		},
		conversions: []string{"generator/testdata/apis/widget/conversion"},
		removed:     map[string]string{fixtures + "/widget/v1beta1": "v2.0"},
	}, {
		name: "gizmo",
		pkgs: []upstream.Package{
			{Path: fixtures + "/gizmo/v1beta1", Dir: "gizmo/v1beta1", Contract: "v1beta1"},
			{Path: fixtures + "/gizmo/v1beta2", Dir: "gizmo/v1beta2", Contract: "v1beta2"},
		},
		conversions: []string{"generator/testdata/apis/gizmo/absent", "generator/testdata/apis/gizmo/conversion"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tables := fixtureTables
			tables.Conversions = []upstream.ConversionModule{{Module: projectModule, Packages: tc.conversions}}
			tables.RemovedReleases = tc.removed
			m, err := model.LoadWith(projectModule, tc.pkgs, tables)
			if err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			e := &emit.Emitter{M: m, Root: root}
			for _, pkg := range m.Packages {
				if err := e.PrivateTypes(pkg); err != nil {
					t.Fatal(err)
				}
				if err := e.Converters(pkg); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.Routes(); err != nil {
				t.Fatal(err)
			}
			compareTree(t, root, filepath.Join("testdata", "golden", tc.name))
		})
	}
}

// widgetModule is the fixture module (testdata/modules/widget) standing for every upstream module the
// manifest emitters read: its role and webhook manifests, and the CAPI version the sidecar example names.
func widgetModule(path string) (emit.Module, error) {
	dir, err := filepath.Abs(filepath.Join("testdata", "modules", "widget"))
	return emit.Module{Path: path, Version: "v0.0.0-fixture", Dir: dir}, err
}

// TestGoldenManifests runs the emitters of manifests over the widget fixture (model) and the fixture
// module (testdata/modules/widget), as generator.run does, and compares every file written with
// testdata/golden/manifests, byte for byte, and no file more or less:
//
//   - Roles: a ClusterRole granting on the upstream group and on a core group (not mirrored), named twice,
//     once with an aggregation label and once as a kubeadm role (which has no hosted-control-plane twin);
//   - Webhooks: a mutating webhook of a served kind, one of a kind no private CRD serves (dropped) and a
//     validating webhook;
//   - ConversionStanzas over the CRDs of testdata/crds/stanzas, standing for controller-gen's: Widget
//     (hub and spoke) gets the stanza, Gadget (one version) and Sprocket (versions differing in
//     descriptions only, no conversion) keep theirs as written;
//   - Install: the install assets built on all of these.
func TestGoldenManifests(t *testing.T) {
	m := widgetModel(t)
	root := t.TempDir()
	copyCRDs(t, filepath.Join("testdata", "crds", "stanzas"), filepath.Join(root, "apis", "private", "crds"))
	e := &emit.Emitter{M: m, Root: root}
	roles := []upstream.RoleSource{
		{Module: "example.com/widget", File: "config/rbac/role.yaml", Name: "widget-manager", AggregateTo: []string{"widget.example.com/aggregate-to-manager"}},
		{Module: "example.com/widget", File: "config/rbac/role.yaml", Name: "kubeadm-widget-manager"},
	}
	if err := e.Roles(roles, widgetModule); err != nil {
		t.Fatal(err)
	}
	if err := e.Webhooks([]upstream.WebhookSource{{Module: "example.com/widget", File: "config/webhook/manifests.yaml", Name: "widget"}}, widgetModule); err != nil {
		t.Fatal(err)
	}
	if err := e.ConversionStanzas(filepath.Join("apis", "private", "crds")); err != nil {
		t.Fatal(err)
	}
	if err := e.Install(roles, widgetModule); err != nil {
		t.Fatal(err)
	}
	compareTree(t, root, filepath.Join("testdata", "golden", "manifests"))
}

// TestGoldenUnconvertibleCRD checks the message of a run whose CRD has versions of different schemas
// but no conversion (testdata/crds/unconvertible): the apiserver could not convert them.
func TestGoldenUnconvertibleCRD(t *testing.T) {
	root := t.TempDir()
	copyCRDs(t, filepath.Join("testdata", "crds", "unconvertible"), filepath.Join(root, "crds"))
	e := &emit.Emitter{M: widgetModel(t), Root: root}
	err := e.ConversionStanzas("crds")
	if err == nil {
		t.Fatal("ConversionStanzas succeeded, want an error")
	}
	compareFile(t, filepath.Join("testdata", "golden", "unconvertible.txt"), []byte(err.Error()+"\n"))
}

// widgetModel loads the widget fixture as TestGolden's widget case does.
func widgetModel(t *testing.T) *model.Model {
	t.Helper()
	tables := fixtureTables
	tables.Conversions = []upstream.ConversionModule{{Module: projectModule, Packages: []string{"generator/testdata/apis/widget/conversion"}}}
	m, err := model.LoadWith(projectModule, []upstream.Package{
		{Path: fixtures + "/widget/v1beta1", Dir: "widget/v1beta1", Contract: "v1beta1"},
		{Path: fixtures + "/widget/v1beta2", Dir: "widget/v1beta2", Contract: "v1beta2"},
	}, tables)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// copyCRDs copies the YAML files of from into the directory to, as controller-gen would have written them.
func copyCRDs(t *testing.T, from, to string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(from, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s: %v", from, err)
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, filepath.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGoldenConversions checks the message of a run whose conversions are broken (testdata/apis/badconv):
// every kind whose conversion functions are partial or ambiguous is named with what is wrong, and so is
// a SetAPIVersionGetter of neither of upstream's shapes.
func TestGoldenConversions(t *testing.T) {
	var pkgs []upstream.Package
	for _, v := range []string{"v1alpha1", "v1beta1", "v1beta2"} {
		pkgs = append(pkgs, upstream.Package{Path: fixtures + "/badconv/" + v, Dir: "badconv/" + v})
	}
	tables := fixtureTables
	tables.Conversions = []upstream.ConversionModule{{Module: projectModule, Packages: []string{"generator/testdata/apis/badconv/conversion"}}}
	_, err := model.LoadWith(projectModule, pkgs, tables)
	if err == nil {
		t.Fatal("loading the badconv fixture succeeded, want an error")
	}
	compareFile(t, filepath.Join("testdata", "golden", "conversions.txt"), []byte(err.Error()+"\n"))
}

// TestGoldenUnclassifiable checks the message of a run that cannot classify a field: it names every
// field path and what to do about it.
func TestGoldenUnclassifiable(t *testing.T) {
	pkgs := []upstream.Package{{Path: fixtures + "/broken/v1beta1", Dir: "broken/v1beta1", Contract: "v1beta1"}}
	_, err := model.LoadWith(projectModule, pkgs, fixtureTables)
	if err == nil {
		t.Fatal("loading the broken fixture succeeded, want an error")
	}
	compareFile(t, filepath.Join("testdata", "golden", "unclassifiable.txt"), []byte(err.Error()+"\n"))
}

// TestRemovedReleaseNeedsDeprecation: a removed release for a package upstream does not deprecate, or for
// one the table does not mirror, fails generation with a message naming the package and the kind.
func TestRemovedReleaseNeedsDeprecation(t *testing.T) {
	pkgs := []upstream.Package{{Path: fixtures + "/widget/v1beta2", Dir: "widget/v1beta2", Contract: "v1beta2"}}
	tables := fixtureTables
	tables.RemovedReleases = map[string]string{fixtures + "/widget/v1beta2": "v2.0", fixtures + "/widget/v1beta1": "v2.0"}
	_, err := model.LoadWith(projectModule, pkgs, tables)
	if err == nil {
		t.Fatal("loading succeeded, want an error")
	}
	for _, want := range []string{
		"widget/v1beta1: a removed release (v2.0) for a package that is not mirrored",
		"widget/v1beta2: a removed release (v2.0), but upstream does not deprecate its kind Gadget",
		"widget/v1beta2: a removed release (v2.0), but upstream does not deprecate its kind Widget",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// compareTree compares every file below got with the same path plus ".golden" below want.
func compareTree(t *testing.T, got, want string) {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(got, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(got, path)
		if err != nil {
			return err
		}
		files[rel+".golden"], err = os.ReadFile(path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.RemoveAll(want); err != nil {
			t.Fatal(err)
		}
	}
	for rel, data := range files {
		compareFile(t, filepath.Join(want, rel), data)
	}
	err = filepath.WalkDir(want, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(want, path)
		if err != nil {
			return err
		}
		if _, ok := files[rel]; !ok {
			t.Errorf("%s: golden file of no generated file (run go test ./generator -update)", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// compareFile compares got with the golden file path, or writes it with -update.
func compareFile(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%s: %v (run go test ./generator -update)", path, err)
		return
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the generator's output (-golden +got; run go test ./generator -update if intended):\n%s",
			path, cmp.Diff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n")))
	}
}
