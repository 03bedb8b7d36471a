package main

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"k8s.io/gengo/v2/types"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/generator/emit"
	"github.com/openshift/hypershift-capi-proxy/generator/model"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Snapshot is what a bump report compares: the generator's model of the upstream API packages at one set
// of pins, reduced to the facts a reviewer checks.
type Snapshot struct {
	// Modules maps each upstream module go.mod requires (one whose path is a prefix of a package in
	// upstream.Packages) to its version.
	Modules map[string]string `json:"modules"`
	// Kinds are the kinds at each version, keyed "group/version Kind".
	Kinds map[string]*KindVersion `json:"kinds,omitempty"`
	// PassedThrough maps the types the generator does not look into, reachable from a kind, to the table
	// that lists them ("OpaqueTypes" or "ForeignTypes").
	PassedThrough map[string]string `json:"passedThrough,omitempty"`
	// BrokenModules are the upstream modules whose API packages do not build at these pins, each with
	// go build's message and the versions the module proxy lists for it. The model is built without them.
	BrokenModules map[string]BrokenModule `json:"brokenModules,omitempty"`
	// MissingRoles are the upstream ClusterRole manifests of apis/upstream.Roles that are not in their
	// module at these pins, each with the manifests of the same name the module has instead.
	MissingRoles []string `json:"missingRoles,omitempty"`
	// Error is why the model could not be built at these pins, and Problems the types it could not
	// classify (when that is why).
	Error    string          `json:"error,omitempty"`
	Problems []model.Problem `json:"problems,omitempty"`
}

// BrokenModule is an upstream module whose API packages do not build.
type BrokenModule struct {
	Version string `json:"version"`
	// Build is go build's message (first lines).
	Build string `json:"build"`
	// Versions is what `go list -m -versions` says of the module: the versions the module proxy lists,
	// or why it lists none.
	Versions string `json:"versions"`
}

// KindVersion is one kind at one version.
type KindVersion struct {
	// Package is the upstream Go package of the version.
	Package  string `json:"package"`
	Group    string `json:"group"`
	Version  string `json:"version"`
	Kind     string `json:"kind"`
	Resource string `json:"resource"`
	Storage  bool   `json:"storage,omitempty"`
	Unserved bool   `json:"unserved,omitempty"`
	// Conversion is the translate.Conversion of the version ("NoConversion", "Hub", "Spoke").
	Conversion string `json:"conversion"`
	// ConvertedBy says, for a spoke, where upstream keeps its conversions to and from the hub: "methods
	// of its Go type" (ConvertTo, ConvertFrom) or "functions <package>.<ToHub>, <FromHub>"; "" for every
	// other version.
	ConvertedBy string `json:"convertedBy,omitempty"`
	// Fields are the JSON paths of the fields of the kind's Go type, each with its type
	// ("spec.infrastructureRef.apiGroup string"), sorted. Fields of shared types (metav1, corev1) and of
	// types passed through are not listed, only the field holding them.
	Fields []string `json:"fields"`
	// GroupPaths are the group-carrying paths with their classification ("spec.x.apiGroup=group"), as
	// the route table lists them.
	GroupPaths []string `json:"groupPaths"`
	// ContractLabels are the CAPI contract labels of the kind's private CRD.
	ContractLabels map[string]string `json:"contractLabels,omitempty"`
}

