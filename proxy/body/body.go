// Package body translates bodies between the upstream and the private groups, one object at a time:
//
//   - request bodies (request.go): creates and updates (ObjectToPrivate), patches of every type
//     (PatchToPrivate; JSON patches through package jsonpatch, which also resolves one that copies or
//     moves a value between fields that name groups differently against the object) and field
//     selectors (FieldSelector); access reviews are package accessreview's;
//   - what the backend answers (Translator): a single object, a Status, a list item or the object of a
//     watch event, a Table row, in JSON (Upstream, UpstreamOfValid, AppendUpstreamOfValid,
//     AppendUpstreamOfItem, AppendTableRow) and in protobuf (ProtobufUpstreamOf; a protobuf list item by
//     item, ProtobufUpstreamFrom, and gzip'ed as it is read, ProtobufUpstreamGzipFrom).
//
// The proxy streams lists and watches item by item with package stream, which calls the Translator
// functions the handler chain (package server) hands it; Upstream also translates a whole list or Table
// it is given, item by item or row by row.
//
// Every JSON body is rewritten along trees of group-carrying JSON paths (translate.Node), touching only
// those values and keeping every other byte (translate.Direction.Rewrite): the route's Paths for objects
// of a mapped kind and their patches, the paths of builtinKinds for the few built-in kinds that point at
// other objects, and apiVersion and metadata (ownerReferences, managedFields) for any other object.
// Nothing is decoded into a typed object and encoded again (omitempty would drop an explicit false the
// CRD then defaults). A body that does not contain the name of a group to translate is returned as it
// is, without being decoded.
//
// Encodings are those kube-apiserver decodes: JSON is rewritten in place; YAML is converted to JSON as the
// apiserver converts it; CBOR is decoded and encoded again in CBOR with the apiserver's CBOR library
// (CBORToJSON for reading it); protobuf request bodies of built-in kinds are transcoded to JSON when they
// name a mapped group (ProtobufToJSON). Protobuf answers of built-in kinds and meta.k8s.io are rewritten
// field by field where only their metadata carries a group (protobufmeta.go), and otherwise decoded,
// translated through their JSON form and encoded again as the apiserver encodes them (protobuf.go).
package body

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/proxy/body/jsonpatch"
	"github.com/openshift/hypershift-capi-proxy/proxy/groupnames"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/jsonx"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Media types of request bodies, without parameters.
const (
	JSON                = "application/json"
	YAML                = "application/yaml"
	Protobuf            = "application/vnd.kubernetes.protobuf"
	MergePatch          = "application/merge-patch+json"
	JSONPatch           = "application/json-patch+json"
	StrategicMergePatch = "application/strategic-merge-patch+json"
	ApplyPatchYAML      = "application/apply-patch+yaml"
)

// objectPaths are the group-carrying paths every object has: apiVersion and metadata. It is the tree for
// objects without a route and without builtinPaths (PartialObjectMetadata, autoscaling/v1 Scale, a
// Secret).
var objectPaths = translate.Paths("apiVersion=apiVersion", "metadata=objectMeta")

// Translator translates bodies with a route table. It is safe for concurrent use.
type Translator struct {
	table *translate.Table
}

// New returns a Translator for the routes of table.
func New(table *translate.Table) *Translator { return &Translator{table: table} }

// Upstream translates one JSON object the backend sent (a response body, a list item, the object of a
// watch event) to the upstream groups, choosing by its apiVersion and kind:
//
//   - a metav1.Status: status.Translate;
//   - a private kind with a route: along the route's Paths, which hold every group-carrying field of
//     the kind (the generator derives them from the same type model as the typed converters, and
//     tests/roundtrip proves both agree), keeping every other byte: fields the proxy's Go types lack
//     (a backend CRD newer than the proxy), explicitly set zero values, null versus absent, member
//     order and number formatting all reach the client as the backend sent them;
//   - a meta.k8s.io Table: each row's object, translated by these same rules;
//   - a list (a kind named "...List"): each item, by these same rules;
//   - a built-in kind with group-carrying fields of its own (an Event's involvedObject, a
//     SubjectAccessReview's resourceAttributes, see builtinKinds): those and metadata;
//   - anything else: apiVersion and metadata (ownerReferences, managedFields).
//
// An object that names no private group is returned as it is. It fails on malformed JSON or a value that
// is not an object.
func (t *Translator) Upstream(data []byte) ([]byte, error) {
	return t.upstream(data, objectPaths, false)
}

