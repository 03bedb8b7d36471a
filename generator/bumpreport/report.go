package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Report is the difference between two snapshots, section by section, each a list of lines. A section
// without lines is left out when written; a report without any is empty.
type Report struct {
	Sections []Section
}

// Section is one heading of the report with its lines.
type Section struct {
	Title string
	Lines []string
}

// Empty reports whether the snapshots showed no difference.
func (r *Report) Empty() bool {
	for _, s := range r.Sections {
		if len(s.Lines) > 0 {
			return false
		}
	}
	return true
}

// Write writes the report as text: each non-empty section under its title, or one line saying there is
// no difference.
func (r *Report) Write(w io.Writer) error {
	var b strings.Builder
	if r.Empty() {
		b.WriteString("bump report: no change in the mirrored APIs\n")
	}
	for _, s := range r.Sections {
		if len(s.Lines) == 0 {
			continue
		}
		fmt.Fprintf(&b, "## %s\n", s.Title)
		for _, l := range s.Lines {
			fmt.Fprintf(&b, "  %s\n", l)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// diff compares the snapshot of the pins before a bump with the one after it.
func diff(before, after *Snapshot) *Report {
	r := &Report{}
	add := func(title string, lines []string) {
		r.Sections = append(r.Sections, Section{Title: title, Lines: lines})
	}

	var mods []string
	for _, p := range sortedKeys(before.Modules, after.Modules) {
		b, inB := before.Modules[p]
		a, inA := after.Modules[p]
		switch {
		case !inB:
			mods = append(mods, fmt.Sprintf("+ %s %s", p, a))
		case !inA:
			mods = append(mods, fmt.Sprintf("- %s %s", p, b))
		case a != b:
			mods = append(mods, fmt.Sprintf("%s %s -> %s", p, b, a))
		}
	}
	add("Upstream modules", mods)

	var broken []string
	for _, mod := range sortedKeys(after.BrokenModules) {
		b := after.BrokenModules[mod]
		broken = append(broken, fmt.Sprintf("%s %s: its API packages do not build:", mod, b.Version))
		for _, l := range strings.Split(b.Build, "\n") {
			broken = append(broken, "    "+l)
		}
		broken = append(broken, "  the module proxy lists: "+strings.ReplaceAll(b.Versions, "\n", " "))
	}
	add("Modules that do not build at the new pins (not compared below: the project keeps its last good set until a release builds)", broken)

	var roles []string
	for _, r := range after.MissingRoles {
		if !slices.Contains(before.MissingRoles, r) {
			roles = append(roles, r)
		}
	}
	add("Upstream ClusterRoles (apis/upstream.Roles) missing at the new pins: fix their File", roles)

	if after.Error != "" {
		var lines []string
		for _, p := range after.Problems {
			lines = append(lines, p.Message)
			if p.Type != "" {
				lines = append(lines, fmt.Sprintf("    table line to add to apis/upstream.OpaqueTypes (or ForeignTypes), once you know why it never carries a group:\n      %q: \"<why it never carries a mapped group>\",", p.Type))
			}
		}
		if len(lines) == 0 {
			lines = strings.Split(after.Error, "\n")
		}
		add("The generator cannot build its model at the new pins (nothing below is compared until it can)", lines)
		return r
	}
	if before.Error != "" {
		add("The generator could not build its model at the old pins", strings.Split(before.Error, "\n"))
	}

	var added, removed, storage, conversion, moved, served, fieldLines, groupLines, labels []string
	for _, key := range sortedKeys(before.Kinds, after.Kinds) {
		b, a := before.Kinds[key], after.Kinds[key]
		if b != nil && a == nil && after.broken(b.Package) {
			continue
		}
		switch {
		case b == nil:
			added = append(added, describe(key, a))
			continue
		case a == nil:
			removed = append(removed, describe(key, b))
			continue
		}
		if b.Storage != a.Storage {
			storage = append(storage, fmt.Sprintf("%s: storage %t -> %t", key, b.Storage, a.Storage))
		}
		if b.Unserved != a.Unserved {
			served = append(served, fmt.Sprintf("%s: unserved %t -> %t", key, b.Unserved, a.Unserved))
		}
		if b.Conversion != a.Conversion {
			conversion = append(conversion, fmt.Sprintf("%s: %s -> %s", key, b.Conversion, a.Conversion))
		} else if b.ConvertedBy != a.ConvertedBy {
			moved = append(moved, fmt.Sprintf("%s: %s -> %s", key, b.ConvertedBy, a.ConvertedBy))
		}
		fieldLines = append(fieldLines, setDiff(key, b.Fields, a.Fields)...)
		groupLines = append(groupLines, setDiff(key, b.GroupPaths, a.GroupPaths)...)
		if !maps.Equal(b.ContractLabels, a.ContractLabels) {
			labels = append(labels, fmt.Sprintf("%s: %s -> %s", key, labelString(b.ContractLabels), labelString(a.ContractLabels)))
		}
	}
	// A new kind's group-carrying fields are new too.
	for _, key := range sortedKeys(after.Kinds) {
		if before.Kinds[key] == nil {
			groupLines = append(groupLines, setDiff(key, nil, after.Kinds[key].GroupPaths)...)
			if l := after.Kinds[key].ContractLabels; len(l) > 0 {
				labels = append(labels, fmt.Sprintf("%s: (new) -> %s", key, labelString(l)))
			}
		}
	}
	add("Kinds and versions added", added)
	add("Kinds and versions removed", removed)
	add("Storage versions changed", storage)
	add("Served versions changed", served)
	add("Conversions changed (translate.Conversion, from the upstream Go types' methods or a conversion package's functions)", conversion)
	add("Conversions moved (where upstream keeps a spoke's conversions to and from the hub; the proxy follows)", moved)
	add("Fields added (+) and removed (-), per kind and version", fieldLines)
	add("Group-carrying fields added (+) and removed (-), with their classification (=apiVersion, =group, =objectMeta, ...)", groupLines)

	var through []string
	for _, t := range sortedKeys(before.PassedThrough, after.PassedThrough) {
		b, a := before.PassedThrough[t], after.PassedThrough[t]
		switch {
		case b == "":
			through = append(through, fmt.Sprintf("+ %s (upstream.%s)", t, a))
		case a == "" && len(after.BrokenModules) > 0:
			through = append(through, fmt.Sprintf("- %s (upstream.%s; no longer reached, or reached only from a module that does not build)", t, b))
		case a == "":
			through = append(through, fmt.Sprintf("- %s (upstream.%s; its line may go)", t, b))
		}
	}
	add("Types passed through unread (opaque or foreign)", through)
	add("Contract labels changed", labels)
	return r
}

// broken reports whether pkg belongs to a module that does not build in s.
func (s *Snapshot) broken(pkg string) bool {
	_, ok := s.BrokenModules[moduleOf(pkg, s.Modules)]
	return ok
}

func describe(key string, k *KindVersion) string {
	var notes []string
	if k.Storage {
		notes = append(notes, "storage")
	}
	if k.Unserved {
		notes = append(notes, "unserved")
	}
	notes = append(notes, k.Conversion, "resource "+k.Resource)
	return fmt.Sprintf("%s (%s)", key, strings.Join(notes, ", "))
}

// setDiff returns "key: + x" for what is only in after and "key: - x" for what is only in before; both
// are sorted.
func setDiff(key string, before, after []string) []string {
	var out []string
	i, j := 0, 0
	for i < len(before) || j < len(after) {
		switch {
		case j == len(after) || (i < len(before) && before[i] < after[j]):
			out = append(out, key+": - "+before[i])
			i++
		case i == len(before) || after[j] < before[i]:
			out = append(out, key+": + "+after[j])
			j++
		default:
			i++
			j++
		}
	}
	return out
}

func labelString(l map[string]string) string {
	if len(l) == 0 {
		return "{}"
	}
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		kv = append(kv, k+"="+l[k])
	}
	return "{" + strings.Join(kv, ", ") + "}"
}

// sortedKeys returns the keys of all maps, sorted, without repetition.
func sortedKeys[V any](ms ...map[string]V) []string {
	var out []string
	for _, m := range ms {
		for k := range m {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
