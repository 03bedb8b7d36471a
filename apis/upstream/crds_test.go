package upstream_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
)

// TestPublishedCRDFiles: the YAML files of every .../crd/bases directory, in lexical order, and none of a
// skipped tree, of another directory or of another extension.
func TestPublishedCRDFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{
		"config/crd/bases/b.yaml",
		"config/crd/bases/a.yaml",
		"exp/ipam/config/crd/bases/c.yaml",
		"config/crd/bases/notes.md",
		"config/crd/patches/p.yaml",
		"config/bases/x.yaml",
		"test/infrastructure/config/crd/bases/t.yaml",
		"internal/config/crd/bases/i.yaml",
		"cmd/clusterctl/config/crd/bases/c.yaml",
		"hack/crd/bases/h.yaml",
		"docs/crd/bases/d.yaml",
		"templates/crd/bases/t.yaml",
	} {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := upstream.PublishedCRDFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range []string{"config/crd/bases/a.yaml", "config/crd/bases/b.yaml", "exp/ipam/config/crd/bases/c.yaml"} {
		want = append(want, filepath.Join(dir, filepath.FromSlash(f)))
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := upstream.PublishedCRDFiles(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing directory: no error")
	}
}
