package translate

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"unicode/utf8"
)

// Rewrite translates, in direction d, the group-carrying string values below n of the JSON document data
// (the byte-level twin of Direction.JSON) and returns the document with every other byte as it was:
// member order, whitespace, number formatting, string escapes, and null versus absent all survive. A
// document in which nothing changes is returned as it is (the same slice).
//
// Object members are matched against n.Fields (exact, case-sensitive keys, after unescaping, as
// kube-apiserver decodes), and against n.Values where no field is named; array elements against n.Items.
// Where n has Keys, each member key is translated too, and written back as it was but for the group. A
// rule or resource attributes object (RuleValue, ResourceAttributesValue) is first scanned for its groups
// and resources, which decide whether its names are CRD names (see RuleCoversCRDs). A translated string
// is written in the form kube-apiserver writes strings (encoding/json's). Values of unexpected JSON
// types at a group-carrying path are left alone, as Direction.JSON leaves them. It fails on malformed
// JSON, or on trailing data after the document.
func (d Direction) Rewrite(n *Node, data []byte) ([]byte, error) {
	if n == nil {
		return data, nil
	}
	if err := Valid(data); err != nil {
		return nil, err
	}
	return d.RewriteValid(n, data)
}

// Valid returns nil for a well-formed JSON document, and else an error that says what is wrong with it.
func Valid(data []byte) error {
	if end, err := Scan(data, skipSpace(data, 0)); err == nil && skipSpace(data, end) == len(data) {
		return nil
	}
	// json.Unmarshal explains what is wrong with it.
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	return errors.New("invalid JSON")
}

// RewriteValid is Rewrite of a document Valid accepted, without validating it again (a caller that reads
// the document in several ways validates it once).
func (d Direction) RewriteValid(n *Node, data []byte) ([]byte, error) {
	if n == nil {
		return data, nil
	}
	rw := &rewriter{d: d, in: data}
	if err := rw.document(n); err != nil {
		return nil, err
	}
	if !rw.changed {
		return data, nil
	}
	return append(rw.out, data[rw.copied:]...), nil
}

// AppendRewriteValid is RewriteValid that appends the translation to dst and returns the extended
// buffer, as strconv's Append functions do: a caller that translates many documents (the items of a
// list) reuses one buffer instead of allocating one per document. data must not overlap dst's spare
// capacity. On error, dst is returned as it was.
func (d Direction) AppendRewriteValid(dst []byte, n *Node, data []byte) ([]byte, error) {
	if n == nil {
		return append(dst, data...), nil
	}
	rw := &rewriter{d: d, in: data, out: dst}
	if err := rw.document(n); err != nil {
		return dst, err
	}
	return append(rw.out, data[rw.copied:]...), nil
}

// ErrTypeMetaRepeated is AppendRewriteValidTypeMetaFirst's error for an object with a later top-level
// member named apiVersion or kind (or with an escaped key, which could spell one): the members it read
// first are then not the ones a decoder keeps (the last of duplicates wins).
var ErrTypeMetaRepeated = errors.New("apiVersion or kind repeated at the top level")

// LeadingTypeMeta returns the apiVersion and kind of a JSON object Valid accepted when they are its
// first two members, in either order, as plain strings without escapes (as kube-apiserver writes every
// object: an object encoded from a map has sorted keys, a typed one TypeMeta first), reading nothing
// after them; ok is false otherwise (then TopLevelStrings reads them).
func LeadingTypeMeta(data []byte) (apiVersion, kind string, ok bool) {
	a, k, ok := LeadingTypeMetaBytes(data)
	return string(a), string(k), ok
}

