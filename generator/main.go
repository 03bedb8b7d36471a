// Command generator mirrors the upstream Cluster API packages listed in apis/upstream into private API
// groups. Run it from the repository root (make generate). It writes:
//
//   - apis/private/<dir>/zz_generated.{doc,types,register}.go: the private Go types, field for field,
//     with +groupName set to the private group and clash-free shortNames and categories;
//   - apis/private/<dir>/zz_generated.deepcopy.go and apis/private/crds/*.yaml: by controller-gen (the
//     version CAPI pins, built from hack/tools), so the CRDs equal upstream's but for group and names;
//     then each CRD whose kind converts by hub and spoke gets the conversion webhook stanza upstream's
//     kustomize adds (strategy Webhook, ConversionReview v1, a placeholder service that installation
//     replaces; see emit.ConversionStanzas);
//   - zz_generated/convert/<dir>/zz_generated.convert.go: <Type>ToPrivate and <Type>ToUpstream for every
//     type that can carry a group;
//   - zz_generated/routes/zz_generated.routes.go: the route table the proxy reads;
//   - apis/private/rbac/<name>.yaml: for every upstream ClusterRole in apis/upstream.Roles, a ClusterRole
//     granting on the private groups what it grants on the upstream ones, with its aggregation labels;
//   - apis/private/zz_generated.embed.go, apis/private/kustomization.yaml and config/: the install
//     assets (kustomize bases and the shared and sidecar overlays), rendered by package install; see
//     emit.Install.
//   - apis/private/webhooks/<name>.yaml: for every upstream webhook manifest in apis/upstream.Webhooks,
//     its webhook configurations on the private groups, pointed at the proxy (see emit.Webhooks).
//
// A field the generator cannot classify (a type that encodes itself, an interface, ...) fails the run with
// the field path that reaches it; see package generator/model.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/generator/emit"
	"github.com/openshift/hypershift-capi-proxy/generator/model"
)

// crdDir is where the private CRDs are written, relative to the root.
const crdDir = "apis/private/crds"

// projectModule is this module, whose apis/private and zz_generated trees the generator writes.
const projectModule = "github.com/openshift/hypershift-capi-proxy"

func main() {
	root := flag.String("root", ".", "repository root to write into")
	controllerGen := flag.String("controller-gen", "bin/controller-gen", "controller-gen binary (built from hack/tools)")
	flag.Parse()
	if err := run(*root, *controllerGen); err != nil {
		fmt.Fprintln(os.Stderr, "generator:", err)
		os.Exit(1)
	}
}

func run(root, controllerGen string) error {
	m, err := model.Load(projectModule, upstream.Packages)
	if err != nil {
		return err
	}
	for _, dir := range []string{"apis/private", "zz_generated"} {
		if err := os.RemoveAll(filepath.Join(root, dir)); err != nil {
			return err
		}
	}
	mods, err := sourceModules(root)
	if err != nil {
		return err
	}
	e := &emit.Emitter{M: m, Root: root, Modules: mods}
	for _, pkg := range m.Packages {
		if err := e.PrivateTypes(pkg); err != nil {
			return err
		}
		if err := e.Converters(pkg); err != nil {
			return err
		}
	}
	if err := e.Routes(); err != nil {
		return err
	}
	if err := e.Roles(upstream.Roles, goModule(root)); err != nil {
		return err
	}
	if err := e.Webhooks(upstream.Webhooks, goModule(root)); err != nil {
		return err
	}
	// controller-gen: deepcopy for the private types, then the CRDs, then their conversion stanzas.
	cmd := exec.Command(controllerGen,
		"object:headerFile="+filepath.Join("templates", "boilerplate.go.txt"),
		"crd:crdVersions=v1", "output:crd:dir=./"+crdDir,
		"paths=./apis/private/...")
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("controller-gen: %w", err)
	}
	if err := e.ConversionStanzas(crdDir); err != nil {
		return err
	}
	// Last: the install assets list and embed the manifests written above (emit.Install).
	return e.Install(upstream.Roles, goModule(root))
}

// goModule returns a func resolving a module path to the version and directory (in the module cache)
// the build of root uses, with `go list -m`.
func goModule(root string) func(path string) (emit.Module, error) {
	return func(path string) (emit.Module, error) {
		cmd := exec.Command("go", "list", "-m", "-json", path)
		cmd.Dir, cmd.Stderr = root, os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return emit.Module{}, fmt.Errorf("go list -m %s: %w", path, err)
		}
		var m emit.Module
		if err := json.Unmarshal(out, &m); err != nil {
			return emit.Module{}, fmt.Errorf("go list -m %s: %w", path, err)
		}
		if m.Dir == "" {
			// Not downloaded yet.
			dl := exec.Command("go", "mod", "download", "-json", path)
			dl.Dir, dl.Stderr = root, os.Stderr
			if out, err = dl.Output(); err != nil {
				return emit.Module{}, fmt.Errorf("go mod download %s: %w", path, err)
			}
			if err := json.Unmarshal(out, &m); err != nil {
				return emit.Module{}, fmt.Errorf("go mod download %s: %w", path, err)
			}
			if m.Dir == "" {
				return emit.Module{}, fmt.Errorf("go mod download %s: no directory", path)
			}
		}
		return m, nil
	}
}

// sourceModules returns the upstream modules the code is generated from, as root/go.mod pins them,
// longest path first (so that a package is matched to its own module, not to a parent path).
func sourceModules(root string) ([]module.Version, error) {
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	mf, err := modfile.ParseLax("go.mod", data, nil)
	if err != nil {
		return nil, err
	}
	var out []module.Version
	for _, r := range mf.Require {
		for _, p := range upstream.Packages {
			if strings.HasPrefix(p.Path, r.Mod.Path+"/") {
				out = append(out, r.Mod)
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b module.Version) int { return len(b.Path) - len(a.Path) })
	return out, nil
}
