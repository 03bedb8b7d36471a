package translate

import (
	"sort"
	"strings"
)

// Text replaces every whole group name d translates from in free text s (a Status message, a Warning, a
// condition's message, a metric's label), e.g. in direction ToUpstream
//
//	machines.cluster.hypershift.openshift.io "m1" not found  ->  machines.cluster.x-k8s.io "m1" not found
//	infrastructure.cluster.hypershift.openshift.io/v1beta2   ->  infrastructure.cluster.x-k8s.io/v1beta2
//
// A name counts as whole when the character before it is not a letter, digit, '-' or '_' (a '.' is
// allowed: "machines.<group>" is a qualified resource) and the character after it neither continues a
// word nor starts another DNS label (".io" after "x-k8s.io" would). Several names are suffixes of others
// (cluster.hypershift.openshift.io of infrastructure.cluster.hypershift.openshift.io): at each position
// the longest name wins.
func (d Direction) Text(s string) string {
	var b strings.Builder
	copied := 0
	for i := 0; i < len(s); i++ {
		if i > 0 && isWordByte(s[i-1]) {
			continue
		}
		name, ok := d.wholeNameAt(s, i)
		if !ok {
			continue
		}
		if copied == 0 {
			b.Grow(len(s) + 16)
		}
		b.WriteString(s[copied:i])
		b.WriteString(d.groups[name])
		i += len(name) - 1
		copied = i + 1
	}
	if copied == 0 {
		return s
	}
	b.WriteString(s[copied:])
	return b.String()
}

// NamesIn reports whether free text s holds a whole group name d translates from (as Text finds them).
func (d Direction) NamesIn(s string) bool {
	for i := 0; i < len(s); i++ {
		if i > 0 && isWordByte(s[i-1]) {
			continue
		}
		if _, ok := d.wholeNameAt(s, i); ok {
			return true
		}
	}
	return false
}

// wholeNameAt returns the longest group name d translates from that starts at s[i] and ends a whole name.
func (d Direction) wholeNameAt(s string, i int) (string, bool) {
	for _, name := range d.longestFirst {
		if !strings.HasPrefix(s[i:], name) {
			continue
		}
		end := i + len(name)
		switch {
		case end == len(s):
			return name, true
		case isWordByte(s[end]):
			continue
		case s[end] == '.' && end+1 < len(s) && isAlnum(s[end+1]):
			continue
		}
		return name, true
	}
	return "", false
}

// sources returns the names groups maps from, longest first.
func sources(groups map[string]string) []string {
	out := make([]string, 0, len(groups))
	for from := range groups {
		out = append(out, from)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] < out[j]
	})
	return out
}

func isWordByte(c byte) bool { return isAlnum(c) || c == '-' || c == '_' }

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