// snapshotPins loads the model of upstream.Packages at the pins of root/go.mod.
func snapshotPins(root string) (*Snapshot, error) {
	mods, err := upstreamModules(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	missing := missingRoles(root)
	pkgs := upstream.Packages
	m, err := model.Load(projectModule, pkgs)
	if err == nil {
		s := takeSnapshot(m, nil, mods)
		s.MissingRoles = missing
		return s, nil
	}
	// Find the modules whose packages do not build, and model the others.
	broken := brokenModules(root, mods, pkgs)
	if len(broken) == 0 {
		return takeSnapshot(nil, err, mods), nil
	}
	var keep []upstream.Package
	for _, p := range pkgs {
		if _, ok := broken[moduleOf(p.Path, mods)]; !ok {
			keep = append(keep, p)
		}
	}
	m, err = model.Load(projectModule, keep)
	s := takeSnapshot(m, err, mods)
	s.BrokenModules, s.MissingRoles = broken, missing
	return s, nil
}

// missingRoles checks that every manifest of upstream.Roles is in its module as root/go.mod resolves it
// (the generator mirrors them), and suggests the files of the same name the module has instead.
func missingRoles(root string) []string {
	var out []string
	for _, r := range upstream.Roles {
		list := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", r.Module)
		list.Dir = root
		dir, err := list.Output()
		if err != nil || strings.TrimSpace(string(dir)) == "" {
			out = append(out, fmt.Sprintf("%s: module %s is not resolved (go list -m: %v)", r.Name, r.Module, err))
			continue
		}
		modDir := strings.TrimSpace(string(dir))
		if _, err := os.Stat(filepath.Join(modDir, r.File)); err == nil {
			continue
		}
		var instead []string
		_ = filepath.WalkDir(modDir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, string(filepath.Separator)+filepath.Base(r.File)) &&
				strings.Contains(p, "config"+string(filepath.Separator)+"rbac") {
				rel, _ := filepath.Rel(modDir, p)
				instead = append(instead, rel)
			}
			return nil
		})
		out = append(out, fmt.Sprintf("%s: %s has no %s; it has: %s", r.Name, r.Module, r.File, strings.Join(instead, ", ")))
	}
	return out
}

// moduleOf returns the module of mods that holds pkg (the longest prefix), or "".
func moduleOf(pkg string, mods map[string]string) string {
	var best string
	for m := range mods {
		if strings.HasPrefix(pkg, m+"/") && len(m) > len(best) {
			best = m
		}
	}
	return best
}

// brokenModules builds the packages of each upstream module (go build, in root) and returns those that
// fail, with what the module proxy offers instead.
func brokenModules(root string, mods map[string]string, pkgs []upstream.Package) map[string]BrokenModule {
	byModule := map[string][]string{}
	for _, p := range pkgs {
		if m := moduleOf(p.Path, mods); m != "" {
			byModule[m] = append(byModule[m], p.Path)
		}
	}
	out := map[string]BrokenModule{}
	for _, mod := range slices.Sorted(maps.Keys(byModule)) {
		build := exec.Command("go", append([]string{"build"}, byModule[mod]...)...)
		build.Dir = root
		msg, err := build.CombinedOutput()
		if err == nil {
			continue
		}
		list := exec.Command("go", "list", "-m", "-versions", mod)
		list.Dir = root
		versions, _ := list.CombinedOutput()
		out[mod] = BrokenModule{Version: mods[mod], Build: firstLines(string(msg), 12), Versions: firstLines(string(versions), 2)}
	}
	return out
}