// LeadingTypeMetaBytes is LeadingTypeMeta returning data's own bytes. It reads any data safely (the
// start of an object not validated yet, or of a buffer that ends inside it): what it returns is then
// what LeadingTypeMeta reads from the object were it valid, or ok is false, and the caller's validation
// of the rest decides.
func LeadingTypeMetaBytes(data []byte) (apiVersion, kind []byte, ok bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, nil, false
	}
	i = skipSpace(data, i+1)
	// plain returns the string starting at i without its quotes and the offset after it, if it is
	// whole and has no escapes.
	plain := func(i int) ([]byte, int, bool) {
		if i >= len(data) || data[i] != '"' {
			return nil, 0, false
		}
		end := stringEnd(data, i)
		if end-1 <= i || data[end-1] != '"' || bytes.IndexByte(data[i:end], '\\') >= 0 {
			return nil, 0, false
		}
		return data[i+1 : end-1], end, true
	}
	for m := 0; m < 2; m++ {
		key, keyEnd, ok := plain(i)
		if !ok {
			return nil, nil, false
		}
		if i = skipSpace(data, keyEnd); i >= len(data) || data[i] != ':' {
			return nil, nil, false
		}
		value, end, ok := plain(skipSpace(data, i+1))
		if !ok {
			return nil, nil, false
		}
		switch {
		case string(key) == "apiVersion" && apiVersion == nil:
			apiVersion = value
		case string(key) == "kind" && kind == nil:
			kind = value
		default:
			return nil, nil, false
		}
		i = skipSpace(data, end)
		if m == 0 && (i >= len(data) || data[i] != ',') {
			return nil, nil, false
		}
		i = skipSpace(data, i+1)
	}
	return apiVersion, kind, true
}

// AppendRewriteValidTypeMetaFirst is AppendRewriteValid for an object whose tree n was chosen by the
// apiVersion and kind LeadingTypeMeta read: it fails with ErrTypeMetaRepeated, having appended nothing,
// when a later top-level member could override them, so that one pass over the object both translates
// it and proves the choice right.
func (d Direction) AppendRewriteValidTypeMetaFirst(dst []byte, n *Node, data []byte) ([]byte, error) {
	if n == nil {
		n = &Node{} // the top level is still walked, to see its keys
	}
	rw := &rewriter{d: d, in: data, out: dst, top: skipSpace(data, 0), guardTop: true}
	if err := rw.document(n); err != nil {
		return dst, err
	}
	return append(rw.out, data[rw.copied:]...), nil
}

// AppendRewriteTypeMetaFirst is AppendRewriteValidTypeMetaFirst for the JSON value data begins with
// (no leading whitespace; what follows it is not read), validated in the same pass exactly as Scan
// validates it: it returns the extended buffer and the offset just after the value, so that a stream
// validates, delimits and translates each item of a list in one pass instead of two. It fails, having
// appended nothing, with ErrIncomplete when data ends inside the value (a stream reads more and calls
// it again), with Scan's error for a byte that cannot be where it is, and with ErrTypeMetaRepeated (of
// an object that may be malformed further on) or the error of a translation. data must not overlap
// dst's spare capacity.
func (d Direction) AppendRewriteTypeMetaFirst(dst []byte, n *Node, data []byte) ([]byte, int, error) {
	if n == nil {
		n = &Node{}
	}
	rw := &rewriter{d: d, in: data, out: dst, guardTop: true, validate: true}
	end, err := rw.value(0, n, 0)
	if err != nil {
		return dst, end, err
	}
	return append(rw.out, data[rw.copied:end]...), end, nil
}

// rewriter walks a JSON document. Unless validate is set, the document is one json.Valid accepted, and
// the values below no path are skipped without being checked; with validate, every byte is checked as
// Scan checks it, and the walk fails where Scan would (ErrIncomplete at the end of in). out is what was
// written so far (nil until the first replacement when the rewrite allocates its own buffer);
// in[copied:] is what has not been copied to out yet; changed is set at the first replacement.
type rewriter struct {
	d        Direction
	in       []byte
	out      []byte
	copied   int
	changed  bool
	validate bool
	// With guardTop, the members of the top-level object (at offset top) after its first two must
	// not be named apiVersion or kind (AppendRewriteValidTypeMetaFirst).
	guardTop bool
	top      int
}

