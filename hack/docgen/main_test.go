package main

import (
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	doc := "a\n<!-- BEGIN GENERATED: x (make docs) -->\nold\n<!-- END GENERATED: x -->\nb\n"
	out, err := Render([]byte(doc), map[string]string{"x": "| new |\n"})
	if err != nil || string(out) != "a\n<!-- BEGIN GENERATED: x (make docs) -->\n| new |\n<!-- END GENERATED: x -->\nb\n" {
		t.Errorf("Render = %q, %v", out, err)
	}
	for _, bad := range []string{
		"no markers\n",
		"<!-- BEGIN GENERATED: x (make docs) -->\n",
		"<!-- END GENERATED: x -->\n<!-- BEGIN GENERATED: x (make docs) -->\n",
		strings.Repeat("<!-- BEGIN GENERATED: x (make docs) -->\n<!-- END GENERATED: x -->\n", 2),
	} {
		if _, err := Render([]byte(bad), map[string]string{"x": ""}); err == nil {
			t.Errorf("Render(%q) accepted it", bad)
		}
	}
}

// TestTables: every table has a row for what it lists, and no line breaks inside a row.
func TestTables(t *testing.T) {
	for name, table := range Tables() {
		for _, line := range strings.Split(strings.TrimSuffix(table, "\n"), "\n") {
			if line != "" && !strings.HasPrefix(line, "|") && !strings.HasSuffix(line, "flags:") {
				t.Errorf("%s: a line that is no row: %q", name, line)
			}
		}
	}
	for name, want := range map[string]string{
		"flags": "`--listen string` | `127.0.0.1:8443`", "metrics": "`capi_proxy_requests_total` | counter",
		"health": "`/readyz` | `crds`", "loglevels": "| 3 | One line per request",
	} {
		if !strings.Contains(Tables()[name], want) {
			t.Errorf("%s lacks %q:\n%s", name, want, Tables()[name])
		}
	}
}
