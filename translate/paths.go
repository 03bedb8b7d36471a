package translate

import (
	"fmt"
	"strings"
)

// ValueKind says what a group-carrying JSON string holds.
type ValueKind int

const (
	// NoValue marks an inner node: the value itself carries no group.
	NoValue ValueKind = iota
	// APIVersionValue is a "group/version" string (apiVersion fields).
	APIVersionValue
	// GroupValue is a bare group (apiGroup fields).
	GroupValue
	// GroupKindValue is a "Kind.group" string (cloned-from-groupkind).
	GroupKindValue
)

// Node is a tree of the JSON paths inside one kind that can carry a group. Fields are JSON object keys,
// Items applies to every element of an array, Values to every value of a map. A nil *Node carries nothing.
type Node struct {
	Value  ValueKind
	Fields map[string]*Node
	Items  *Node
	Values *Node
}

// Paths builds a Node from path specs, one per group-carrying leaf, in the form the generator writes:
//
//	"apiVersion=apiVersion"                   a "group/version" string
//	"spec.infrastructureRef.apiGroup=group"   a bare group
//	"spec.topology.workers.machineDeployments[].bootstrap.ref.apiVersion=apiVersion"
//	"spec.values{}.apiGroup=group"            every value of a map
//	"metadata=objectMeta"                     ObjectMeta: ownerReferences, managedFields, annotations
//
// It panics on a malformed spec: specs come from generated code, so that is a generator bug.
func Paths(specs ...string) *Node {
	root := &Node{}
	for _, spec := range specs {
		path, kind, ok := strings.Cut(spec, "=")
		if !ok {
			panic(fmt.Sprintf("translate.Paths: %q has no '=kind'", spec))
		}
		n := root
		for _, seg := range strings.Split(path, ".") {
			field, rest := seg, ""
			if i := strings.IndexAny(seg, "[{"); i >= 0 {
				field, rest = seg[:i], seg[i:]
			}
			n = n.field(field)
			for ; rest != ""; rest = rest[2:] {
				switch {
				case strings.HasPrefix(rest, "[]"):
					n = n.items()
				case strings.HasPrefix(rest, "{}"):
					n = n.values()
				default:
					panic(fmt.Sprintf("translate.Paths: bad segment %q in %q", seg, spec))
				}
			}
		}
		switch kind {
		case "apiVersion":
			n.Value = APIVersionValue
		case "group":
			n.Value = GroupValue
		case "groupKind":
			n.Value = GroupKindValue
		case "objectMeta":
			n.merge(objectMetaPaths())
		default:
			panic(fmt.Sprintf("translate.Paths: unknown kind %q in %q", kind, spec))
		}
	}
	return root
}

// ObjectMetaPaths are the group-carrying paths of metav1.ObjectMeta, relative to "metadata". They are the
// JSON twin of Direction.ObjectMeta.
var ObjectMetaPaths = objectMetaPaths()

func objectMetaPaths() *Node {
	n := &Node{}
	n.field("ownerReferences").items().field("apiVersion").Value = APIVersionValue
	n.field("managedFields").items().field("apiVersion").Value = APIVersionValue
	annotations := n.field("annotations")
	for _, key := range groupKindAnnotations() {
		annotations.field(key).Value = GroupKindValue
	}
	return n
}

// MetadataPaths is the tree for any object that is not a mapped kind (a Secret owned by a Cluster): only its
// metadata can carry a mapped group.
var MetadataPaths = &Node{Fields: map[string]*Node{"metadata": ObjectMetaPaths}}

func (n *Node) field(name string) *Node {
	if n.Fields == nil {
		n.Fields = map[string]*Node{}
	}
	c, ok := n.Fields[name]
	if !ok {
		c = &Node{}
		n.Fields[name] = c
	}
	return c
}

func (n *Node) items() *Node {
	if n.Items == nil {
		n.Items = &Node{}
	}
	return n.Items
}

func (n *Node) values() *Node {
	if n.Values == nil {
		n.Values = &Node{}
	}
	return n.Values
}

func (n *Node) merge(o *Node) {
	if o == nil {
		return
	}
	if o.Value != NoValue {
		n.Value = o.Value
	}
	for k, c := range o.Fields {
		n.field(k).merge(c)
	}
	if o.Items != nil {
		n.items().merge(o.Items)
	}
	if o.Values != nil {
		n.values().merge(o.Values)
	}
}

// Child returns the node one JSON pointer token below n: a field name, or an array index ("0", "-") or a map
// key where n has Items or Values. It returns nil where nothing below carries a group.
func (n *Node) Child(token string) *Node {
	if n == nil {
		return nil
	}
	if c, ok := n.Fields[token]; ok {
		return c
	}
	if n.Items != nil && isArrayIndex(token) {
		return n.Items
	}
	return n.Values
}

// Pointer returns the node at a JSON pointer (RFC 6901, e.g. "/spec/infrastructureRef"), or nil.
func (n *Node) Pointer(pointer string) *Node {
	if pointer == "" {
		return n
	}
	if !strings.HasPrefix(pointer, "/") {
		return nil
	}
	for _, tok := range strings.Split(pointer[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if n = n.Child(tok); n == nil {
			return nil
		}
	}
	return n
}

func isArrayIndex(s string) bool {
	if s == "-" {
		return true
	}
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// JSON translates, in place, the group-carrying values below n of a value decoded by encoding/json
// (map[string]any, []any, string, ...), and returns the value (a string leaf is returned translated).
// Values of unexpected JSON types are left as they are: validation is the apiserver's job.
func (d Direction) JSON(n *Node, v any) any {
	if n == nil {
		return v
	}
	switch t := v.(type) {
	case string:
		switch n.Value {
		case APIVersionValue:
			return d.APIVersion(t)
		case GroupValue:
			return d.Group(t)
		case GroupKindValue:
			return d.GroupKind(t)
		}
	case map[string]any:
		if n.Values != nil {
			for k, c := range t {
				if _, named := n.Fields[k]; !named {
					t[k] = d.JSON(n.Values, c)
				}
			}
		}
		for k, c := range n.Fields {
			if cv, ok := t[k]; ok {
				t[k] = d.JSON(c, cv)
			}
		}
	case []any:
		if n.Items != nil {
			for i := range t {
				t[i] = d.JSON(n.Items, t[i])
			}
		}
	}
	return v
}
