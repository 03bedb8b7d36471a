package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	goparser "go/parser"
	"go/token"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/gobuffalo/flect"
	"k8s.io/gengo/v2/codetags"
	"k8s.io/gengo/v2/parser"
	"k8s.io/gengo/v2/types"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

const (
	metav1Path = "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1Path = "k8s.io/api/core/v1"
	schemaPath = "k8s.io/apimachinery/pkg/runtime/schema"
)

// Load parses pkgs with gengo and builds the model with the project's tables (UpstreamTables). module is
// this repository's Go module path.
func Load(module string, pkgs []upstream.Package) (*Model, error) {
	return LoadWith(module, pkgs, UpstreamTables)
}

// LoadWith is Load with the given tables (the generator's tests load fixture packages with their own).
func LoadWith(module string, pkgs []upstream.Package, tables Tables) (*Model, error) {
	paths := make([]string, 0, len(pkgs))
	for _, p := range pkgs {
		paths = append(paths, p.Path)
	}
	convs, err := existingPackages(tables.Conversions)
	if err != nil {
		return nil, err
	}
	var convPaths []string
	for _, c := range convs {
		convPaths = append(convPaths, c.Path)
	}
	p := parser.New()
	if err := p.LoadPackages(append(slices.Clone(paths), convPaths...)...); err != nil {
		return nil, fmt.Errorf("loading upstream packages: %w", err)
	}
	u, err := p.NewUniverse()
	if err != nil {
		return nil, fmt.Errorf("building the type universe: %w", err)
	}

	m := &Model{Module: module, ConversionPackages: convs, byPath: map[string]*Package{}, aliased: map[*types.Type]bool{}, tables: tables}
	for _, up := range pkgs {
		src := u.Package(up.Path)
		if src == nil || len(src.Types) == 0 {
			return nil, fmt.Errorf("%s: package has no types (is it in go.mod?)", up.Path)
		}
		pkg := &Package{Package: up, Version: path.Base(up.Path), Source: src}
		if pkg.Group, err = groupName(src); err != nil {
			return nil, fmt.Errorf("%s: reading +groupName: %w", up.Path, err)
		}
		if pkg.Group == "" {
			return nil, fmt.Errorf("%s: no +groupName marker in the package comments", up.Path)
		}
		priv, ok := upstream.PrivateGroup(pkg.Group)
		if !ok {
			return nil, fmt.Errorf("%s: group %q has no private twin: add it to upstream.Groups", up.Path, pkg.Group)
		}
		pkg.PrivateGroup = priv
		if pkg.Kinds, err = findKinds(src); err != nil {
			return nil, fmt.Errorf("%s: %w", up.Path, err)
		}
		if len(pkg.Kinds) == 0 {
			return nil, fmt.Errorf("%s: no kinds (+kubebuilder:object:root=true types with ObjectMeta) found", up.Path)
		}
		m.Packages = append(m.Packages, pkg)
		m.byPath[up.Path] = pkg
	}
	m.singleVersionStorage()
	if err := m.removedReleases(); err != nil {
		return nil, err
	}
	var convPkgs []*types.Package
	for _, path := range convPaths {
		convPkgs = append(convPkgs, u.Package(path))
	}
	convErr := m.conversions(convPkgs)
	var setterPkgs []*types.Package
	for _, pkg := range m.Packages {
		setterPkgs = append(setterPkgs, pkg.Source)
	}
	m.APIVersionGetterSetters, err = getterSetters(append(setterPkgs, convPkgs...))
	if err := errors.Join(convErr, err); err != nil {
		return nil, err
	}
	m.collectReachable()
	if err := m.classify(); err != nil {
		return nil, err
	}
	for _, pkg := range m.Packages {
		for _, k := range pkg.Kinds {
			if k.Paths, err = m.jsonPaths(k.Type); err != nil {
				return nil, fmt.Errorf("%s.%s: %w", pkg.Path, k.Name, err)
			}
		}
	}
	return m, nil
}

