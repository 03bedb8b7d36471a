package upstream

import (
	"io/fs"
	"path/filepath"
)

// crdSkippedDirs are the trees of a module whose CRDs are not the ones it publishes (CAPI's docker test
// provider, clusterctl's own kinds, CAPV's test fixtures).
var crdSkippedDirs = map[string]bool{"test": true, "internal": true, "cmd": true, "hack": true, "docs": true, "templates": true}

// PublishedCRDFiles returns the CRD files an upstream module publishes, given its directory (e.g. in the Go
// module cache): the YAML (.yaml) files of each .../crd/bases directory under moduleDir (kubebuilder's
// config/crd/bases), except those under a directory named test, internal, cmd, hack, docs or templates.
// Paths are moduleDir joined with the file's, in lexical order (filepath.WalkDir's); the error is the
// walk's first.
func PublishedCRDFiles(moduleDir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(moduleDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if crdSkippedDirs[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if filepath.Ext(path) == ".yaml" && filepath.Base(filepath.Dir(path)) == "bases" &&
			filepath.Base(filepath.Dir(filepath.Dir(path))) == "crd" {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}