// firstLines returns the first n lines of s that are not go's download notices.
func firstLines(s string, n int) string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if strings.HasPrefix(l, "go: downloading ") {
			continue
		}
		if len(out) == n {
			out = append(out, "...")
			break
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// takeSnapshot reduces a model, or the error of loading it, to a Snapshot.
func takeSnapshot(m *model.Model, loadErr error, modules map[string]string) *Snapshot {
	s := &Snapshot{Modules: modules}
	if loadErr != nil {
		s.Error = loadErr.Error()
		var unclassified *model.UnclassifiedError
		if errors.As(loadErr, &unclassified) {
			s.Problems = unclassified.Problems
		}
		return s
	}
	s.Kinds = map[string]*KindVersion{}
	s.PassedThrough = map[string]string{}
	e := &emit.Emitter{M: m}
	for _, pkg := range m.Packages {
		for _, k := range pkg.Kinds {
			kv := &KindVersion{
				Package: pkg.Path, Group: pkg.Group, Version: pkg.Version, Kind: k.Name, Resource: k.Resource,
				Storage: k.Storage, Unserved: k.Unserved, Conversion: k.Conversion.String(), ConvertedBy: convertedBy(k),
				Fields:         fields(m, k.Type),
				GroupPaths:     slices.Sorted(slices.Values(k.Paths)),
				ContractLabels: e.ContractLabels(pkg, k.Name),
			}
			s.Kinds[pkg.Group+"/"+pkg.Version+" "+k.Name] = kv
			passedThrough(m, k.Type, s.PassedThrough)
		}
	}
	return s
}

// convertedBy is KindVersion.ConvertedBy of k.
func convertedBy(k *model.Kind) string {
	switch {
	case k.Conversion != translate.Spoke:
		return ""
	case k.ConvertsByFunctions():
		return fmt.Sprintf("functions %s.%s, %s", k.ToHub.Package, k.ToHub.Name, k.FromHub.Name)
	}
	return "methods of its Go type"
}

// upstreamModules returns the modules of upstream.Packages that the go.mod file requires, with versions.
func upstreamModules(gomod string) (map[string]string, error) {
	data, err := os.ReadFile(gomod)
	if err != nil {
		return nil, err
	}
	mf, err := modfile.ParseLax(gomod, data, nil)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, r := range mf.Require {
		for _, p := range upstream.Packages {
			if strings.HasPrefix(p.Path, r.Mod.Path+"/") {
				out[r.Mod.Path] = r.Mod.Version
				break
			}
		}
	}
	return out, nil
}

// fields lists the JSON paths of the fields of t and of the mirrored types below it, each with its
// type, sorted. A recursive type is listed down to its first repetition.
func fields(m *model.Model, t *types.Type) []string {
	var out []string
	var walk func(t *types.Type, prefix string, stack map[*types.Type]bool)
	walk = func(t *types.Type, prefix string, stack map[*types.Type]bool) {
		switch t.Kind {
		case types.Pointer:
			walk(t.Elem, prefix, stack)
			return
		case types.Slice, types.Array:
			walk(t.Elem, prefix+"[]", stack)
			return
		case types.Map:
			walk(t.Elem, prefix+"{}", stack)
			return
		case types.Alias, types.Struct:
		default:
			return
		}
		if m.PackageOf(t) == nil || m.Aliased(t) || m.Opaque(t) || stack[t] {
			return
		}
		stack[t] = true
		defer delete(stack, t)
		if t.Kind == types.Alias {
			walk(t.Underlying, prefix, stack)
			return
		}
		for _, mem := range t.Members {
			name := model.JSONName(mem)
			if name == "-" {
				continue
			}
			p := prefix
			if name != "" {
				p = join(prefix, name)
				out = append(out, p+" "+typeString(m, mem.Type))
			}
			walk(mem.Type, p, stack)
		}
	}
	walk(t, "", map[*types.Type]bool{})
	slices.Sort(out)
	return slices.Compact(out)
}

// versioned matches the last element of an API package path ("v1", "v1beta2").
var versioned = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// typeString names a field's type as Go source would from the mirrored package: mirrored types by name,
// others qualified by their package's usual import name ("corev1.ObjectReference", "runtime.RawExtension").
func typeString(m *model.Model, t *types.Type) string {
	if t.Name.Package != "" || t.Kind == types.Builtin {
		if m.PackageOf(t) != nil || t.Name.Package == "" {
			return t.Name.Name
		}
		pkg := path.Base(t.Name.Package)
		if versioned.MatchString(pkg) {
			pkg = path.Base(path.Dir(t.Name.Package)) + pkg
		}
		return pkg + "." + t.Name.Name
	}
	switch t.Kind {
	case types.Pointer:
		return "*" + typeString(m, t.Elem)
	case types.Slice:
		return "[]" + typeString(m, t.Elem)
	case types.Map:
		return "map[" + typeString(m, t.Key) + "]" + typeString(m, t.Elem)
	}
	return t.String()
}

// passedThrough adds the types reachable from t that the generator passes through unread to out.
func passedThrough(m *model.Model, t *types.Type, out map[string]string) {
	seen := map[*types.Type]bool{}
	var walk func(t *types.Type)
	walk = func(t *types.Type) {
		if t == nil || seen[t] {
			return
		}
		seen[t] = true
		if m.Opaque(t) {
			out[t.Name.Package+"."+t.Name.Name] = m.OpaqueTable(t)
			return
		}
		for _, mem := range t.Members {
			walk(mem.Type)
		}
		walk(t.Elem)
		walk(t.Key)
		walk(t.Underlying)
	}
	walk(t)
}
