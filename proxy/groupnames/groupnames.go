// Package groupnames finds and replaces mapped API group names where they appear as text: in Status
// messages, in Warning headers and, as a cheap test before decoding, anywhere in a raw JSON body.
//
// The names come from apis/upstream (through translate.Direction): for translate.ToUpstream the sources are
// the private groups (cluster.hypershift.openshift.io, ...), for translate.ToPrivate the upstream groups.
// Several names are suffixes of others (cluster.hypershift.openshift.io of
// infrastructure.cluster.hypershift.openshift.io), so replacement works on whole names, leftmost and
// longest first.
package groupnames

import (
	"bytes"
	"slices"
	"sort"
	"strings"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// names holds, for one direction, the source group names longest first and the smallest set of names
// that every source name contains (for Mentions).
type names struct {
	longestFirst []string
	cores        [][]byte
}

var byDirection = map[string]names{
	translate.ToPrivate.String():  newNames(translate.ToPrivate),
	translate.ToUpstream.String(): newNames(translate.ToUpstream),
}

func newNames(d translate.Direction) names {
	var n names
	for _, g := range upstream.Groups {
		for _, name := range []string{g.Upstream, g.Private} {
			if d.Maps(name) {
				n.longestFirst = append(n.longestFirst, name)
			}
		}
	}
	sort.SliceStable(n.longestFirst, func(i, j int) bool { return len(n.longestFirst[i]) > len(n.longestFirst[j]) })
	// A name that contains another source name never needs its own bytes.Contains: the shorter one
	// matches wherever it does.
	for i, name := range n.longestFirst {
		covered := false
		for j, other := range n.longestFirst {
			if i != j && len(other) < len(name) && strings.Contains(name, other) {
				covered = true
				break
			}
		}
		if !covered {
			n.cores = append(n.cores, []byte(name))
		}
	}
	// Shortest first: the shortest core (cluster.hypershift.openshift.io) is the one most objects that
	// mention a group at all contain, near their beginning (apiVersion), so that Mentions of such an
	// object stops after a few bytes instead of searching all of it for the rarer names first.
	slices.Reverse(n.cores)
	return n
}

// Sources returns the group names d translates from, longest first.
func Sources(d translate.Direction) []string {
	return append([]string(nil), byDirection[d.String()].longestFirst...)
}

// Mentions reports whether data contains the name of a group d translates from, anywhere (a key, a value,
// a substring of a longer word), or a JSON escape that could spell part of one ("cluster.x\u002dk8s.io"
// decodes to cluster.x-k8s.io). False means no part of data can need translating in direction d, in any
// encoding whose strings are either raw bytes (protobuf) or JSON with escapes (JSON, and YAML converted
// to JSON).
func Mentions(d translate.Direction, data []byte) bool {
	for _, c := range byDirection[d.String()].cores {
		if bytes.Contains(data, c) {
			return true
		}
	}
	return escapesNameByte(data)
}

// escapesNameByte reports whether data holds a JSON \uXXXX escape of a byte that can occur in a group
// name (a DNS subdomain: a-z, 0-9, '-' and '.'). Escapes of other characters ('<', '&', non-ASCII text)
// cannot hide a group name.
func escapesNameByte(data []byte) bool {
	for {
		i := bytes.Index(data, []byte(`\u`))
		if i < 0 || i+6 > len(data) {
			return false
		}
		if r, ok := hex4(data[i+2 : i+6]); ok && isNameByte(r) {
			return true
		}
		data = data[i+2:]
	}
}

func hex4(b []byte) (rune, bool) {
	var r rune
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

func isNameByte(r rune) bool {
	return 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-' || r == '.'
}

// Replace replaces every whole group name d translates from in free text s (translate.Direction.Text),
// without reading s further where Mentions tells it names none.
func Replace(d translate.Direction, s string) string {
	if !Mentions(d, []byte(s)) {
		return s
	}
	return d.Text(s)
}
