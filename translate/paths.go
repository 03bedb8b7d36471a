package translate

import (
	"bytes"
	"fmt"
	"strconv"
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
	// GroupResourceValue is a "<resource>.<group>" string (schema.GroupResource.String), e.g. the name of
	// a CustomResourceDefinition, "machines.cluster.x-k8s.io".
	GroupResourceValue
	// QuotaResourceValue is a ResourceQuota resource name (a key of spec.hard): only the object count form
	// "count/<resource>.<group>" carries a group (generic.ObjectCountQuotaResourceNameFor in
	// k8s.io/apiserver); "pods", "requests.cpu", "count/pods" or "requests.nvidia.com/gpu" do not.
	QuotaResourceValue
	// FieldQuotaResourceValue is the key of a ResourceQuota resource name in a managed fields set
	// (metadata.managedFields[].fieldsV1, structured-merge-diff's "f:<name>" form):
	// "f:count/machines.cluster.x-k8s.io".
	FieldQuotaResourceValue
	// RuleValue marks an object holding a rule of the RBAC or admission shape (rbacv1.PolicyRule,
	// authorizationv1.ResourceRule, admissionregistration (Named)RuleWithOperations): its apiGroups are
	// groups, and its resourceNames are CustomResourceDefinition names (GroupResourceValue) when, and
	// only when, the rule's own apiGroups and resources can match customresourcedefinitions (see
	// RuleCoversCRDs). That condition on sibling fields is what a static tree cannot say, so the walkers
	// decide it per rule object.
	RuleValue
	// ResourceAttributesValue marks an authorization.k8s.io ResourceAttributes object (the spec of a
	// SubjectAccessReview): its group is a group, and its name is a CustomResourceDefinition name when its
	// own group and resource can be customresourcedefinitions (RuleCoversCRDs of the one group and
	// resource), so that "kubectl auth can-i get crd/machines.cluster.x-k8s.io" asks about the CRD the
	// proxy serves under that name.
	ResourceAttributesValue
	// TextValue is free text (a condition's message): whole group names in it are replaced, as in a
	// Status message (Direction.Text).
	TextValue
)

// Node is a tree of the JSON paths inside one kind that can carry a group. Fields are JSON object keys,
// Items applies to every element of an array, Values to every value of a map, and Keys says what every key
// of a map holds (NoValue: keys carry nothing; see QuotaResourceValue). Value is what a string at the node
// holds, or, for an object whose names depend on its other fields, RuleValue or ResourceAttributesValue.
// A nil *Node carries nothing.
type Node struct {
	Value  ValueKind
	Keys   ValueKind
	Fields map[string]*Node
	Items  *Node
	Values *Node
	// keyLens has bit min(len(key), 31) set for each of the keys of Fields when they were added by
	// field (Paths), and fieldsAdded counts them: a key of a length without its bit names no field,
	// found without hashing it (most keys of the objects a rewrite walks name none). Fields added
	// otherwise (a Node literal) leave the count behind, and every key is looked up; a tree is not
	// changed once it is in use. (32 bits each keep a Node in the allocator's 48-byte class.)
	keyLens     uint32
	fieldsAdded int32
}

// child returns the node below n at the object key key (unescaped), and whether there is one.
func (n *Node) child(key []byte) (*Node, bool) {
	if int(n.fieldsAdded) == len(n.Fields) && n.keyLens&(1<<min(len(key), 31)) == 0 {
		return nil, false
	}
	c, ok := n.Fields[string(key)]
	return c, ok
}