// UpstreamOf returns Upstream for the objects of one resource: the items of a list of a built-in
// resource carry no apiVersion and kind, so an object without them is translated along the paths of
// the resource's kind (see builtinKinds), or objectPaths.
func (t *Translator) UpstreamOf(gr schema.GroupResource) func([]byte) ([]byte, error) {
	fallback := t.fallback(gr)
	return func(data []byte) ([]byte, error) { return t.upstream(data, fallback, false) }
}

// UpstreamOfValid is UpstreamOf for objects known to be well-formed JSON (a stream read them with
// translate.Scan, or translate.Valid accepted them): they are not validated again, which is a third of
// the cost of translating them. Given malformed JSON, its result is undefined.
func (t *Translator) UpstreamOfValid(gr schema.GroupResource) func([]byte) ([]byte, error) {
	fallback := t.fallback(gr)
	return func(data []byte) ([]byte, error) { return t.upstream(data, fallback, true) }
}

func (t *Translator) fallback(gr schema.GroupResource) *translate.Node {
	if k, ok := builtinByResource[gr]; ok {
		return k.paths
	}
	return objectPaths
}

// upstream translates data, validated once (unless valid says it was before) and then read without
// being decoded: its apiVersion and kind by one scan of its top-level members (translate.TopLevelStrings,
// read as metav1.TypeMeta would decode them), its group-carrying values by the rewrite.
func (t *Translator) upstream(data []byte, fallback *translate.Node, valid bool) ([]byte, error) {
	d := translate.ToUpstream
	if !groupnames.Mentions(d, data) {
		return data, nil
	}
	if !valid {
		if err := translate.Valid(data); err != nil {
			return nil, fmt.Errorf("decoding object: %w", err)
		}
	}
	how, n, gvk, err := t.shapeOf(data, fallback)
	if err != nil {
		return nil, err
	}
	if how != alongPaths {
		return t.translateWhole(how, data, fallback)
	}
	out, err := d.RewriteValid(n, data)
	if err != nil {
		return nil, fmt.Errorf("translating %s: %w", gvk, err)
	}
	return out, nil
}

// AppendUpstreamOfValid is UpstreamOfValid that appends the translation to dst and returns the
// extended buffer (translate.Direction.AppendRewriteValid): a stream translates every item of a list
// into one buffer it reuses. On error, dst is returned as it was.
func (t *Translator) AppendUpstreamOfValid(gr schema.GroupResource) func(dst, data []byte) ([]byte, error) {
	fallback := t.fallback(gr)
	return func(dst, data []byte) ([]byte, error) { return t.appendUpstreamValid(dst, data, fallback) }
}

// appendUpstreamValid appends the translation of a well-formed object, data, whose kind's paths are
// fallback when it has no apiVersion and kind, to dst (AppendUpstreamOfValid). On error, dst is returned
// as it was.
func (t *Translator) appendUpstreamValid(dst, data []byte, fallback *translate.Node) ([]byte, error) {
	d := translate.ToUpstream
	if !groupnames.Mentions(d, data) {
		return append(dst, data...), nil
	}
	if apiVersion, kind, ok := translate.LeadingTypeMeta(data); ok {
		// One pass: the kind chosen by the leading members, proved right by the rewrite.
		gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
		if how, n := t.shapeOfKind(gvk, fallback); how == alongPaths {
			out, err := d.AppendRewriteValidTypeMetaFirst(dst, n, data)
			switch {
			case err == nil:
				return out, nil
			case !errors.Is(err, translate.ErrTypeMetaRepeated):
				return dst, fmt.Errorf("translating %s: %w", gvk, err)
			}
		}
	}
	how, n, gvk, err := t.shapeOf(data, fallback)
	if err != nil {
		return dst, err
	}
	if how != alongPaths {
		out, err := t.translateWhole(how, data, fallback)
		if err != nil {
			return dst, err
		}
		return append(dst, out...), nil
	}
	out, err := d.AppendRewriteValid(dst, n, data)
	if err != nil {
		return dst, fmt.Errorf("translating %s: %w", gvk, err)
	}
	return out, nil
}

