package upstream

import (
	"path"
	"strings"
	"testing"
)

func TestGroupsAreBijective(t *testing.T) {
	seenUp, seenPriv := map[string]bool{}, map[string]bool{}
	for _, g := range Groups {
		if seenUp[g.Upstream] || seenPriv[g.Private] {
			t.Errorf("group %q -> %q is listed twice", g.Upstream, g.Private)
		}
		if seenUp[g.Private] || seenPriv[g.Upstream] {
			t.Errorf("group %q -> %q: a private group is also an upstream group", g.Upstream, g.Private)
		}
		seenUp[g.Upstream], seenPriv[g.Private] = true, true
	}
}

func TestPackagesAreUnique(t *testing.T) {
	dirs, paths := map[string]bool{}, map[string]bool{}
	for _, p := range Packages {
		if dirs[p.Dir] || paths[p.Path] {
			t.Errorf("package %s (%s) is listed twice", p.Path, p.Dir)
		}
		if path.Base(p.Dir) != path.Base(p.Path) {
			t.Errorf("package %s: Dir %q must end in the version %q", p.Path, p.Dir, path.Base(p.Path))
		}
		dirs[p.Dir], paths[p.Path] = true, true
	}
}

func TestConversionPackagesAreModuleRelative(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range ConversionPackages {
		for _, p := range m.Packages {
			if p == "" || path.IsAbs(p) || path.Clean(p) != p || p == "." || strings.HasPrefix(p, "..") {
				t.Errorf("module %s: package %q must be a clean path relative to the module", m.Module, p)
			}
			if full := m.Module + "/" + p; seen[full] {
				t.Errorf("conversion package %s is listed twice", full)
			} else {
				seen[full] = true
			}
		}
	}
}