// Paths builds a Node from path specs, one per group-carrying leaf, in the form the generator writes:
//
//	"apiVersion=apiVersion"                   a "group/version" string
//	"spec.infrastructureRef.apiGroup=group"   a bare group
//	"spec.topology.workers.machineDeployments[].bootstrap.ref.apiVersion=apiVersion"
//	"spec.values{}.apiGroup=group"            every value of a map
//	"spec.hard{key}=quotaResource"            every key of a map (last segment only)
//	"rules[]=rule"                            an RBAC or admission rule object (RuleValue)
//	"spec.resourceAttributes=resourceAttributes"
//	                                          a ResourceAttributes object (ResourceAttributesValue)
//	"metadata=objectMeta"                     ObjectMeta: ownerReferences, managedFields, annotations
//
// The string kinds are apiVersion, group, groupKind, groupResource, quotaResource, fieldQuotaResource
// and text. It panics on a malformed spec: specs come from generated code and fixed tables, so
// that is a programming error.
func Paths(specs ...string) *Node {
	root := &Node{}
	for _, spec := range specs {
		path, kind, ok := strings.Cut(spec, "=")
		if !ok {
			panic(fmt.Sprintf("translate.Paths: %q has no '=kind'", spec))
		}
		n, keys := root, false
		for _, seg := range strings.Split(path, ".") {
			if keys {
				panic(fmt.Sprintf("translate.Paths: {key} is not the last segment in %q", spec))
			}
			field, rest := seg, ""
			if i := strings.IndexAny(seg, "[{"); i >= 0 {
				field, rest = seg[:i], seg[i:]
			}
			n = n.field(field)
			for rest != "" {
				switch {
				case strings.HasPrefix(rest, "[]"):
					n, rest = n.items(), rest[2:]
				case strings.HasPrefix(rest, "{}"):
					n, rest = n.values(), rest[2:]
				case rest == "{key}":
					keys, rest = true, ""
				default:
					panic(fmt.Sprintf("translate.Paths: bad segment %q in %q", seg, spec))
				}
			}
		}
		v, isString := stringKinds[kind]
		switch {
		case keys && isString:
			n.Keys = v
		case keys:
			panic(fmt.Sprintf("translate.Paths: keys cannot hold %q in %q", kind, spec))
		case isString:
			n.Value = v
		case kind == "rule":
			n.merge(rulePaths)
		case kind == "resourceAttributes":
			n.merge(attributesPaths)
		case kind == "objectMeta":
			n.merge(objectMetaPaths())
		default:
			panic(fmt.Sprintf("translate.Paths: unknown kind %q in %q", kind, spec))
		}
	}
	return root
}

// stringKinds are the spec names of the kinds of string values.
var stringKinds = map[string]ValueKind{
	"apiVersion":    APIVersionValue,
	"group":         GroupValue,
	"groupKind":     GroupKindValue,
	"groupResource": GroupResourceValue,
	"quotaResource": QuotaResourceValue,
	// The "f:" key of a quotaResource in a managed fields set.
	"fieldQuotaResource": FieldQuotaResourceValue,
	"text":               TextValue,
}

// rulePaths is a rule object (RuleValue): its apiGroups always carry groups. attributesPaths is a
// ResourceAttributes object: its group always does. Where the object names CRDs (Node.namesCRDs),
// withCRDNames adds the resourceNames of a rule, or the name of the attributes.
var (
	rulePaths       = &Node{Value: RuleValue, Fields: map[string]*Node{"apiGroups": {Items: &Node{Value: GroupValue}}}}
	attributesPaths = &Node{Value: ResourceAttributesValue, Fields: map[string]*Node{"group": {Value: GroupValue}}}
)

// namesCRDs reports, for an object at n whose Value is RuleValue or ResourceAttributesValue, whether its
// names are CustomResourceDefinition names. member returns the decoded JSON value (encoding/json's types)
// of one member of the object, nil if absent.
func (n *Node) namesCRDs(member func(key string) any) bool {
	switch n.Value {
	case RuleValue:
		return RuleCoversCRDs(jsonStrings(member("apiGroups")), jsonStrings(member("resources")))
	case ResourceAttributesValue:
		group, ok := member("group").(string)
		resource, ok2 := member("resource").(string)
		return ok && ok2 && RuleCoversCRDs([]string{group}, []string{resource})
	}
	return false
}

// withCRDNames returns the tree for an object at n that names CRDs (see namesCRDs): n with the names
// holding "<plural>.<group>" values.
func (n *Node) withCRDNames() *Node {
	c := *n
	c.Fields = make(map[string]*Node, len(n.Fields)+1)
	for k, v := range n.Fields {
		c.Fields[k] = v
	}
	c.fieldsAdded = -1 // every key is looked up
	switch n.Value {
	case RuleValue:
		c.Fields["resourceNames"] = &Node{Items: &Node{Value: GroupResourceValue}}
	case ResourceAttributesValue:
		c.Fields["name"] = &Node{Value: GroupResourceValue}
	}
	return &c
}

// Value translates a string value of kind k; other kinds (NoValue, RuleValue, ResourceAttributesValue)
// return s as it is.
func (d Direction) Value(k ValueKind, s string) string {
	switch k {
	case APIVersionValue:
		return d.APIVersion(s)
	case GroupValue:
		return d.Group(s)
	case GroupKindValue:
		return d.GroupKind(s)
	case GroupResourceValue:
		return d.GroupResource(s)
	case QuotaResourceValue:
		return d.QuotaResource(s)
	case FieldQuotaResourceValue:
		if name, ok := strings.CutPrefix(s, "f:"); ok {
			if to := d.QuotaResource(name); to != name {
				return "f:" + to
			}
		}
	case TextValue:
		return d.Text(s)
	}
	return s
}