// errNotInOnePass is AppendUpstreamOfItem's error for an item it leaves to AppendUpstreamOfValid.
var errNotInOnePass = errors.New("not translated in one pass")

// AppendUpstreamOfItem is AppendUpstreamOfValid in one pass for a stream that has not validated its
// items (translate.Direction.AppendRewriteTypeMetaFirst): data begins with an item and holds what the
// stream has read after it; the item is validated exactly as translate.Scan validates it, chosen its
// tree by the apiVersion and kind that lead it, and translated, all in one walk, and the func returns
// the extended buffer and the item's length. It fails with translate.ErrIncomplete when data ends inside
// the item. Any other error means the item is not translated so: malformed, not led by its apiVersion
// and kind (an item of a built-in list has none), of a kind translated whole (a Status, a Table, a
// list), or not an object; the stream then reads it whole, validates it, and translates it with
// AppendUpstreamOfValid, which says what is wrong with it. An item that names no private group is
// translated to itself. The func remembers the last kind it was given (a list's items are of one
// kind), and is for one stream: it is not safe for concurrent use.
func (t *Translator) AppendUpstreamOfItem(gr schema.GroupResource) func(dst, data []byte) ([]byte, int, error) {
	fallback := t.fallback(gr)
	var last struct {
		apiVersion, kind []byte
		n                *translate.Node
		inOnePass        bool
	}
	return func(dst, data []byte) ([]byte, int, error) {
		apiVersion, kind, ok := translate.LeadingTypeMetaBytes(data)
		if !ok {
			return dst, 0, errNotInOnePass
		}
		if last.apiVersion == nil || !bytes.Equal(apiVersion, last.apiVersion) || !bytes.Equal(kind, last.kind) {
			how, n := t.shapeOfKind(schema.FromAPIVersionAndKind(string(apiVersion), string(kind)), fallback)
			last.apiVersion, last.kind = bytes.Clone(apiVersion), bytes.Clone(kind)
			last.n, last.inOnePass = n, how == alongPaths
		}
		if !last.inOnePass {
			return dst, 0, errNotInOnePass
		}
		return translate.ToUpstream.AppendRewriteTypeMetaFirst(dst, last.n, data)
	}
}

// shape is how an object is translated.
type shape int

const (
	// alongPaths: the object's group-carrying paths are rewritten.
	alongPaths shape = iota
	// asStatus, asTable, asList: by status.Translate, tableRows and listItems.
	asStatus
	asTable
	asList
)

// shapeOf chooses how to translate a valid JSON document, by its apiVersion and kind: a Status, a Table
// or a list whole, anything else along the paths of its route, of its built-in kind, fallback for an
// object without a kind, or objectPaths. It fails for a document that is not an object.
func (t *Translator) shapeOf(data []byte, fallback *translate.Node) (shape, *translate.Node, schema.GroupVersionKind, error) {
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
		return 0, nil, schema.GroupVersionKind{}, errors.New("decoding object: not a JSON object")
	}
	tm := translate.TopLevelStrings(data, "apiVersion", "kind")
	gvk := schema.FromAPIVersionAndKind(tm[0], tm[1])
	how, n := t.shapeOfKind(gvk, fallback)
	return how, n, gvk, nil
}

