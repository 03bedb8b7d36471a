package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestLinks: every relative link of the README and docs/ names a file of the repository, and an anchor
// one of that document's headings (as GitHub makes anchors of them).
func TestLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, doc := range append(docs, filepath.Join(root, "README.md")) {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(withoutCode(string(data)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), file)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %s: %v", doc, target, err)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(path, ".md") {
				t.Errorf("%s: link %s: an anchor in a file that is no Markdown document", doc, target)
				continue
			}
			linked, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !anchors(string(linked))[anchor] {
				t.Errorf("%s: link %s: %s has no heading with that anchor", doc, target, path)
			}
		}
	}
}

// withoutCode is doc without its fenced code blocks, whose brackets are no links.
func withoutCode(doc string) string {
	var b strings.Builder
	fenced := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// anchors are the anchors GitHub gives doc's headings: lower case, spaces to hyphens, every character
// but letters, digits, hyphens and underscores dropped, and -1, -2, ... after a repeated one.
func anchors(doc string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(withoutCode(doc), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(heading) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		for i := 1; out[a]; i++ {
			a = b.String() + "-" + strconv.Itoa(i)
		}
		out[a] = true
	}
	return out
}