// document walks the whole document along n.
func (rw *rewriter) document(n *Node) error {
	end, err := rw.value(skipSpace(rw.in, 0), n, 0)
	if err != nil {
		return err
	}
	if skipSpace(rw.in, end) != len(rw.in) {
		return fmt.Errorf("invalid character after top-level value at offset %d", end)
	}
	return nil
}

// value walks the value starting at i (no leading whitespace), nested depth levels deep, and returns
// the offset just after it.
func (rw *rewriter) value(i int, n *Node, depth int) (int, error) {
	if rw.validate {
		if n == nil || i >= len(rw.in) {
			// Nothing below: checked, not walked.
			return scanValue(rw.in, i, depth)
		}
	} else if n == nil {
		// Nothing below: skipped, not walked.
		return valueEnd(rw.in, i), nil
	}
	switch rw.in[i] {
	case '{':
		return rw.object(i, n, depth+1)
	case '[':
		return rw.array(i, n, depth+1)
	case '"':
		end, err := rw.stringEnd(i)
		if err == nil && n.Value != NoValue {
			err = rw.leaf(i, end, n.Value)
		}
		return end, err
	}
	if rw.validate {
		return scanValue(rw.in, i, depth)
	}
	// A number, true, false or null: it ends where a delimiter or space begins.
	j := i
	for j < len(rw.in) && !isDelimiter(rw.in[j]) {
		j++
	}
	return j, nil
}

// stringEnd returns the offset just after the string starting at in[i] (a '"'), checked with validate.
func (rw *rewriter) stringEnd(i int) (int, error) {
	if rw.validate {
		return scanString(rw.in, i)
	}
	return stringEnd(rw.in, i), nil
}

