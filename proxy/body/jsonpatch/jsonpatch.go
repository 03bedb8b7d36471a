// Package jsonpatch translates JSON patches (RFC 6902) between the upstream and the private groups,
// operation by operation, reading pointers as kube-apiserver's JSON patch library
// (gopkg.in/evanphx/json-patch.v4) reads them: Translate in either direction, ToPrivate for a client's
// patch, and Resolve for a copy or move between fields that name groups differently, which can only be
// translated against the object the patch applies to. Package body calls it for the JSON patch media
// type.
package jsonpatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	evanphx "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"

	"github.com/openshift/hypershift-capi-proxy/proxy/groupnames"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/jsonx"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// ErrObjectNeeded is ToPrivate's error for a JSON patch that copies or moves a value between fields
// that name groups differently: the value must be translated from the terms of one field to those of the
// other, so the patch can only be translated against the object it applies to (Resolve).
var ErrObjectNeeded = errors.New("the JSON patch copies or moves a value between fields that name API groups differently")

// maxJSONPatchOperations is kube-apiserver's bound on the operations of one JSON patch (k8s.io/apiserver's
// endpoints/handlers/patch.go); beyond it the apiserver answers 413.
const maxJSONPatchOperations = 10000

// Resolve translates a JSON patch to the private groups as ToPrivate does, resolving each
// copy or move between fields that name groups differently (a copy of a whole spec, with its references,
// into a field of no group; a move of an apiVersion into an annotation) against current: the object the
// patch applies to, in JSON as the backend holds it (the private groups), or nil where it could not be
// read. The operations run as kube-apiserver runs them (gopkg.in/evanphx/json-patch.v4, the apiserver's
// library), one for one, so that an error names the same operation:
//
//   - such a copy becomes an add, to its path, of the value its from holds at that point of the patch,
//     translated from the terms of its from to those of its path;
//   - such a move becomes a replace of the deepest location above both its from and its path, with what
//     the move leaves there, the value translated so;
//   - an operation that would fail there (its from's parent missing, a path under its own from), or any where
//     current is nil (the object is missing: the apiserver answers 404 before it applies anything) or an
//     earlier operation fails, becomes a test that always fails, so that the apiserver refuses the patch
//     with the 422 it gives every failing operation, and nothing is stored;
//   - where anything was resolved, a test of metadata.resourceVersion is appended, so that the patch
//     applies only to the object it was resolved against: on a concurrent change the apiserver answers
//     422 (or, for a move whose only common location is the whole object, which the replace sets to the
//     object it read, 409 Conflict), and stores nothing.
//
// Members of the operations other than op, path, from and value are kept, so that the apiserver's
// strict decoding names the same unknown and duplicate fields. The error means the patch could not be
// parsed.
func Resolve(data []byte, n *translate.Node, current []byte) ([]byte, error) {
	out, unserved, err := markJSONPatchUnserved(data, n)
	var cross []crossOp
	if err == nil {
		out, cross, err = jsonPatchOps(translate.ToPrivate, n, out, unserved)
	}
	if err != nil || len(cross) == 0 {
		return out, err
	}
	var ops []json.RawMessage
	if err := json.Unmarshal(out, &ops); err != nil {
		return nil, fmt.Errorf("decoding JSON patch: %w", err)
	}
	failing := current == nil
	resolved := false
	for _, c := range cross {
		i := c.index
		var replacement json.RawMessage
		if !failing {
			replacement, err = resolve(current, ops[:i], ops[i], c)
			resolved = resolved || err == nil
		}
		if failing || err != nil {
			// The patch fails at this operation, or before it: nothing after it runs.
			failing = true
			if replacement, err = withMembers(ops[i], failingTest); err != nil {
				return nil, err
			}
		}
		ops[i] = replacement
	}
	if resolved && !failing && len(ops) < maxJSONPatchOperations {
		if final, err := apply(current, ops); err == nil {
			if rv, ok := valueAt(final, "/metadata/resourceVersion"); ok {
				ops = append(ops, json.RawMessage(`{"op":"test","path":"/metadata/resourceVersion","value":`+string(rv)+`}`))
			}
		}
	}
	return json.Marshal(ops)
}

