package translate

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"unicode/utf8"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// TestArrayIndex: every index form kube-apiserver's JSON patch library takes (strconv.Atoi, and "-"), and
// none it refuses.
func TestArrayIndex(t *testing.T) {
	for _, tok := range []string{"0", "1", "00", "007", "+0", "+1", "-0", "-1", "-10", "-", "9223372036854775807", "-9223372036854775808"} {
		if !ArrayIndex(tok) {
			t.Errorf("ArrayIndex(%q) = false, the library reads it as an index", tok)
		}
	}
	for _, tok := range []string{"", "+", "--", "-+1", "+-1", "1.0", "1e0", "0x1", " 1", "1 ", "1_0", "٣", "a", "~1", "9223372036854775808", "-9223372036854775809"} {
		if ArrayIndex(tok) {
			t.Errorf("ArrayIndex(%q) = true, the library refuses it", tok)
		}
	}
}

// TestPointerTokens: pointers split and unescaped as the library's findObject and decodePatchKey do.
func TestPointerTokens(t *testing.T) {
	for _, tc := range []struct {
		pointer string
		want    []string
		ok      bool
	}{
		{"", nil, true},
		{"apiVersion", nil, false},
		{"/", []string{""}, true},
		{"/apiVersion", []string{"apiVersion"}, true},
		{"x/apiVersion", []string{"apiVersion"}, true},
		{"metadata/ownerReferences/0", []string{"ownerReferences", "0"}, true},
		{"//a", []string{"", "a"}, true},
		{"/a~1b/c~0d", []string{"a/b", "c~d"}, true},
		{"/~01", []string{"~1"}, true},
		{"/~10", []string{"/0"}, true},
		{"/~~1~2~", []string{"~/~2~"}, true},
	} {
		got, ok := PointerTokens(tc.pointer)
		if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("PointerTokens(%q) = %q, %v; want %q, %v", tc.pointer, got, ok, tc.want, tc.ok)
		}
	}
}

// TestNodePointerIndices: every index form the library takes reaches the items of an array, wherever the
// pointer starts.
func TestNodePointerIndices(t *testing.T) {
	n := Paths("apiVersion=apiVersion", "metadata=objectMeta")
	for _, p := range []string{
		"/metadata/ownerReferences/-1/apiVersion", "/metadata/ownerReferences/+0/apiVersion", "/metadata/ownerReferences/00/apiVersion",
		"/metadata/ownerReferences/-0/apiVersion", "/metadata/ownerReferences/-/apiVersion", "/metadata/managedFields/-3/apiVersion",
		"x/metadata/ownerReferences/1/apiVersion", "/apiVersion", "x/apiVersion", "apiVersion/apiVersion",
	} {
		if got := n.Pointer(p); got == nil || got.Value != APIVersionValue {
			t.Errorf("Pointer(%q) = %+v, want an apiVersion", p, got)
		}
	}
	for _, p := range []string{"/metadata/ownerReferences/1.0/apiVersion", "/metadata/ownerReferences/ 1/apiVersion", "apiVersion", "/metadata/ownerReferences/0x0/apiVersion"} {
		if got := n.Pointer(p); got != nil {
			t.Errorf("Pointer(%q) = %+v, want nil", p, got)
		}
	}
}