// singleVersionStorage marks the only version of a kind as its storage version, as controller-gen does
// when no version carries +kubebuilder:storageversion (CAPA's NodeadmConfig).
func (m *Model) singleVersionStorage() {
	versions := map[string][]*Kind{}
	for _, pkg := range m.Packages {
		for _, k := range pkg.Kinds {
			gk := k.Name + "." + pkg.Group
			versions[gk] = append(versions[gk], k)
		}
	}
	for _, ks := range versions {
		if len(ks) == 1 {
			ks[0].Storage = true
		}
	}
}

// existingPackages returns the candidate packages that exist at the versions go.mod pins, in the order of
// the table: a package whose module is not in the build list, or that its module does not hold (CAPI's
// conversion packages before v1.14), is left out. It looks at the module's files (go list -m, go mod
// download) rather than asking the package loader, which under -mod=mod would fetch a newer module that
// has the package and change go.mod (a bump back to CAPI v1.13 would come back to v1.14). Whether a
// package builds is the business of the load that follows.
func existingPackages(mods []upstream.ConversionModule) ([]ConversionPackage, error) {
	var paths []string
	for _, m := range mods {
		if len(m.Packages) > 0 {
			paths = append(paths, m.Module)
		}
	}
	if len(paths) == 0 {
		return nil, nil
	}
	dirs, err := moduleDirs(paths)
	if err != nil {
		return nil, err
	}
	var out []ConversionPackage
	for _, m := range mods {
		dir := dirs[m.Module]
		if dir == "" {
			continue
		}
		for _, rel := range m.Packages {
			files, _ := filepath.Glob(filepath.Join(dir, filepath.FromSlash(rel), "*.go"))
			if slices.ContainsFunc(files, func(f string) bool { return !strings.HasSuffix(f, "_test.go") }) {
				out = append(out, ConversionPackage{Path: m.Module + "/" + rel, Dir: rel})
			}
		}
	}
	return out, nil
}

// moduleDirs returns the directory of each module of mods that is in the build list (the main module's
// own, or the module cache's, downloading it if need be); a module not in the build list has none.
func moduleDirs(mods []string) (map[string]string, error) {
	out, err := exec.Command("go", append([]string{"list", "-m", "-e", "-json"}, mods...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m %s: %w", strings.Join(mods, " "), err)
	}
	dirs := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var m struct {
			Path, Version, Dir string
			Main               bool
			Error              *struct{ Err string }
		}
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list -m: %w", err)
		}
		if m.Error != nil {
			continue
		}
		if m.Dir == "" && !m.Main {
			dl, err := exec.Command("go", "mod", "download", "-json", m.Path+"@"+m.Version).Output()
			var info struct{ Dir string }
			if err != nil || json.Unmarshal(dl, &info) != nil {
				return nil, fmt.Errorf("go mod download %s@%s: %w", m.Path, m.Version, err)
			}
			m.Dir = info.Dir
		}
		dirs[m.Path] = m.Dir
	}
	return dirs, nil
}