// failingTest is an operation that fails on every object: the whole document is never null.
var failingTest = map[string]any{"op": "test", "path": "", "value": nil}

// errFails says an operation fails where it stands in the patch.
var errFails = errors.New("the operation fails")

// resolve returns the operation op (a copy or move between fields that name groups differently, c) as it
// must reach the backend, given the object current and the operations before it, or errFails where the
// apiserver would fail at or before it.
func resolve(current []byte, before []json.RawMessage, op json.RawMessage, c crossOp) (json.RawMessage, error) {
	doc, err := apply(current, before)
	if err != nil {
		return nil, errFails
	}
	if _, err := apply(doc, []json.RawMessage{op}); err != nil {
		return nil, errFails
	}
	value, ok := valueAt(doc, c.from)
	if !ok {
		return nil, errFails
	}
	// From the backend's terms at from to the client's (an apiVersion the patch marked unserved is the
	// private group the client named), then to the backend's at path (a private group the client names
	// at the apiVersion is marked unserved).
	for _, step := range []struct {
		d translate.Direction
		n *translate.Node
	}{
		{translate.ToUpstream, c.fromNode},
		{translate.FromUnserved, unservedAt(c.from)},
		{translate.ToUnserved, unservedAt(c.path)},
		{translate.ToPrivate, c.pathNode},
	} {
		if value, err = step.d.Rewrite(step.n, value); err != nil {
			return nil, errFails
		}
	}
	var replacement json.RawMessage
	if c.op == "copy" {
		replacement, err = withMembers(op, map[string]any{"op": "add", "value": value})
	} else {
		// move: remove from, then add at path (what the library does), in one replace of the deepest
		// location above both, so that the patch keeps one operation for each of the client's.
		moved, err := apply(doc, []json.RawMessage{
			mustOp(map[string]any{"op": "remove", "path": c.from}),
			mustOp(map[string]any{"op": "add", "path": c.path, "value": value}),
		})
		if err != nil {
			return nil, errFails
		}
		above := commonAncestor(c.from, c.path)
		v, ok := valueAt(moved, above)
		if !ok {
			return nil, errFails
		}
		replacement, err = withMembers(op, map[string]any{"op": "replace", "path": above, "value": v})
		if err != nil {
			return nil, err
		}
	}
	if err != nil {
		return nil, err
	}
	if _, err := apply(doc, []json.RawMessage{replacement}); err != nil {
		return nil, errFails
	}
	return replacement, nil
}

// apply applies JSON patch operations to doc with the apiserver's JSON patch library. A panic of the
// library is an error.
func apply(doc []byte, ops []json.RawMessage) (out []byte, err error) {
	if len(ops) == 0 {
		return doc, nil
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	p, err := evanphx.DecodePatch(patch)
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("applying the JSON patch: %v", r)
		}
	}()
	return p.Apply(doc)
}

// scratch is the member valueAt copies a value into: no object has it.
const scratch = "\x00hypershift-capi-proxy"

