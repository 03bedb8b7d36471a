package loglevel

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCallsNameALevel: no klog.V call of the module's code (tests aside) gives a bare number, so that
// Levels, and the docs made from it, say what every level logs.
func TestCallsNameALevel(t *testing.T) {
	bare := regexp.MustCompile(`klog\.V\(\s*[0-9]`)
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "tests", "testdata", ".git", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			if bare.MatchString(line) {
				t.Errorf("%s:%d: klog.V with a number: name a level of package loglevel", path, i+1)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestLevels(t *testing.T) {
	for i, l := range Levels {
		if l.V != i+1 || l.Logs == "" {
			t.Errorf("Levels[%d] = %+v: want -v=%d, with what it logs", i, l, i+1)
		}
	}
}