// shapeOfKind is shapeOf for an object of kind gvk.
func (t *Translator) shapeOfKind(gvk schema.GroupVersionKind, fallback *translate.Node) (shape, *translate.Node) {
	switch {
	case gvk == schema.GroupVersionKind{Version: "v1", Kind: "Status"}:
		return asStatus, nil
	case gvk.Group == metav1.GroupName && gvk.Kind == "Table":
		return asTable, nil
	case gvk.Kind == "":
		return alongPaths, fallback
	case strings.HasSuffix(gvk.Kind, "List"):
		return asList, nil
	}
	if route, ok := t.table.ByPrivateKind(gvk); ok {
		return alongPaths, route.Paths
	}
	if k, ok := builtinByKind[gvk.GroupKind()]; ok {
		return alongPaths, k.paths
	}
	return alongPaths, objectPaths
}

// translateWhole translates a Status, a Table or a list.
func (t *Translator) translateWhole(how shape, data []byte, fallback *translate.Node) ([]byte, error) {
	switch how {
	case asStatus:
		return status.Translate(translate.ToUpstream, data)
	case asTable:
		return t.tableRows(data)
	default:
		return t.listItems(data, fallback)
	}
}

// listItems translates a whole list (package stream translates the lists it streams itself): apiVersion
// and metadata, and each of its items by these same rules.
func (t *Translator) listItems(data []byte, fallback *translate.Node) ([]byte, error) {
	return jsonx.Members(data, func(key string, raw json.RawMessage) (json.RawMessage, error) {
		switch key {
		case "items":
			if string(raw) == "null" {
				return raw, nil
			}
			return jsonx.Elements(raw, func(i int, item json.RawMessage) (json.RawMessage, error) {
				out, err := t.upstream(item, fallback, true)
				if err != nil {
					return nil, fmt.Errorf("item %d: %w", i, err)
				}
				return out, nil
			})
		case "apiVersion", "metadata":
			return Paths(translate.ToUpstream, raw, objectPaths.Fields[key])
		}
		return raw, nil
	})
}

// tableRows translates each row of a meta.k8s.io Table (TableRow).
func (t *Translator) tableRows(data []byte) ([]byte, error) {
	return jsonx.Members(data, func(key string, raw json.RawMessage) (json.RawMessage, error) {
		if key != "rows" || string(raw) == "null" {
			return raw, nil
		}
		return jsonx.Elements(raw, func(i int, row json.RawMessage) (json.RawMessage, error) {
			out, err := t.TableRow(row)
			if err != nil {
				return nil, fmt.Errorf("table row %d: %w", i, err)
			}
			return out, nil
		})
	})
}

// TableRow translates one row of a meta.k8s.io Table (valid JSON): its object (a PartialObjectMetadata by
// default, the whole object with includeObject=Object) by these same rules, and its cells (see cells);
// every other byte as it is. It fails for a row that is not a JSON object, or an object that cannot be
// translated.
func (t *Translator) TableRow(row []byte) ([]byte, error) { return t.AppendTableRow(nil, row) }

// AppendTableRow is TableRow appending the translation to dst; on error, dst is returned as it was. A
// stream translates every row of a Table into one buffer it reuses.
func (t *Translator) AppendTableRow(dst, row []byte) ([]byte, error) {
	if start := bytes.TrimLeft(row, " \t\r\n"); len(start) == 0 || start[0] != '{' {
		return dst, errors.New("a table row is not a JSON object")
	}
	out, copied := dst, 0
	var err error
	translate.EachMember(row, func(key []byte, start, end int) bool {
		value := row[start:end]
		// cells and appendUpstreamValid search the value for a private group first, and hand back
		// what names none as it is.
		switch string(key) {
		case "cells":
			var translated []byte
			if translated, err = cells(value); err == nil {
				out = append(append(out, row[copied:start]...), translated...)
				copied = end
			}
		case "object":
			out = append(out, row[copied:start]...)
			out, err = t.appendUpstreamValid(out, value, objectPaths)
			copied = end
		}
		return err == nil
	})
	if err != nil {
		return dst, err
	}
	return append(out, row[copied:]...), nil
}