// valueAt returns the JSON value at pointer in doc, as the JSON patch library finds it for a copy from
// there (the library itself finds it: pointers read as translate.PointerTokens says, indices as
// translate.ArrayIndex says: "-1" is the last element, "+0", "-0" and "00" the first, "-" none), its
// bytes as they are in doc; false where there is none. The pointer "" is the whole document, as RFC 6901
// says and replace and test take it (a copy from "" fails in the library).
func valueAt(doc []byte, pointer string) ([]byte, bool) {
	if pointer == "" {
		return doc, true
	}
	out, err := apply(doc, []json.RawMessage{mustOp(map[string]any{"op": "copy", "from": pointer, "path": "/" + scratch})})
	if err != nil {
		return nil, false
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(out, &members); err != nil {
		return nil, false
	}
	v, ok := members[scratch]
	return v, ok
}

// commonAncestor returns the deepest JSON pointer above (or at) both a and b, read as the JSON patch
// library reads them (the piece before the first "/" dropped, see translate.PointerTokens), in the "/..."
// form. Tokens are compared as written: two spellings of one location ("0" and "00") make the ancestor
// shallower, never wrong.
func commonAncestor(a, b string) string {
	ta, tb := strings.Split(a, "/")[1:], strings.Split(b, "/")[1:]
	n := 0
	for n < len(ta) && n < len(tb) && ta[n] == tb[n] {
		n++
	}
	if n == len(ta) || n == len(tb) {
		// One is at or above the other: the parent of the shorter, so that the replace has a place.
		n--
	}
	if n <= 0 {
		return ""
	}
	return "/" + strings.Join(ta[:n], "/")
}

// withMembers returns the operation op with the values of set in place of its members of the same names
// (duplicates included), and the members of set it lacks added at its end. Its other members, "from"
// among them (add, replace and test ignore it), are kept, so that the apiserver's strict decoding of the
// patch names the same unknown and duplicate fields.
func withMembers(op json.RawMessage, set map[string]any) (json.RawMessage, error) {
	seen := map[string]bool{}
	out, err := jsonx.Members(op, func(key string, raw json.RawMessage) (json.RawMessage, error) {
		v, ok := set[key]
		if !ok {
			return raw, nil
		}
		seen[key] = true
		return encodeMember(v)
	})
	if err != nil {
		return nil, err
	}
	for _, key := range []string{"op", "path", "value"} {
		v, ok := set[key]
		if !ok || seen[key] {
			continue
		}
		raw, err := encodeMember(v)
		if err != nil {
			return nil, err
		}
		k, _ := json.Marshal(key)
		out = append(bytes.TrimSuffix(out, []byte("}")), []byte(",")...)
		if bytes.Equal(out, []byte("{,")) {
			out = []byte("{")
		}
		out = append(append(append(out, k...), ':'), raw...)
		out = append(out, '}')
	}
	return out, nil
}

// encodeMember encodes a member's value: JSON bytes as they are, anything else with encoding/json.
func encodeMember(v any) (json.RawMessage, error) {
	if b, ok := v.([]byte); ok {
		return b, nil
	}
	return json.Marshal(v)
}

// mustOp encodes an operation the proxy builds.
func mustOp(op map[string]any) json.RawMessage {
	for k, v := range op {
		if b, ok := v.([]byte); ok {
			op[k] = json.RawMessage(b)
		}
	}
	b, err := json.Marshal(op)
	if err != nil {
		panic(err) // strings and JSON values always encode
	}
	return b
}

// markJSONPatchUnserved rewrites, in a JSON patch along the tree n (the paths of the patched kind), the
// private groups that the client names where the apiserver could not hold them, to translate.ToUnserved's
// groups, and reports whether an operation writes one to the object's apiVersion:
//
//   - in the values that operations write to the object's own apiVersion (a path the library reads as
//     "/apiVersion", or the whole document, see unservedAt), as package body's ObjectToPrivate does for
//     objects: the backend must refuse the object as an apiserver that does not serve the private group
//     refuses it;
//   - in the values of test operations, along n at their path: a test passes exactly where its value is
//     what a read through the proxy shows there, which names no private group where n says a group is.
//
// Elsewhere a private group is data, stored as the client sent it. A patch that names no private group
// is returned as it is. It runs on the client's patch, before its upstream groups are translated to
// private ones, which it must not mark. Malformed JSON is an error.
func markJSONPatchUnserved(data []byte, n *translate.Node) ([]byte, bool, error) {
	if !groupnames.Mentions(translate.ToUpstream, data) {
		return data, false, nil
	}
	var ops []json.RawMessage
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &ops); err != nil {
		return nil, false, err
	}
	writes, tests := make([]*translate.Node, len(ops)), make([]*translate.Node, len(ops))
	for i, raw := range ops {
		var op jsonPatchOperation
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &op); err != nil {
			return nil, false, err
		}
		if op.Path == nil {
			continue
		}
		if op.Op == "test" {
			// n holds the apiVersion too; unservedAt for a tree without it.
			if at := n.Pointer(*op.Path); at != nil {
				tests[i] = &translate.Node{Fields: map[string]*translate.Node{"value": at}}
			} else if at := unservedAt(*op.Path); at != nil {
				tests[i] = &translate.Node{Fields: map[string]*translate.Node{"value": at}}
			}
		} else if at := unservedAt(*op.Path); at != nil {
			writes[i] = &translate.Node{Fields: map[string]*translate.Node{"value": at}}
		}
	}
	out, err := translate.ToUnserved.RewriteElements(data, func(i int) *translate.Node { return writes[i] })
	if err != nil {
		return nil, false, err
	}
	written := !bytes.Equal(out, data)
	out, err = translate.ToUnserved.RewriteElements(out, func(i int) *translate.Node { return tests[i] })
	return out, written, err
}

