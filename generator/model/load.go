package model

import (
	"fmt"
	goparser "go/parser"
	"go/token"
	"os"
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
	p := parser.New()
	if err := p.LoadPackages(paths...); err != nil {
		return nil, fmt.Errorf("loading upstream packages: %w", err)
	}
	u, err := p.NewUniverse()
	if err != nil {
		return nil, fmt.Errorf("building the type universe: %w", err)
	}

	m := &Model{Module: module, byPath: map[string]*Package{}, aliased: map[*types.Type]bool{}, tables: tables}
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
		_, pkg.SetsAPIVersionGetter = src.Functions["SetAPIVersionGetter"]
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
	if err := m.conversions(); err != nil {
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

// conversions sets each kind's Conversion from the methods of its Go type (gengo lists pointer-receiver
// methods too), for kinds with more than one version: upstream's hub has Hub(), its spokes ConvertTo and
// ConvertFrom (controller-runtime's conversion.Hub and conversion.Convertible). A kind whose versions
// use the pattern must do so completely: exactly one hub, which is the storage version, and every other
// version a spoke; anything else fails generation, since the apiserver could not convert it.
func (m *Model) conversions() error {
	byKind := map[string][]*Kind{}
	var order []string
	for _, pkg := range m.Packages {
		for _, k := range pkg.Kinds {
			gk := k.Name + "." + pkg.Group
			if byKind[gk] == nil {
				order = append(order, gk)
			}
			byKind[gk] = append(byKind[gk], k)
		}
	}
	var problems []string
	for _, gk := range order {
		ks := byKind[gk]
		if len(ks) < 2 {
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
					problems = append(problems, fmt.Sprintf("%s: the hub %s is not the storage version", gk, k.Type.Name))
				}
			case to && from:
				k.Conversion = translate.Spoke
				spokes++
			}
		}
		if hubs+spokes > 0 && (hubs != 1 || spokes != len(ks)-1) {
			problems = append(problems, fmt.Sprintf("%s: %d versions, %d hub(s) and %d spoke(s): every version but the "+
				"hub must implement ConvertTo and ConvertFrom", gk, len(ks), hubs, spokes))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("conversions:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
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