// AppendValue appends to dst the translation of a string value s of kind k given as bytes (Value, without
// making a string of s), and reports whether it differs from s. It is how values held as bytes (a
// protobuf field) are translated.
func (d Direction) AppendValue(dst []byte, k ValueKind, s []byte) ([]byte, bool) {
	if k == TextValue {
		t := d.Text(string(s))
		return append(dst, t...), t != string(s)
	}
	from, to, group, ok := d.groupIn(k, s)
	if !ok {
		return append(dst, s...), false
	}
	dst = append(dst, s[:from]...)
	dst = append(dst, group...)
	return append(dst, s[to:]...), true
}

// groupIn is Value for a value s given as bytes, without making a string of it: it returns the span
// s[from:to] of the group Value would replace and the group it would put there, and ok when Value
// changes s. Free text (TextValue), which may hold several names, is never ok: Value translates it.
func (d Direction) groupIn(k ValueKind, s []byte) (from, to int, group string, ok bool) {
	switch k {
	case APIVersionValue:
		// "group/version"
		to = bytes.IndexByte(s, '/')
		if to < 0 {
			return 0, 0, "", false
		}
	case GroupValue:
		to = len(s)
	case GroupKindValue, GroupResourceValue, QuotaResourceValue, FieldQuotaResourceValue:
		// "Kind.group", "<resource>.<group>", "count/<resource>.<group>", "f:count/<resource>.<group>"
		switch {
		case k == QuotaResourceValue && !bytes.HasPrefix(s, []byte("count/")),
			k == FieldQuotaResourceValue && !bytes.HasPrefix(s, []byte("f:count/")):
			return 0, 0, "", false
		}
		dot := bytes.IndexByte(s, '.')
		if dot < 0 {
			return 0, 0, "", false
		}
		from, to = dot+1, len(s)
	default:
		return 0, 0, "", false
	}
	group, ok = d.groups[string(s[from:to])]
	return from, to, group, ok
}

// GroupResource maps the group of a "<resource>.<group>" value (schema.GroupResource.String: a resource
// name has no '.', so the group starts after the first one), e.g. the name of a CRD. A value without a
// mapped group is returned as is.
func (d Direction) GroupResource(groupResource string) string {
	// The same split as "Kind.group".
	return d.GroupKind(groupResource)
}