// FuzzPointerTokens holds PointerTokens and ArrayIndex to kube-apiserver's JSON patch library
// (gopkg.in/evanphx/json-patch.v4, negative indices on as in the apiserver): a document built from the
// tokens PointerTokens reads in pointer has a value at pointer for the library, and an array operation
// at token succeeds exactly where ArrayIndex and the library's bounds say, with the same result.
func FuzzPointerTokens(f *testing.F) {
	for _, seed := range []string{"", "/", "/a", "a/b", "x", "/a~1b~0c", "/~01", "/-", "/-1", "/+0", "/00", "/-0", "/3", "/-4", "/1.0", "/ 1", "/0x1", "/99999999999999999999"} {
		f.Add(seed, uint8(3))
	}
	f.Fuzz(func(t *testing.T, pointer string, length uint8) {
		if !utf8.ValidString(pointer) {
			return // a JSON string would hold U+FFFD instead
		}
		tokens, ok := PointerTokens(pointer)
		leaf := json.RawMessage(`"leaf"`)
		var doc any = leaf
		for i := len(tokens) - 1; i >= 0; i-- {
			doc = map[string]any{tokens[i]: doc}
		}
		if len(tokens) == 0 {
			doc = map[string]any{"a": leaf}
		}
		// test finds the value at pointer (the whole document at "").
		value := leaf
		if len(tokens) == 0 {
			value = mustJSON(t, doc)
		}
		_, err := applyOne(t, doc, map[string]any{"op": "test", "path": pointer, "value": value})
		if found := err == nil; found != ok {
			t.Errorf("PointerTokens(%q) = %q, %v; the library finds a value there: %v (%v)", pointer, tokens, ok, found, err)
		}

		if !ok || len(tokens) == 0 {
			return
		}
		// The last token as an index of an array of length n.
		tok := tokens[len(tokens)-1]
		n := int(length % 4)
		arr := make([]any, n)
		for i := range arr {
			arr[i] = i
		}
		at := "/a/" + escapePointerToken(tok)
		idx, atoiErr := strconv.Atoi(tok)
		if ArrayIndex(tok) != (tok == "-" || atoiErr == nil) {
			t.Fatalf("ArrayIndex(%q) = %v", tok, ArrayIndex(tok))
		}
		// get, replace and remove: an existing element, counted from the end when negative.
		existing, inRange := idx, ArrayIndex(tok) && tok != "-" && idx >= -n && idx < n
		if idx < 0 {
			existing += n
		}
		for _, op := range []string{"test", "replace", "remove"} {
			o := map[string]any{"op": op, "path": at, "value": existing}
			if op == "replace" {
				o["value"] = "new"
			}
			got, err := applyOne(t, map[string]any{"a": arr}, o)
			if (err == nil) != inRange {
				t.Errorf("%s at %q of %d elements: ArrayIndex %v, in range %v; the library: %v", op, tok, n, ArrayIndex(tok), inRange, err)
				continue
			}
			if err != nil {
				continue
			}
			want := append([]any(nil), arr...)
			switch op {
			case "replace":
				want[existing] = "new"
			case "remove":
				want = append(want[:existing], want[existing+1:]...)
			}
			equalArray(t, op+" at "+tok, got, want)
		}
		// add: before an element or at the end ("-", n, or -1), counted from the end when negative.
		insert, addable := idx, ArrayIndex(tok) && (tok == "-" || idx >= -(n+1) && idx <= n)
		switch {
		case tok == "-":
			insert = n
		case idx < 0:
			insert += n + 1
		}
		got, err := applyOne(t, map[string]any{"a": arr}, map[string]any{"op": "add", "path": at, "value": "new"})
		if (err == nil) != addable {
			t.Errorf("add at %q of %d elements: ArrayIndex %v, addable %v; the library: %v", tok, n, ArrayIndex(tok), addable, err)
		} else if err == nil {
			want := append(append(append([]any(nil), arr[:insert]...), "new"), arr[insert:]...)
			equalArray(t, "add at "+tok, got, want)
		}
	})
}

// applyOne applies one operation to doc with the library and returns the result's "a".
func applyOne(t *testing.T, doc any, op map[string]any) (any, error) {
	t.Helper()
	p, err := jsonpatch.DecodePatch(mustJSON(t, []any{op}))
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply(mustJSON(t, doc))
	if err != nil {
		return nil, err
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	return v["a"], nil
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func equalArray(t *testing.T, what string, got any, want []any) {
	t.Helper()
	var w any
	if err := json.Unmarshal(mustJSON(t, want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, w) {
		t.Errorf("%s: the library gives %v, want %v", what, got, w)
	}
}
