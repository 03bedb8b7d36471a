package model

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"k8s.io/gengo/v2/types"
)

// Special is how the converters translate a type that package translate owns.
type Special string

const (
	// SpecialObjectMeta is metav1.ObjectMeta: translate.Direction.ObjectMeta.
	SpecialObjectMeta Special = "ObjectMeta"
	// SpecialTypeMeta is metav1.TypeMeta: translate.Direction.TypeMeta.
	SpecialTypeMeta Special = "TypeMeta"
	// SpecialObjectReference is corev1.ObjectReference: translate.Direction.ObjectReference.
	SpecialObjectReference Special = "ObjectReference"
	// SpecialTypedLocalObjectReference is corev1.TypedLocalObjectReference:
	// translate.Direction.TypedLocalObjectReference.
	SpecialTypedLocalObjectReference Special = "TypedLocalObjectReference"
)

// specials are the shared Kubernetes types that carry a group, each with its translate helper and its
// group-carrying JSON paths (relative to the field holding it).
var specials = map[types.Name]struct {
	helper Special
	paths  []string
}{
	{Package: metav1Path, Name: "ObjectMeta"}:                {SpecialObjectMeta, []string{"=objectMeta"}},
	{Package: metav1Path, Name: "TypeMeta"}:                  {SpecialTypeMeta, []string{"apiVersion=apiVersion"}},
	{Package: corev1Path, Name: "ObjectReference"}:           {SpecialObjectReference, []string{"apiVersion=apiVersion"}},
	{Package: corev1Path, Name: "TypedLocalObjectReference"}: {SpecialTypedLocalObjectReference, []string{"apiGroup=group"}},
}

// knownScalars are shared types that encode themselves (MarshalJSON) as a plain JSON scalar that never
// holds a group.
var knownScalars = map[types.Name]bool{
	{Package: metav1Path, Name: "Time"}:                                   true,
	{Package: metav1Path, Name: "MicroTime"}:                              true,
	{Package: metav1Path, Name: "Duration"}:                               true,
	{Package: "k8s.io/apimachinery/pkg/api/resource", Name: "Quantity"}:   true,
	{Package: "k8s.io/apimachinery/pkg/util/intstr", Name: "IntOrString"}: true,
}

// SpecialOf returns the translate helper of t, or "".
func SpecialOf(t *types.Type) Special { return specials[t.Name].helper }

// Opaque reports whether t passes through untouched: a free-form JSON type listed in Tables.OpaqueTypes,
// or a type of another API listed in Tables.ForeignTypes.
func (m *Model) Opaque(t *types.Type) bool {
	key := t.Name.Package + "." + t.Name.Name
	_, opaque := m.tables.OpaqueTypes[key]
	_, foreign := m.tables.ForeignTypes[key]
	return opaque || foreign
}

// OpaqueTable names the table that lists t as passed through ("OpaqueTypes" or "ForeignTypes"), or "".
func (m *Model) OpaqueTable(t *types.Type) string {
	key := t.Name.Package + "." + t.Name.Name
	if _, ok := m.tables.OpaqueTypes[key]; ok {
		return "OpaqueTypes"
	}
	if _, ok := m.tables.ForeignTypes[key]; ok {
		return "ForeignTypes"
	}
	return ""
}

// GroupField returns how a field of owner carries a group: "apiVersion" ("group/version"), "group" (a bare
// group) or "" (it does not, or it is listed in Tables.NotGroupFields), judged by its JSON name and its
// (pointer to) string type.
func (m *Model) GroupField(owner *types.Type, mem types.Member) string {
	if _, ok := m.tables.NotGroupFields[owner.Name.Package+"."+owner.Name.Name+"."+mem.Name]; ok {
		return ""
	}
	t := mem.Type
	if t.Kind == types.Pointer {
		t = t.Elem
	}
	if t != types.String {
		return ""
	}
	switch JSONName(mem) {
	case "apiVersion":
		return "apiVersion"
	case "apiGroup":
		return "group"
	}
	return ""
}

// JSONName returns the JSON name of a struct field as encoding/json reads its tag: "" for an inlined
// (embedded or ",inline") one, "-" for a field that is not serialized, the Go name for a field without a
// name in its tag.
func JSONName(mem types.Member) string {
	name, opts, _ := strings.Cut(reflect.StructTag(mem.Tags).Get("json"), ",")
	if name == "" && (mem.Embedded || slices.Contains(strings.Split(opts, ","), "inline")) {
		return ""
	}
	if name == "" {
		return mem.Name
	}
	return name
}

// Carries reports whether values of t can hold a group anywhere inside, so that they need a converter
// rather than a memory copy.
func (m *Model) Carries(t *types.Type) bool { return m.carries[t] }

