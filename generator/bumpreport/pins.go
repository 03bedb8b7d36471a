package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
)

// requirements returns every module the go.mod file requires, with its version.
func requirements(gomod string) (map[string]string, error) {
	mf, err := parseModFile(gomod)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, r := range mf.Require {
		out[r.Mod.Path] = r.Mod.Version
	}
	return out, nil
}

func parseModFile(gomod string) (*modfile.File, error) {
	data, err := os.ReadFile(gomod)
	if err != nil {
		return nil, err
	}
	return modfile.Parse(gomod, data, nil)
}

// pinChanges compares two go.mod files: the direct requirements added, removed or at another version
// ("sigs.k8s.io/cluster-api v1.13.6 -> v1.14.2", "+ sigs.k8s.io/cluster-api/api v1.14.2"), then the
// replace directives added or removed ("+ replace sigs.k8s.io/cluster-api/errors => ./hack/compat/..."),
// each sorted, and how many indirect requirements changed.
func pinChanges(before, after *modfile.File) []string {
	direct := func(f *modfile.File) (map[string]string, map[string]string) {
		d, ind := map[string]string{}, map[string]string{}
		for _, r := range f.Require {
			if r.Indirect {
				ind[r.Mod.Path] = r.Mod.Version
			} else {
				d[r.Mod.Path] = r.Mod.Version
			}
		}
		return d, ind
	}
	bd, bi := direct(before)
	ad, ai := direct(after)
	var out []string
	for _, p := range sortedKeys(bd, ad) {
		b, inB := bd[p]
		a, inA := ad[p]
		switch {
		case !inB && bi[p] == a && inA:
			out = append(out, fmt.Sprintf("%s %s (was indirect)", p, a))
		case !inB && bi[p] != "" && inA:
			out = append(out, fmt.Sprintf("%s %s -> %s (was indirect)", p, bi[p], a))
		case !inA && ai[p] == b:
			out = append(out, fmt.Sprintf("%s %s (now indirect)", p, b))
		case !inB:
			out = append(out, fmt.Sprintf("+ %s %s", p, a))
		case !inA && ai[p] != "":
			out = append(out, fmt.Sprintf("%s %s -> %s (now indirect)", p, b, ai[p]))
		case !inA:
			out = append(out, fmt.Sprintf("- %s %s", p, b))
		case a != b:
			out = append(out, fmt.Sprintf("%s %s -> %s", p, b, a))
		}
	}
	replaces := func(f *modfile.File) map[string]string {
		m := map[string]string{}
		for _, r := range f.Replace {
			from := r.Old.Path
			if r.Old.Version != "" {
				from += " " + r.Old.Version
			}
			to := r.New.Path
			if r.New.Version != "" {
				to += " " + r.New.Version
			}
			m[from] = to
		}
		return m
	}
	br, ar := replaces(before), replaces(after)
	for _, p := range sortedKeys(br, ar) {
		switch b, a := br[p], ar[p]; {
		case b == a:
		case b == "":
			out = append(out, fmt.Sprintf("+ replace %s => %s", p, a))
		case a == "":
			out = append(out, fmt.Sprintf("- replace %s => %s", p, b))
		default:
			out = append(out, fmt.Sprintf("replace %s => %s -> %s", p, b, a))
		}
	}
	var indirect int
	for _, p := range sortedKeys(bi, ai) {
		if bi[p] != ai[p] && bd[p] == "" && ad[p] == "" {
			indirect++
		}
	}
	if indirect > 0 {
		out = append(out, fmt.Sprintf("(and %d indirect requirements)", indirect))
	}
	return out
}

// Importer is a mirrored upstream package whose Go files import a given path.
type Importer struct {
	Package, Module, Version string
}

// importers returns the packages of pkgs, in their order, that a module of mods (module path ->
// version) holds and whose Go files (tests aside) import path; dir returns a module's directory at a
// version. Packages of no module in mods (this repository's own) are not looked at.
func importers(path string, pkgs []upstream.Package, mods map[string]string, dir func(module, version string) (string, error)) ([]Importer, error) {
	var out []Importer
	for _, p := range pkgs {
		m := moduleOf(p.Path, mods)
		if m == "" {
			continue
		}
		root, err := dir(m, mods[m])
		if err != nil {
			return nil, err
		}
		files, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(p.Path, m+"/")), "*.go"))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			imports, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				return nil, err
			}
			if slices.ContainsFunc(imports.Imports, func(s *ast.ImportSpec) bool {
				v, _ := strconv.Unquote(s.Path.Value)
				return v == path
			}) {
				out = append(out, Importer{Package: p.Path, Module: m, Version: mods[m]})
				break
			}
		}
	}
	return out, nil
}

// moduleDir downloads module@version (go mod download -json, outside any module) and returns its
// directory in the module cache.
func moduleDir(module, version string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	out, _ := cmd.Output()
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", module, version, err)
	}
	if info.Error != "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", module, version, downloadError(module, version, info.Error))
	}
	return info.Dir, nil
}

// crdGenerators returns, for each module of mods (module path -> version), the controller-gen versions
// its published CRDs were generated with (their controller-gen.kubebuilder.io/version annotation), with
// how many CRDs each, as "v0.20.0 (13)": of the module's upstream.PublishedCRDFiles, as tests/conformance
// reads them. Modules without such CRDs are left out.
func crdGenerators(mods map[string]string, dir func(module, version string) (string, error)) (map[string][]string, error) {
	out := map[string][]string{}
	for _, m := range sortedKeys(mods) {
		root, err := dir(m, mods[m])
		if err != nil {
			return nil, err
		}
		counts := map[string]int{}
		files, err := upstream.PublishedCRDFiles(root)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			for _, m := range generatorVersion.FindAllSubmatch(data, -1) {
				counts[string(m[1])]++
			}
		}
		for _, v := range sortedKeys(counts) {
			out[m] = append(out[m], fmt.Sprintf("%s (%d)", v, counts[v]))
		}
	}
	return out, nil
}

var generatorVersion = regexp.MustCompile(`controller-gen\.kubebuilder\.io/version: *"?([^"\s]+)`)
