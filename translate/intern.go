package translate

import (
	"slices"
	"strconv"
	"strings"
)

// interner makes equal subtrees one Node. The generated route table has a tree per kind and version
// (about 200), and they repeat whole subtrees: every kind's metadata (ownerReferences, managedFields and
// the group-carrying annotations: about ten Nodes and four maps each), and references that many kinds
// share. NewTable interns its routes' trees, so that each distinct subtree is held once; the interner
// itself is dropped after.
//
// Sharing is safe because a tree is never changed once Paths has returned it (withCRDNames copies).
type interner struct {
	nodes map[string]*Node // by key: the shared Node of every distinct subtree seen
	ids   map[*Node]int    // a number per shared Node, for the keys of their parents
}

func newInterner() *interner {
	return &interner{nodes: map[string]*Node{}, ids: map[*Node]int{}}
}

// intern returns the shared Node equal to n, after sharing n's subtrees (in n itself: n's own maps and
// fields point at shared Nodes afterwards, whether or not n is the one kept). Two Nodes are equal when
// they have the same Value and Keys, the same field names added the same way (keyLens, fieldsAdded) over
// equal subtrees, and equal Items and Values. It writes only where a subtree changes, so that interning
// trees shared already (a second NewTable of the same routes) writes nothing that readers may be reading.
func (in *interner) intern(n *Node) *Node {
	if n == nil {
		return nil
	}
	if _, ok := in.ids[n]; ok {
		return n // shared already (a subtree two trees held as one before)
	}
	if s := in.intern(n.Items); s != n.Items {
		n.Items = s
	}
	if s := in.intern(n.Values); s != n.Values {
		n.Values = s
	}
	names := make([]string, 0, len(n.Fields))
	for name, c := range n.Fields {
		if s := in.intern(c); s != c {
			n.Fields[name] = s
		}
		names = append(names, name)
	}
	slices.Sort(names)

	// Children are shared already, so equal children are one Node with one number.
	var key strings.Builder
	for _, v := range []int{int(n.Value), int(n.Keys), int(n.keyLens), int(n.fieldsAdded), in.id(n.Items), in.id(n.Values)} {
		key.WriteString(strconv.Itoa(v))
		key.WriteByte(' ')
	}
	for _, name := range names {
		key.WriteString(strconv.Quote(name))
		key.WriteString(strconv.Itoa(in.id(n.Fields[name])))
		key.WriteByte(' ')
	}
	if s, ok := in.nodes[key.String()]; ok {
		return s
	}
	in.nodes[key.String()] = n
	in.ids[n] = len(in.ids) + 1
	return n
}

// id is the number of a shared Node, 0 for nil.
func (in *interner) id(n *Node) int {
	if n == nil {
		return 0
	}
	return in.ids[n]
}