// object walks the object starting at in[i]; with validate, its checks are scanObject's.
func (rw *rewriter) object(i int, n *Node, depth int) (int, error) {
	in := rw.in
	if rw.validate && depth > maxNestingDepth {
		return i, errors.New("exceeded max depth")
	}
	if n.Value == RuleValue || n.Value == ResourceAttributesValue {
		end := 0
		if rw.validate {
			var err error
			if end, err = scanObject(in, i, depth); err != nil {
				return end, err
			}
		} else {
			end = valueEnd(in, i)
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(in[i:end], &members); err != nil {
			return 0, err
		}
		if n.namesCRDs(func(key string) any { return decodeMember(members[key]) }) {
			n = n.withCRDNames()
		}
	}
	guard := rw.guardTop && i == rw.top
	i = skipSpace(in, i+1)
	if i < len(in) && in[i] == '}' {
		return i + 1, nil
	}
	for m := 0; ; m++ {
		if rw.validate {
			if i >= len(in) {
				return i, ErrIncomplete
			}
			if in[i] != '"' {
				return i, syntaxError(in, i, "looking for beginning of object key string")
			}
		}
		keyEnd, err := rw.stringEnd(i)
		if err != nil {
			return keyEnd, err
		}
		lit := in[i:keyEnd]
		escaped := bytes.IndexByte(lit, '\\') >= 0
		if guard && m >= 2 && (string(lit) == `"apiVersion"` || string(lit) == `"kind"` || escaped) {
			return 0, ErrTypeMetaRepeated
		}
		child := n.Values
		if !escaped && n.Keys == NoValue {
			// The common case; the conversion in the index expression does not allocate.
			if c, ok := n.child(lit[1 : len(lit)-1]); ok {
				child = c
			}
		} else {
			key, err := unquote(lit)
			if err != nil {
				return 0, err
			}
			if c, ok := n.Fields[key]; ok {
				child = c
			}
			if n.Keys != NoValue {
				rw.replace(i, keyEnd, key, rw.d.Value(n.Keys, key))
			}
		}
		i = skipSpace(in, keyEnd)
		if rw.validate {
			if i >= len(in) {
				return i, ErrIncomplete
			}
			if in[i] != ':' {
				return i, syntaxError(in, i, "after object key")
			}
		}
		end, err := rw.value(skipSpace(in, i+1), child, depth)
		if err != nil {
			return end, err
		}
		i = skipSpace(in, end)
		if i >= len(in) {
			return i, ErrIncomplete
		}
		switch in[i] {
		case '}':
			return i + 1, nil
		case ',':
			i = skipSpace(in, i+1)
		default:
			return i, syntaxError(in, i, "after object key:value pair")
		}
	}
}

// array walks the array starting at in[i]; with validate, its checks are scanArray's.
func (rw *rewriter) array(i int, n *Node, depth int) (int, error) {
	in := rw.in
	if rw.validate && depth > maxNestingDepth {
		return i, errors.New("exceeded max depth")
	}
	i = skipSpace(in, i+1)
	if i < len(in) && in[i] == ']' {
		return i + 1, nil
	}
	for {
		end, err := rw.value(i, n.Items, depth)
		if err != nil {
			return end, err
		}
		i = skipSpace(in, end)
		if i >= len(in) {
			return i, ErrIncomplete
		}
		switch in[i] {
		case ']':
			return i + 1, nil
		case ',':
			i = skipSpace(in, i+1)
		default:
			return i, syntaxError(in, i, "after array element")
		}
	}
}

// leaf translates the string in[start:end] (quotes included) holding a value of kind k.
func (rw *rewriter) leaf(start, end int, k ValueKind) error {
	lit := rw.in[start:end]
	if k != TextValue && bytes.IndexByte(lit, '\\') < 0 {
		// A literal without escapes holds its value as it is: only the group's bytes are replaced,
		// without a string made of the value.
		from, to, group, ok := rw.d.groupIn(k, lit[1:len(lit)-1])
		if ok {
			rw.grow()
			rw.out = append(rw.out, rw.in[rw.copied:start+1+from]...)
			rw.out = append(rw.out, group...)
			rw.copied = start + 1 + to
		}
		return nil
	}
	s, err := unquote(lit)
	if err != nil {
		return err
	}
	rw.replace(start, end, s, rw.d.Value(k, s))
	return nil
}

// grow makes out ready for a first replacement.
func (rw *rewriter) grow() {
	if rw.out == nil {
		// Room for the whole document, and for names that grow (a private group is longer).
		rw.out = make([]byte, 0, len(rw.in)+len(rw.in)/16+64)
	}
	rw.changed = true
}

// replace replaces the string literal in[start:end], which holds s, by t unless they are equal.
func (rw *rewriter) replace(start, end int, s, t string) {
	if t == s {
		return
	}
	rw.grow()
	rw.out = append(rw.out, rw.in[rw.copied:start]...)
	if bytes.IndexByte(rw.in[start:end], '\\') < 0 {
		// A literal without escapes holds s as it is; t is s with a group name (plain letters, digits, '.'
		// and '-') swapped, so the rest of the literal's bytes are kept as they were.
		rw.out = append(rw.out, '"')
		rw.out = append(rw.out, t...)
		rw.out = append(rw.out, '"')
	} else {
		rw.out = appendString(rw.out, t)
	}
	rw.copied = end
}

// decodeMember decodes one member of an object (exact keys; the last of duplicate members wins, as in
// kube-apiserver's decoder), or returns nil if it is absent or does not decode (a number out of range).
func decodeMember(raw json.RawMessage) any {
	var v any
	if raw == nil || json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

// unquote decodes a JSON string literal (quotes included); the common case without escapes is a copy.
func unquote(lit []byte) (string, error) {
	if bytes.IndexByte(lit, '\\') < 0 {
		return string(lit[1 : len(lit)-1]), nil
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return "", err
	}
	return s, nil
}

// appendString appends s as a JSON string as kube-apiserver encodes strings (encoding/json, which also
// escapes '<', '>' and '&'; group names never hold them).
func appendString(dst []byte, s string) []byte {
	plain := utf8.ValidString(s)
	for i := 0; plain && i < len(s); i++ {
		plain = s[i] >= 0x20 && s[i] != '"' && s[i] != '\\' && s[i] != '<' && s[i] != '>' && s[i] != '&'
	}
	if plain {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	encoded, _ := json.Marshal(s) // a string always encodes
	return append(dst, encoded...)
}

// TopLevelStrings returns, for each of names, the string value of the top-level member of that name of a
// JSON object Valid accepted, read as kube-apiserver's decoder reads members: names matched exactly (after
// decoding escapes), the last of duplicate members winning. A name without a member, or whose value is no
// string, gets "". The document is scanned once, each value skipped without being decoded (the apiVersion
// and kind of a 1 MiB object cost one pass over its bytes).
func TopLevelStrings(data []byte, names ...string) []string {
	out := make([]string, len(names))
	EachMember(data, func(key []byte, start, end int) bool {
		for k, name := range names {
			if string(key) == name {
				out[k] = ""
				if data[start] == '"' {
					if v, err := unquote(data[start:end]); err == nil {
						out[k] = v
					}
				}
			}
		}
		return true
	})
	return out
}

// EachMember calls fn for each top-level member of a JSON object Valid accepted, in their order, with the
// member's key, its escapes decoded (a slice of data when it has none, else a copy), and the offsets of
// its value in data, data[start:end], until fn returns false. A document that is not an object has no
// members.
func EachMember(data []byte, fn func(key []byte, start, end int) bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return
	}
	i = skipSpace(data, i+1)
	for i < len(data) && data[i] == '"' {
		keyEnd := stringEnd(data, i)
		key := data[i+1 : keyEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			decoded, err := unquote(data[i:keyEnd])
			if err != nil {
				return
			}
			key = []byte(decoded)
		}
		i = skipSpace(data, skipSpace(data, keyEnd)+1) // ':'
		end := valueEnd(data, i)
		if !fn(key, i, end) {
			return
		}
		i = skipSpace(data, end)
		if i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
}

// valueEnd returns the offset just after the JSON value starting at i (no leading whitespace) of a
// document json.Valid accepted.
func valueEnd(in []byte, i int) int {
	switch in[i] {
	case '"':
		return stringEnd(in, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(in); j++ {
			switch in[j] {
			case '"':
				j = stringEnd(in, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(in)
	}
	j := i
	for j < len(in) && !isDelimiter(in[j]) {
		j++
	}
	return j
}

// stringEnd returns the offset just after the JSON string starting at i (a '"').
func stringEnd(in []byte, i int) int {
	j := i + 1
	for {
		// Eight bytes at a time to the next quote or backslash (the lowest flagged byte of a word is a
		// true one), then byte by byte.
		for ; j+8 <= len(in); j += 8 {
			if m := quoteOrBackslash(binary.LittleEndian.Uint64(in[j:])); m != 0 {
				j += bits.TrailingZeros64(m) >> 3
				break
			}
		}
		for j < len(in) && in[j] != '"' && in[j] != '\\' {
			j++
		}
		switch {
		case j >= len(in):
			return len(in)
		case in[j] == '"':
			return j + 1
		}
		j += 2 // a backslash and the character it escapes
	}
}

// skipSpace returns the offset of the first byte at or after i that is not JSON whitespace. Every
// whitespace byte is at most ' ', which kube-apiserver's JSON has none of: one comparison in the common
// case.
func skipSpace(in []byte, i int) int {
	for i < len(in) && in[i] <= ' ' && (in[i] == ' ' || in[i] == '\t' || in[i] == '\n' || in[i] == '\r') {
		i++
	}
	return i
}

func isDelimiter(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}