// unservedAt returns the tree of the object's own apiVersion (apiVersionPaths) below a JSON pointer, read
// as the apiserver's JSON patch library reads it (translate.Direction.Pointer): the apiVersion itself at
// "/apiVersion" (or "x/apiVersion", the same to the library), the whole tree at "" (the whole
// document, which replace and test take), else nil.
func unservedAt(pointer string) *translate.Node {
	return apiVersionPaths.Pointer(pointer)
}

// isAPIVersion reports whether the JSON patch library reads pointer as the object's own apiVersion.
func isAPIVersion(pointer string) bool {
	n := unservedAt(pointer)
	return n != nil && n.Value == translate.APIVersionValue
}

// jsonPatchOperation holds the members of a JSON patch operation that say where it acts. Keys are matched
// exactly, and the last of duplicate keys wins, as the apiserver's JSON patch library decodes operations
// (into a map[string]*json.RawMessage with encoding/json).
type jsonPatchOperation struct {
	Op   string  `json:"op"`
	Path *string `json:"path"`
	From *string `json:"from"`
}

// Translate translates a JSON patch (RFC 6902) in direction d along the tree n: the value of each operation with the sub-tree at its path
// (n.Pointer(path)), keeping every other byte. "from" names a location, not a value, so copy and move
// need no translation as long as the value they carry lands where it is stored in the same terms: a copy
// or move whose "from" and "path" lie on sub-trees of different shapes (translate.SameShape: a string
// copied from an annotation into ownerReferences/0/apiVersion, say) would store a value in the other
// group's terms, and is refused with 422 Unprocessable Entity (ToPrivate refuses it with ErrObjectNeeded
// instead, and Resolve resolves it against the object). An operation without a path is left as it is (the apiserver
// refuses it). A body that is not a JSON array of objects is an error.
func Translate(d translate.Direction, n *translate.Node, data []byte) ([]byte, error) {
	out, cross, err := jsonPatchOps(d, n, data, false)
	if err != nil {
		return nil, err
	}
	if len(cross) > 0 {
		c := cross[0]
		return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "patch", schema.GroupResource{}, "",
			fmt.Sprintf("JSON patch operation %d: %s from %q to %q moves a value between fields that name API groups differently; the proxy cannot translate it, use add or replace with the value", c.index, c.op, c.from, c.path), 0, false)
	}
	return out, nil
}

// crossOp is a copy or move of a JSON patch between fields that name groups differently
// (translate.SameShape), with the trees at its from and path.
type crossOp struct {
	index              int
	op, from, path     string
	fromNode, pathNode *translate.Node
}

