package translate

import (
	"errors"
	"fmt"
)

// RewriteElements translates, in direction d, each element of the JSON array data along the tree nodeOf
// returns for its index (nil leaves the element as it is), and returns the array with every other byte as
// it was (see Rewrite). A JSON patch (RFC 6902) is such an array: each operation's value is translated with
// the sub-tree at that operation's path. It fails on malformed JSON, trailing data, or a document that is
// not an array.
func (d Direction) RewriteElements(data []byte, nodeOf func(i int) *Node) ([]byte, error) {
	if _, err := d.Rewrite(&Node{}, data); err != nil {
		return nil, err // malformed
	}
	rw := &rewriter{d: d, in: data}
	i := skipSpace(data, 0)
	if data[i] != '[' {
		return nil, errors.New("want a JSON array")
	}
	i = skipSpace(data, i+1)
	for idx := 0; data[i] != ']'; idx++ {
		end, err := rw.value(i, nodeOf(idx), 1)
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", idx, err)
		}
		i = skipSpace(data, end)
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	if !rw.changed {
		return data, nil
	}
	return append(rw.out, data[rw.copied:]...), nil
}

// SameShape reports whether the trees a and b hold the same group-carrying paths of the same kinds, map
// keys included, so that a value moved from below one to below the other is stored in the same terms
// either way (a JSON patch's copy from spec.infrastructureRef to spec.bootstrap.configRef). A nil tree and
// one without any group-carrying leaf or key are the same shape.
func SameShape(a, b *Node) bool {
	if a.empty() || b.empty() {
		return a.empty() && b.empty()
	}
	if a.Value != b.Value || a.Keys != b.Keys || !SameShape(a.Items, b.Items) || !SameShape(a.Values, b.Values) {
		return false
	}
	for k, c := range a.Fields {
		if !SameShape(c, b.Fields[k]) {
			return false
		}
	}
	for k, c := range b.Fields {
		if _, ok := a.Fields[k]; !ok && !c.empty() {
			return false
		}
	}
	return true
}

// empty reports whether no group-carrying leaf or map key lies at or below n.
func (n *Node) empty() bool {
	if n == nil {
		return true
	}
	if n.Value != NoValue || n.Keys != NoValue || !n.Items.empty() || !n.Values.empty() {
		return false
	}
	for _, c := range n.Fields {
		if !c.empty() {
			return false
		}
	}
	return true
}