// removedReleases sets each package's RemovedRelease from the tables. A release listed for a package not
// loaded, or for one with a kind upstream does not deprecate, fails generation: the proxy would report
// requests of a version upstream keeps as requests of one it removes.
func (m *Model) removedReleases() error {
	var problems []string
	for p, release := range m.tables.RemovedReleases {
		pkg := m.byPath[p]
		if pkg == nil {
			problems = append(problems, fmt.Sprintf("%s: a removed release (%s) for a package that is not mirrored", p, release))
			continue
		}
		for _, k := range pkg.Kinds {
			if !k.Deprecated {
				problems = append(problems, fmt.Sprintf("%s: a removed release (%s), but upstream does not deprecate its kind %s "+
					"(+kubebuilder:deprecatedversion)", p, release, k.Name))
			}
		}
		pkg.RemovedRelease = release
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("removed releases:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// conversions sets each kind's Conversion (and a spoke's ToHub and FromHub), for kinds with more than one
// version, from wherever upstream keeps its conversions:
//
//   - methods of the Go types (gengo lists pointer-receiver methods too): the hub has Hub(), its spokes
//     ConvertTo and ConvertFrom (controller-runtime's conversion.Hub and conversion.Convertible);
//   - exported functions of the conversion packages convPkgs, func(context.Context, *A, *B) error where A
//     and B are two versions of the kind, one of them its storage version, which is then the hub (the
//     spoke functions of CAPI v1.14's conversion.NewHubSpokeConverter values).
//
// A kind's versions must use one of the two completely: exactly one hub, which is the storage version,
// and every other version a spoke with both directions, by one function each. Anything else (a method
// or a function missing, two functions for one direction, methods and functions for one kind, a function
// between two spokes) fails generation naming the kind, since the apiserver could not convert it or the
// generator could not tell which conversion upstream runs.
func (m *Model) conversions(convPkgs []*types.Package) error {
	byKind := map[string][]*Kind{}
	kindOf := map[*types.Type]*Kind{}
	gkOf := map[*Kind]string{}
	versionOf := map[*Kind]string{}
	var order []string
	for _, pkg := range m.Packages {
		for _, k := range pkg.Kinds {
			gk := k.Name + "." + pkg.Group
			if byKind[gk] == nil {
				order = append(order, gk)
			}
			byKind[gk] = append(byKind[gk], k)
			kindOf[k.Type], gkOf[k], versionOf[k] = k, gk, pkg.Version
		}
	}
	funcs := map[string][]conversionFunc{}
	for _, pkg := range convPkgs {
		for _, name := range slices.Sorted(maps.Keys(pkg.Functions)) {
			from, to, ok := conversionFunction(pkg.Functions[name])
			if !ok || !ast.IsExported(name) {
				continue
			}
			kf, kt := kindOf[from], kindOf[to]
			if kf == nil || kt == nil || kf == kt || gkOf[kf] != gkOf[kt] {
				continue // not a conversion between two versions of one mirrored kind
			}
			funcs[gkOf[kf]] = append(funcs[gkOf[kf]], conversionFunc{name: pkg.Functions[name].Name, from: kf, to: kt})
		}
	}
	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	for _, gk := range order {
		ks := byKind[gk]
		if len(ks) < 2 {
			continue
		}
		var methods []string // the versions whose Go types have ConvertTo or ConvertFrom
		for _, k := range ks {
			_, to := k.Type.Methods["ConvertTo"]
			_, from := k.Type.Methods["ConvertFrom"]
			if to || from {
				methods = append(methods, versionOf[k])
			}
		}
		if fs := funcs[gk]; len(fs) > 0 {
			var names []string
			for _, f := range fs {
				names = append(names, f.name.String())
			}
			if len(methods) > 0 {
				problem("%s: converted both by methods (ConvertTo or ConvertFrom of %s) and by functions (%s): which one "+
					"upstream's webhook runs cannot be told", gk, strings.Join(methods, ", "), strings.Join(names, ", "))
				continue
			}
			functionConversions(gk, ks, versionOf, fs, problem)
			continue
		}
		var hubs, spokes int
		for _, k := range ks {
			_, hub := k.Type.Methods["Hub"]
			_, to := k.Type.Methods["ConvertTo"]
			_, from := k.Type.Methods["ConvertFrom"]
			switch {
			case hub:
				k.Conversion = translate.Hub
				hubs++
				if !k.Storage {
					problem("%s: the hub %s is not the storage version", gk, k.Type.Name)
				}
			case to && from:
				k.Conversion = translate.Spoke
				spokes++
			}
		}
		if hubs+spokes > 0 && (hubs != 1 || spokes != len(ks)-1) {
			problem("%s: %d versions, %d hub(s) and %d spoke(s): every version but the hub must implement "+
				"ConvertTo and ConvertFrom", gk, len(ks), hubs, spokes)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("conversions:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// conversionFunc is a function of a conversion package that converts a version of a kind into another.
type conversionFunc struct {
	name     types.Name
	from, to *Kind
}

// functionConversions sets Conversion, ToHub and FromHub of the versions ks of the kind gk from the
// conversion functions fs, and reports with problem what keeps them from converting every version
// through the storage version.
func functionConversions(gk string, ks []*Kind, versionOf map[*Kind]string, fs []conversionFunc, problem func(string, ...any)) {
	var hub *Kind
	var storage []string
	for _, k := range ks {
		if k.Storage {
			hub = k
			storage = append(storage, versionOf[k])
		}
	}
	switch len(storage) {
	case 1:
	case 0:
		problem("%s: converted by functions, but no version is the storage version, which would be the hub", gk)
		return
	default:
		problem("%s: converted by functions, but %d versions are the storage version (%s): the hub must be the one",
			gk, len(storage), strings.Join(storage, ", "))
		return
	}
	for _, f := range fs {
		name, from, to := f.name, f.from, f.to
		var spoke *Kind
		var slot *types.Name
		switch {
		case to == hub:
			spoke, slot = from, &from.ToHub
		case from == hub:
			spoke, slot = to, &to.FromHub
		default:
			problem("%s: %s converts %s to %s, neither of them the hub %s", gk, name, versionOf[from], versionOf[to], versionOf[hub])
			continue
		}
		if slot.Name != "" {
			problem("%s: two functions convert %s %s the hub %s: %s and %s", gk, versionOf[spoke],
				map[bool]string{true: "to", false: "from"}[to == hub], versionOf[hub], *slot, name)
			continue
		}
		*slot = name
	}
	hub.Conversion = translate.Hub
	for _, k := range ks {
		if k == hub {
			continue
		}
		k.Conversion = translate.Spoke
		if k.ToHub.Name == "" {
			problem("%s: no function converts the spoke %s to the hub %s (func(context.Context, *%s.%s, *%s.%s) error)",
				gk, versionOf[k], versionOf[hub], versionOf[k], k.Name, versionOf[hub], hub.Name)
		}
		if k.FromHub.Name == "" {
			problem("%s: no function converts the hub %s to the spoke %s (func(context.Context, *%s.%s, *%s.%s) error)",
				gk, versionOf[hub], versionOf[k], versionOf[hub], hub.Name, versionOf[k], k.Name)
		}
	}
}

// conversionFunction reports whether fn, a function of a package, has the shape of a whole-object
// conversion, func(context.Context, *A, *B) error, and returns A and B.
func conversionFunction(fn *types.Type) (from, to *types.Type, ok bool) {
	sig := signature(fn)
	if sig == nil || sig.Receiver != nil || sig.Variadic || len(sig.Parameters) != 3 || len(sig.Results) != 1 ||
		!isNamed(sig.Parameters[0].Type, "context", "Context") || !isNamed(sig.Results[0].Type, "", "error") {
		return nil, nil, false
	}
	a, b := sig.Parameters[1].Type, sig.Parameters[2].Type
	if a.Kind != types.Pointer || b.Kind != types.Pointer {
		return nil, nil, false
	}
	return a.Elem, b.Elem, true
}

// getterSetters returns the SetAPIVersionGetter functions of pkgs, in their order. A function of that
// name with another shape than func(func(context.Context, schema.GroupKind) (string, error)) or
// func(func(schema.GroupKind) (string, error)) fails: the conversions of its package could not be given
// a getter.
func getterSetters(pkgs []*types.Package) ([]GetterSetter, error) {
	var out []GetterSetter
	var problems []string
	for _, pkg := range pkgs {
		fn, ok := pkg.Functions["SetAPIVersionGetter"]
		if !ok {
			continue
		}
		withContext, ok := getterSetter(fn)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s.SetAPIVersionGetter: want func(func(context.Context, schema.GroupKind) "+
				"(string, error)) or func(func(schema.GroupKind) (string, error))", pkg.Path))
			continue
		}
		out = append(out, GetterSetter{Package: pkg.Path, Context: withContext})
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("apiVersion getters:\n  %s", strings.Join(problems, "\n  "))
	}
	return out, nil
}

// getterSetter reports whether fn is a SetAPIVersionGetter upstream's way, and whether its getter takes a
// context.
func getterSetter(fn *types.Type) (withContext, ok bool) {
	sig := signature(fn)
	if sig == nil || sig.Receiver != nil || sig.Variadic || len(sig.Parameters) != 1 || len(sig.Results) != 0 {
		return false, false
	}
	get := sig.Parameters[0].Type
	if get.Kind != types.Func || get.Signature == nil || get.Signature.Variadic {
		return false, false
	}
	params, results := get.Signature.Parameters, get.Signature.Results
	if len(results) != 2 || !isNamed(results[0].Type, "", "string") || !isNamed(results[1].Type, "", "error") {
		return false, false
	}
	switch {
	case len(params) == 1 && isNamed(params[0].Type, schemaPath, "GroupKind"):
		return false, true
	case len(params) == 2 && isNamed(params[0].Type, "context", "Context") && isNamed(params[1].Type, schemaPath, "GroupKind"):
		return true, true
	}
	return false, false
}

// signature returns the signature of a declared function, or nil.
func signature(fn *types.Type) *types.Signature {
	if fn == nil || fn.Kind != types.DeclarationOf || fn.Underlying == nil || fn.Underlying.Kind != types.Func {
		return nil
	}
	return fn.Underlying.Signature
}

// isNamed reports whether t is the named (or builtin, pkg "") type pkg.name.
func isNamed(t *types.Type, pkg, name string) bool {
	return t != nil && t.Name.Package == pkg && t.Name.Name == name
}

// groupName returns the value of the package's +groupName marker. Like controller-gen, it reads the
// marker from any file of the package (gengo keeps only doc.go's comments; CAPI puts it in
// groupversion_info.go for some packages).
func groupName(p *types.Package) (string, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(p.Dir)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := goparser.ParseFile(fset, filepath.Join(p.Dir, e.Name()), nil, goparser.ParseComments|goparser.PackageClauseOnly)
		if err != nil {
			return "", err
		}
		for _, cg := range f.Comments {
			if v := commentTags(strings.Split(cg.Text(), "\n"))["groupName"]; len(v) > 0 {
				return strings.TrimSpace(v[0]), nil
			}
		}
	}
	return "", nil
}

// markers returns the +markers of a type's doc comment and of the comment block above it (where
// kubebuilder projects put +kubebuilder:object:root and friends), as commentTags reads them: marker name
// to values ("+kubebuilder:storageversion" -> {"kubebuilder:storageversion": [""]}).
func markers(t *types.Type) map[string][]string {
	return commentTags(append(slices.Clone(t.SecondClosestCommentLines), t.CommentLines...))
}

// commentTags returns the "+" markers of comment lines, by name, with their values: what follows the name
// and an '=' ("+groupName=cluster.x-k8s.io" -> groupName: [cluster.x-k8s.io]), "" for a marker without
// one. Names are gengo's codetags.Extract names ([a-zA-Z_][a-zA-Z0-9_.-:]*, so a marker with arguments
// splits at its first '=': "kubebuilder:resource:path" -> "machines,shortName=ma"); values are trimmed
// of spaces.
func commentTags(lines []string) map[string][]string {
	out := map[string][]string{}
	for name, found := range codetags.Extract("+", lines) {
		for _, line := range found {
			value, _ := strings.CutPrefix(line[len(name):], "=")
			out[name] = append(out[name], strings.TrimSpace(value))
		}
	}
	return out
}

// hasMarker reports whether t carries the marker name, with or without a value or arguments
// ("+kubebuilder:object:root=true", "+kubebuilder:subresource:status").
func hasMarker(t *types.Type, name string) bool {
	for k := range markers(t) {
		if k == name || strings.HasPrefix(k, name+":") {
			return true
		}
	}
	return false
}

// markerArgs returns the key=value arguments of a marker with arguments, as controller-tools writes them
// ("+kubebuilder:resource:path=machines,shortName=ma" -> {path: machines, shortName: ma}), or nil.
// commentTags splits such a marker at its first '=' ("kubebuilder:resource:path" ->
// "machines,shortName=ma"); the first argument's name is the rest of the key.
func markerArgs(t *types.Type, name string) map[string]string {
	for k, vs := range markers(t) {
		first, ok := strings.CutPrefix(k, name+":")
		if !ok || len(vs) == 0 {
			continue
		}
		args := map[string]string{}
		for _, kv := range strings.Split(first+"="+vs[0], ",") {
			k, v, _ := strings.Cut(kv, "=")
			args[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"`)
		}
		return args
	}
	return nil
}

func embeds(t *types.Type, pkg, name string) bool {
	for _, mem := range t.Members {
		if mem.Embedded && mem.Type.Name.Package == pkg && mem.Type.Name.Name == name {
			return true
		}
	}
	return false
}

// findKinds returns the root types of a package that carry ObjectMeta, each paired with its list.
func findKinds(p *types.Package) ([]*Kind, error) {
	var kinds []*Kind
	for _, t := range p.Types {
		if t.Kind != types.Struct || !hasMarker(t, "kubebuilder:object:root") {
			continue
		}
		var hasMeta bool
		for _, mem := range t.Members {
			if mem.Type.Name.Package == metav1Path && mem.Type.Name.Name == "ObjectMeta" {
				hasMeta = true
			}
		}
		if !hasMeta {
			continue
		}
		list := p.Types[t.Name.Name+"List"]
		if list == nil || !embeds(list, metav1Path, "ListMeta") {
			return nil, fmt.Errorf("kind %s has no %sList with metav1.ListMeta", t.Name.Name, t.Name.Name)
		}
		k := &Kind{
			Type: t, List: list, Name: t.Name.Name, ListName: list.Name.Name,
			Namespaced: true,
			Storage:    hasMarker(t, "kubebuilder:storageversion"),
			Unserved:   hasMarker(t, "kubebuilder:unservedversion"),
			Deprecated: hasMarker(t, "kubebuilder:deprecatedversion"),
			Singular:   strings.ToLower(t.Name.Name),
			Resource:   flect.Pluralize(strings.ToLower(t.Name.Name)),
		}
		if args := markerArgs(t, "kubebuilder:resource"); args != nil {
			if v := args["path"]; v != "" {
				k.Resource = v
			}
			if v := args["singular"]; v != "" {
				k.Singular = v
			}
			k.Namespaced = args["scope"] != "Cluster"
			k.ShortNames = splitList(args["shortName"])
			k.Categories = splitList(args["categories"])
		}
		for _, sub := range []string{"status", "scale"} {
			if hasMarker(t, "kubebuilder:subresource:"+sub) {
				k.Subresources = append(k.Subresources, sub)
			}
		}
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return kinds[i].Name < kinds[j].Name })
	return kinds, nil
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ";")
}

// collectReachable fills every package's Types with the named types of mirrored packages reachable from
// any kind or list.
func (m *Model) collectReachable() {
	seen := map[*types.Type]bool{}
	var walk func(t *types.Type)
	walk = func(t *types.Type) {
		if t == nil || seen[t] {
			return
		}
		seen[t] = true
		if pkg := m.PackageOf(t); pkg != nil && t.Name.Name != "" && (t.Kind == types.Struct || t.Kind == types.Alias) {
			pkg.Types = append(pkg.Types, t)
		}
		switch t.Kind {
		case types.Struct:
			for _, mem := range t.Members {
				walk(mem.Type)
			}
		case types.Pointer, types.Slice, types.Array:
			walk(t.Elem)
		case types.Map:
			walk(t.Key)
			walk(t.Elem)
		case types.Alias:
			walk(t.Underlying)
		}
	}
	for _, pkg := range m.Packages {
		for _, k := range pkg.Kinds {
			walk(k.Type)
			walk(k.List)
		}
	}
	for _, pkg := range m.Packages {
		sort.Slice(pkg.Types, func(i, j int) bool { return pkg.Types[i].Name.Name < pkg.Types[j].Name.Name })
	}
}
