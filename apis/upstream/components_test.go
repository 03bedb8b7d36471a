package upstream

import (
	"regexp"
	"strings"
	"testing"
)

// TestComponents: names and products are unique, and neither is "other" nor could be read from a
// User-Agent in a way other than the one meant (no whitespace, no "/", no parentheses).
func TestComponents(t *testing.T) {
	name := regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	names, products := map[string]bool{}, map[string]string{}
	for _, c := range Components {
		if !name.MatchString(c.Name) || c.Name == OtherComponent || names[c.Name] {
			t.Errorf("component %q: names must be unique, lower-case words and not %q", c.Name, OtherComponent)
		}
		names[c.Name] = true
		if len(c.Products) == 0 || c.Source == "" {
			t.Errorf("component %q: needs products and a source", c.Name)
		}
		for _, p := range c.Products {
			if p == "" || strings.ContainsAny(p, " \t/()") {
				t.Errorf("component %q: product %q is not one word of a User-Agent", c.Name, p)
			}
			if other, ok := products[p]; ok {
				t.Errorf("product %q names both %q and %q", p, other, c.Name)
			}
			products[p] = c.Name
		}
	}
}

// TestRemovedReleases: every package listed is mirrored, and every release is named as its project
// names releases (v<major>.<minor>).
func TestRemovedReleases(t *testing.T) {
	release := regexp.MustCompile(`^v[0-9]+\.[0-9]+$`)
	mirrored := map[string]bool{}
	for _, p := range Packages {
		mirrored[p.Path] = true
	}
	for path, r := range RemovedReleases {
		if !mirrored[path] {
			t.Errorf("RemovedReleases lists %s, which Packages does not mirror", path)
		}
		if !release.MatchString(r) {
			t.Errorf("RemovedReleases[%s] = %q, want v<major>.<minor>", path, r)
		}
	}
}
