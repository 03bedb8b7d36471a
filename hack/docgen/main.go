// Command docgen writes the reference tables of docs/operations.md from the code that defines what they
// list, so that each has one source: the proxy's flags (options.Options.AddFlags), its metrics
// (metrics.Definitions), its health checks (health.Checks) and its log levels (loglevel.Levels). Each
// table lies between a pair of marker lines,
//
//	<!-- BEGIN GENERATED: NAME (make docs) -->
//	<!-- END GENERATED: NAME -->
//
// and docgen replaces what is between them; everything else in the file is kept. make docs runs it,
// and make verify fails when the committed tables differ from what it writes.
// A marker missing, repeated or out of order is an error.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/openshift/hypershift-capi-proxy/proxy/health"
	"github.com/openshift/hypershift-capi-proxy/proxy/loglevel"
	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/proxy/options"
)

// File is the document docgen writes, relative to the repository's root.
const File = "docs/operations.md"

func main() {
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	path := filepath.Join(*root, File)
	data, err := os.ReadFile(path)
	if err != nil {
		fail(err)
	}
	out, err := Render(data, Tables())
	if err != nil {
		fail(fmt.Errorf("%s: %w", File, err))
	}
	if bytes.Equal(out, data) {
		return
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "docgen:", err)
	os.Exit(1)
}

// Tables are the generated sections by name: flags, metrics, health and loglevels.
func Tables() map[string]string {
	return map[string]string{
		"flags":     flagTables(),
		"metrics":   metricTable(),
		"health":    healthTable(),
		"loglevels": logLevelTable(),
	}
}

// Render replaces, in doc, what lies between each section's markers with its table.
func Render(doc []byte, tables map[string]string) ([]byte, error) {
	out := string(doc)
	for name, table := range tables {
		begin := "<!-- BEGIN GENERATED: " + name + " (make docs) -->\n"
		end := "<!-- END GENERATED: " + name + " -->\n"
		if strings.Count(out, begin) != 1 || strings.Count(out, end) != 1 {
			return nil, fmt.Errorf("want one line %q and one line %q", strings.TrimSpace(begin), strings.TrimSpace(end))
		}
		i := strings.Index(out, begin) + len(begin)
		j := strings.Index(out, end)
		if j < i {
			return nil, fmt.Errorf("the end marker of %s comes before its beginning", name)
		}
		out = out[:i] + table + out[j:]
	}
	return []byte(out), nil
}

// cell is s for a cell of a Markdown table: pipes escaped, on one line.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// code is s as inline code, or nothing for "".
func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + cell(s) + "`"
}

// flagTables are the flags of the proxy command, one table per section of --help, in its order.
func flagTables() string {
	var fss cliflag.NamedFlagSets
	options.NewOptions().AddFlags(&fss)
	var b strings.Builder
	for i, section := range fss.Order {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s flags:\n\n| flag | default | what it does |\n|---|---|---|\n", strings.ToUpper(section[:1])+section[1:])
		fss.FlagSets[section].VisitAll(func(f *pflag.Flag) {
			typ, usage := pflag.UnquoteUsage(f)
			name := "--" + f.Name
			if f.Shorthand != "" {
				name = "-" + f.Shorthand + ", " + name
			}
			if typ != "" {
				name += " " + typ
			}
			def := f.DefValue
			if f.Value.Type() == "stringSlice" || f.Value.Type() == "stringArray" {
				def = strings.Trim(def, "[]")
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", code(name), code(def), cell(usage))
		})
	}
	return b.String()
}

// metricTable is the proxy's own metrics.
func metricTable() string {
	var b strings.Builder
	b.WriteString("| metric | type | labels | what it counts |\n|---|---|---|---|\n")
	for _, d := range metrics.Definitions() {
		labels := make([]string, len(d.Labels))
		for i, l := range d.Labels {
			labels[i] = code(l)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", code(d.Name), d.Type, strings.Join(labels, ", "), cell(d.Help))
	}
	return b.String()
}

// healthTable is the checks of /healthz and /readyz.
func healthTable() string {
	var b strings.Builder
	b.WriteString("| endpoint | check | passes while | the proxy has it |\n|---|---|---|---|\n")
	for _, c := range health.Checks {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", code(c.Endpoint), code(c.Name), cell(c.Passes), cell(c.When))
	}
	return b.String()
}

// logLevelTable is what each -v adds.
func logLevelTable() string {
	var b strings.Builder
	b.WriteString("| `-v` | adds |\n|---|---|\n")
	for _, l := range loglevel.Levels {
		fmt.Fprintf(&b, "| %d | %s |\n", l.V, cell(l.Logs))
	}
	return b.String()
}