// QuotaResource maps the group of a ResourceQuota resource name of the object count form
// "count/<resource>.<group>" (generic.ObjectCountQuotaResourceNameFor); any other name is returned as is.
func (d Direction) QuotaResource(name string) string {
	gr, ok := strings.CutPrefix(name, "count/")
	if !ok {
		return name
	}
	if to := d.GroupResource(gr); to != gr {
		return "count/" + to
	}
	return name
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

func (n *Node) field(name string) *Node {
	if n.Fields == nil {
		n.Fields = map[string]*Node{}
	}
	c, ok := n.Fields[name]
	if !ok {
		c = &Node{}
		n.Fields[name] = c
		n.keyLens |= 1 << min(len(name), 31)
		n.fieldsAdded++
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
	if o.Keys != NoValue {
		n.Keys = o.Keys
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

// Child returns the node one JSON pointer token (unescaped, see PointerTokens) below n: a field name, an
// array index where n has Items (any token ArrayIndex accepts: "0", "00", "+1", "-1", "-"), or a map key
// where n has Values. It returns nil where nothing below carries a group.
func (n *Node) Child(token string) *Node {
	if n == nil {
		return nil
	}
	if c, ok := n.Fields[token]; ok {
		return c
	}
	if n.Items != nil && ArrayIndex(token) {
		return n.Items
	}
	return n.Values
}

// Pointer returns the node at a JSON pointer, read as kube-apiserver's JSON patch library reads it (see
// PointerTokens: "/spec/infrastructureRef", "/metadata/ownerReferences/-1/apiVersion"), or nil.
func (n *Node) Pointer(pointer string) *Node {
	_, c := ToPrivate.Pointer(n, pointer)
	return c
}

// Pointer translates the tokens of a JSON pointer that address map keys holding a group (where the node
// above has Keys, e.g. "/spec/hard/count~1machines.cluster.x-k8s.io" of a ResourceQuota), and returns the
// pointer, escaped again, with the node it addresses (nil where nothing below carries a group). The
// pointer is read as kube-apiserver's JSON patch library reads it (PointerTokens): "" is the whole
// document (n), a pointer without a "/" addresses nothing (nil), and whatever precedes the first "/" is
// ignored and kept as it is. A pointer with nothing to translate is returned as it is.
func (d Direction) Pointer(n *Node, pointer string) (string, *Node) {
	tokens, ok := PointerTokens(pointer)
	if !ok {
		return pointer, nil
	}
	var escaped []string // the pointer's pieces, as split, where a token changed
	for i, tok := range tokens {
		if n == nil {
			break
		}
		if n.Keys != NoValue {
			if to := d.Value(n.Keys, tok); to != tok {
				if escaped == nil {
					escaped = strings.Split(pointer, "/")
				}
				escaped[i+1] = escapePointerToken(to)
			}
		}
		n = n.Child(tok)
	}
	if escaped != nil {
		pointer = strings.Join(escaped, "/")
	}
	return pointer, n
}

// PointerTokens returns the reference tokens of a JSON pointer, unescaped, as kube-apiserver's JSON patch
// library (gopkg.in/evanphx/json-patch.v4: findObject and decodePatchKey in patch.go) reads a patch
// operation's path and from:
//
//   - the pointer is split at every "/", and the piece before the first "/" is dropped whatever it holds:
//     "/apiVersion" and "x/apiVersion" both address the object's apiVersion (RFC 6901 would refuse the
//     second);
//   - a pointer without a "/" has no tokens: "" is the whole document (which only replace and test
//     accept), any other addresses nothing (false);
//   - each token is unescaped in one pass from left to right, "~1" to "/" and "~0" to "~" (so "~01" is
//     "~1"); any other "~" is kept.
//
// How a token is read as an array index is ArrayIndex.
func PointerTokens(pointer string) ([]string, bool) {
	split := strings.Split(pointer, "/")
	if len(split) < 2 {
		return nil, pointer == ""
	}
	tokens := split[1:]
	for i, tok := range tokens {
		tokens[i] = pointerTokenDecoder.Replace(tok)
	}
	return tokens, true
}

// pointerTokenDecoder unescapes a JSON pointer token as the JSON patch library's rfc6901Decoder does.
var pointerTokenDecoder = strings.NewReplacer("~1", "/", "~0", "~")

// escapePointerToken is the inverse of pointerTokenDecoder: "~" to "~0", then "/" to "~1".
func escapePointerToken(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}

// ArrayIndex reports whether kube-apiserver's JSON patch library reads the (unescaped) token as an index
// of an array (gopkg.in/evanphx/json-patch.v4, partialArray's get, set, add and remove): "-" (the end of
// the array, where add appends; every other operation fails on it), or any integer strconv.Atoi parses:
// an optional "+" or "-" sign and decimal digits ("0", "007", "+1", "-0"). A negative index counts from the
// end (the library's SupportNegativeIndices, on in the apiserver): -1 is the last element, or, for add,
// the end. Whether the index lies within the array is the library's to decide when it applies the
// operation; a token ArrayIndex refuses ("1.0", " 1", "0x1", beyond the range of an int) fails every
// operation on an array.
func ArrayIndex(token string) bool {
	if token == "-" {
		return true
	}
	_, err := strconv.Atoi(token)
	return err == nil
}

// JSON translates, in place, the group-carrying values below n of a value decoded by encoding/json
// (map[string]any, []any, string, ...), and returns the value (a string leaf is returned translated).
// Map keys are translated where n has Keys; a key translated onto another key of the map replaces it, as
// the later of two duplicate members does in a decoder. Values of unexpected JSON types are left as they
// are: validation is the apiserver's job.
func (d Direction) JSON(n *Node, v any) any {
	if n == nil {
		return v
	}
	switch t := v.(type) {
	case string:
		return d.Value(n.Value, t)
	case map[string]any:
		if n.namesCRDs(func(key string) any { return t[key] }) {
			n = n.withCRDNames()
		}
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
		if n.Keys != NoValue {
			renamed := map[string]any{}
			for k, c := range t {
				if to := d.Value(n.Keys, k); to != k {
					renamed[to] = c
					delete(t, k)
				}
			}
			for k, c := range renamed {
				t[k] = c
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

// jsonStrings returns the strings of a decoded JSON array, or nil if v is not an array of strings.
func jsonStrings(v any) []string {
	a, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(a))
	for _, e := range a {
		s, ok := e.(string)
		if !ok {
			return nil
		}
		out = append(out, s)
	}
	return out
}