// jsonPatchOps translates a JSON patch as Translate describes, and returns the copies and moves between
// fields that name groups differently, which it leaves as they are, in the order of the patch. Pointers
// are read as the apiserver's JSON patch library reads them (translate.Direction.Pointer). unserved says
// that the patch writes an unserved group to the object's apiVersion (markJSONPatchUnserved): a copy or a
// move out of the apiVersion to anywhere else is then returned too, since the value it carries may be the
// unserved group, which must land as the private group the client named.
func jsonPatchOps(d translate.Direction, n *translate.Node, data []byte, unserved bool) ([]byte, []crossOp, error) {
	var ops []json.RawMessage
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &ops); err != nil {
		return nil, nil, fmt.Errorf("decoding JSON patch: %w", err)
	}
	nodes := make([]*translate.Node, len(ops))
	// pointers holds, by operation, its "path" and "from" where tokens addressing map keys that hold a
	// group change ("/spec/hard/count~1machines.cluster.x-k8s.io" of a ResourceQuota).
	pointers := map[int]map[string]string{}
	var cross []crossOp
	for i, raw := range ops {
		var op jsonPatchOperation
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &op); err != nil {
			return nil, nil, fmt.Errorf("decoding JSON patch operation %d: %w", i, err)
		}
		var path, from *translate.Node
		for key, pointer := range map[string]*string{"path": op.Path, "from": op.From} {
			if pointer == nil {
				continue
			}
			translated, node := d.Pointer(n, *pointer)
			if key == "path" {
				path = node
			} else {
				from = node
			}
			if translated != *pointer {
				if pointers[i] == nil {
					pointers[i] = map[string]string{}
				}
				pointers[i][key] = translated
			}
		}
		if (op.Op == "copy" || op.Op == "move") && op.From != nil &&
			(!translate.SameShape(from, path) || unserved && isAPIVersion(*op.From) && (op.Path == nil || !isAPIVersion(*op.Path))) {
			c := crossOp{index: i, op: op.Op, from: *op.From, fromNode: from, pathNode: path}
			if op.Path != nil {
				c.path = *op.Path
			}
			if p, ok := pointers[i]["path"]; ok {
				c.path = p
			}
			if f, ok := pointers[i]["from"]; ok {
				c.from = f
			}
			cross = append(cross, c)
		}
		if path != nil {
			nodes[i] = &translate.Node{Fields: map[string]*translate.Node{"value": path}}
		}
	}
	if !groupnames.Mentions(d, data) {
		return data, cross, nil
	}
	out, err := d.RewriteElements(data, func(i int) *translate.Node { return nodes[i] })
	if err != nil || len(pointers) == 0 {
		return out, cross, err
	}
	// Rare (a patch of a quota's keys): rewrite the members of the operations whose pointers change.
	out, err = jsonx.Elements(out, func(i int, op json.RawMessage) (json.RawMessage, error) {
		if pointers[i] == nil {
			return op, nil
		}
		return jsonx.Members(op, func(key string, raw json.RawMessage) (json.RawMessage, error) {
			if translated, ok := pointers[i][key]; ok {
				return json.Marshal(translated)
			}
			return raw, nil
		})
	})
	return out, cross, err
}

// apiVersionPaths is the tree of an object's own apiVersion.
var apiVersionPaths = translate.Paths("apiVersion=apiVersion")

// ToPrivate translates a client's JSON patch to the private groups along the tree n (the paths of the
// patched kind), as package body's PatchToPrivate sends it: the private groups the client names where
// the apiserver could not hold them marked first (markJSONPatchUnserved: the other way round, a test of
// the apiVersion the object has would fail), then the upstream groups translated as Translate translates
// them. A copy or move between fields that name groups differently is ErrObjectNeeded (see Resolve).
// Any other error means the patch could not be parsed.
func ToPrivate(data []byte, n *translate.Node) ([]byte, error) {
	out, unserved, err := markJSONPatchUnserved(data, n)
	if err != nil {
		return nil, err
	}
	out, cross, err := jsonPatchOps(translate.ToPrivate, n, out, unserved)
	if err == nil && len(cross) > 0 {
		return nil, ErrObjectNeeded
	}
	return out, err
}