// classify computes Carries for every type reachable from a kind (a fixpoint, so recursive types such as
// JSONSchemaProps settle), and fails on a type it cannot see into.
func (m *Model) classify() error {
	var all []*types.Type
	var problems []Problem
	add := func(t *types.Type, format string, args ...any) {
		p := Problem{Message: fmt.Sprintf(format, args...)}
		if t != nil && t.Name.Package != "" {
			p.Type = t.Name.Package + "." + t.Name.Name
		}
		problems = append(problems, p)
	}
	seen := map[*types.Type]bool{}
	var walk func(t *types.Type, where string)
	walk = func(t *types.Type, where string) {
		if t == nil || seen[t] {
			return
		}
		seen[t] = true
		all = append(all, t)
		if _, ok := specials[t.Name]; ok || knownScalars[t.Name] || m.Opaque(t) {
			return
		}
		if encodesItself(t) && m.PackageOf(t) != nil {
			// A mirrored type with its own JSON encoding: its private twin is an alias of it, so it keeps
			// the encoding. Its fields are still walked, and it must not carry a group (checked below).
			m.aliased[t] = true
		} else if encodesItself(t) {
			add(t, "%s: type %s encodes itself (MarshalJSON) and may hide a group: "+
				"list it in upstream.OpaqueTypes with the reason it never carries one", where, t.Name)
			return
		}
		switch t.Kind {
		case types.Struct:
			for _, mem := range t.Members {
				walk(mem.Type, where+"."+mem.Name)
			}
		case types.Pointer, types.Slice, types.Array:
			walk(t.Elem, where+"[]")
		case types.Map:
			walk(t.Key, where+"{key}")
			walk(t.Elem, where+"{}")
		case types.Alias:
			walk(t.Underlying, where)
		case types.Builtin:
		default:
			add(t, "%s: cannot classify %s (kind %s): its values may hide a group; "+
				"list it in upstream.OpaqueTypes with the reason it never carries one", where, t.Name, t.Kind)
		}
	}
	for _, pkg := range m.Packages {
		for _, k := range pkg.Kinds {
			walk(k.Type, pkg.Path+"."+k.Name)
			walk(k.List, pkg.Path+"."+k.ListName)
		}
	}
	if len(problems) > 0 {
		return newUnclassifiedError(problems)
	}

	m.carries = map[*types.Type]bool{}
	for changed := true; changed; {
		changed = false
		for _, t := range all {
			if m.carries[t] {
				continue
			}
			if m.computeCarries(t) {
				m.carries[t] = true
				changed = true
			}
		}
	}
	for _, t := range all {
		if m.carries[t] && t.Kind == types.Struct && m.PackageOf(t) == nil && SpecialOf(t) == "" {
			add(nil, "shared type %s carries a group, but package translate has no "+
				"helper for it: add one and list it in model.specials", t.Name)
		}
	}
	for t := range m.aliased {
		if m.carries[t] {
			add(nil, "type %s encodes itself (MarshalJSON) and carries a group: "+
				"its private twin cannot be an alias, and its encoding cannot be mirrored", t.Name)
		}
	}
	if len(problems) > 0 {
		return newUnclassifiedError(problems)
	}
	return nil
}

// UnclassifiedError is the error of Load when the generator cannot classify a type reachable from a
// kind: one that encodes itself or that it cannot see into (an interface), or one that carries a group
// where no converter can translate it.
type UnclassifiedError struct {
	// Problems, sorted by message.
	Problems []Problem
}

// Problem is one type the generator cannot classify.
type Problem struct {
	// Type is the type's key as upstream.OpaqueTypes lists types ("<import path>.<type name>") when a
	// line there would settle it, else "".
	Type string
	// Message names the field path that reaches the type and what to do.
	Message string
}

func newUnclassifiedError(problems []Problem) *UnclassifiedError {
	sort.Slice(problems, func(i, j int) bool { return problems[i].Message < problems[j].Message })
	return &UnclassifiedError{Problems: problems}
}

func (e *UnclassifiedError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Message
	}
	return "unclassifiable fields:\n  " + strings.Join(msgs, "\n  ")
}

// Aliased reports whether the private twin of a mirrored type is a type alias of it (the type has its own
// JSON encoding, which a field-for-field copy would lose).
func (m *Model) Aliased(t *types.Type) bool { return m.aliased[t] }

func encodesItself(t *types.Type) bool {
	_, marshal := t.Methods["MarshalJSON"]
	_, unmarshal := t.Methods["UnmarshalJSON"]
	return marshal || unmarshal
}

func (m *Model) computeCarries(t *types.Type) bool {
	if _, ok := specials[t.Name]; ok {
		return true
	}
	if knownScalars[t.Name] || m.Opaque(t) {
		return false
	}
	switch t.Kind {
	case types.Struct:
		for _, mem := range t.Members {
			if m.GroupField(t, mem) != "" || m.carries[mem.Type] {
				return true
			}
		}
	case types.Pointer, types.Slice, types.Array, types.Map:
		return m.carries[t.Elem]
	case types.Alias:
		return m.carries[t.Underlying]
	}
	return false
}

// jsonPaths lists the group-carrying JSON paths of a kind in translate.Paths syntax.
func (m *Model) jsonPaths(root *types.Type) ([]string, error) {
	var out []string
	var err error
	var walk func(t *types.Type, prefix string, stack map[*types.Type]bool)
	walk = func(t *types.Type, prefix string, stack map[*types.Type]bool) {
		if err != nil || !m.carries[t] {
			return
		}
		if s, ok := specials[t.Name]; ok {
			for _, p := range s.paths {
				out = append(out, join(prefix, p))
			}
			return
		}
		if stack[t] {
			err = fmt.Errorf("%s: recursive type %s carries a group; paths would be infinite", prefix, t.Name)
			return
		}
		stack[t] = true
		defer delete(stack, t)
		switch t.Kind {
		case types.Struct:
			for _, mem := range t.Members {
				name := JSONName(mem)
				if name == "-" {
					continue
				}
				if g := m.GroupField(t, mem); g != "" {
					out = append(out, join(prefix, name)+"="+g)
					continue
				}
				walk(mem.Type, join(prefix, name), stack)
			}
		case types.Pointer:
			walk(t.Elem, prefix, stack)
		case types.Slice, types.Array:
			walk(t.Elem, prefix+"[]", stack)
		case types.Map:
			walk(t.Elem, prefix+"{}", stack)
		case types.Alias:
			walk(t.Underlying, prefix, stack)
		}
	}
	walk(root, "", map[*types.Type]bool{})
	return out, err
}

// join appends a JSON field (or a "=kind" suffix) to a dotted path.
func join(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "" || strings.HasPrefix(field, "="):
		return prefix + field
	}
	return prefix + "." + field
}