// cells translates the printed cells of a Table row: a string cell is text, in which a private group name
// is replaced whole, as in a Status message (groupnames.Replace: a ResourceQuota's
// "count/machines.cluster.hypershift.openshift.io: 0/1"); other cells are left as they are.
func cells(raw json.RawMessage) (json.RawMessage, error) {
	if !groupnames.Mentions(translate.ToUpstream, raw) || !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) {
		return raw, nil
	}
	return jsonx.Elements(raw, func(_ int, cell json.RawMessage) (json.RawMessage, error) {
		var text string
		if len(cell) == 0 || cell[0] != '"' || json.Unmarshal(cell, &text) != nil {
			return cell, nil
		}
		if replaced := groupnames.Replace(translate.ToUpstream, text); replaced != text {
			return json.Marshal(replaced) // escaped as kube-apiserver escapes strings, see status.Translate
		}
		return cell, nil
	})
}

// RequestPaths returns the tree to translate a request body of a resource that is not a mapped kind:
// the paths of its kind for a built-in resource with group-carrying fields (see builtinKinds), else
// apiVersion and metadata.
func RequestPaths(gr schema.GroupResource) *translate.Node {
	if k, ok := builtinByResource[gr]; ok {
		return k.paths
	}
	return objectPaths
}

// UnknownFields applies a request's fieldValidation directive to the unknown (and duplicate) fields a
// typed decode reported, as kube-apiserver does: "Strict" fails with a 400 BadRequest naming them all,
// "Ignore" drops them, and "Warn" (the default, also for an empty or unrecognized value) returns one
// Warning text per field, e.g. `unknown field "spec.foo"`.
func UnknownFields(fieldValidation string, unknown []error) (warnings []string, err error) {
	if len(unknown) == 0 {
		return nil, nil
	}
	switch fieldValidation {
	case metav1.FieldValidationStrict:
		return nil, apierrors.NewBadRequest(runtime.NewStrictDecodingError(unknown).Error())
	case metav1.FieldValidationIgnore:
		return nil, nil
	}
	for _, u := range unknown {
		warnings = append(warnings, u.Error())
	}
	return warnings, nil
}

// Patch translates a patch body of media type mediaType along the tree n (a route's Paths for a mapped
// kind, RequestPaths otherwise) in direction d:
//
//   - merge patch, strategic merge patch: the patch is a partial object, translated like one;
//   - JSON patch (RFC 6902): see jsonpatch.Translate;
//   - apply patch (YAML): converted to JSON, then translated like a partial object. The result is JSON,
//     which is YAML too.
//
// Other media types are an error. A body that names no group of d is returned as it is. The error of a
// JSON patch the proxy must refuse is an API status (see jsonpatch.Translate); any other error means data could not
// be parsed.
func Patch(d translate.Direction, n *translate.Node, mediaType string, data []byte) ([]byte, error) {
	switch mediaType {
	case MergePatch, StrategicMergePatch:
		return Paths(d, data, n)
	case JSONPatch:
		return jsonpatch.Translate(d, n, data)
	case ApplyPatchYAML:
		if !groupnames.Mentions(d, data) {
			return data, nil
		}
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, fmt.Errorf("decoding apply patch: %w", err)
		}
		return Paths(d, j, n)
	default:
		return nil, fmt.Errorf("unsupported patch type %q", mediaType)
	}
}

// Paths translates a JSON document along the trees ns (applied one after the other) in direction d,
// keeping every byte but the translated values (see translate.Direction.Rewrite). A document that names
// no group of d is returned as it is, without being parsed. Malformed JSON is an error.
func Paths(d translate.Direction, data []byte, ns ...*translate.Node) ([]byte, error) {
	if !groupnames.Mentions(d, data) {
		return data, nil
	}
	var err error
	for _, n := range ns {
		if data, err = d.Rewrite(n, data); err != nil {
			return nil, err
		}
	}
	return data, nil
}

// RouteOf returns the route of the mapped kind an object's apiVersion and kind name (in upstream terms);
// false for an object of no routed kind.
func (t *Translator) RouteOf(apiVersion, kind string) (*translate.Route, bool) {
	return t.table.ByUpstreamKind(schema.FromAPIVersionAndKind(apiVersion, kind))
}
