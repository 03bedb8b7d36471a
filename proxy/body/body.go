// Package body translates the JSON bodies of single objects and patches between the upstream and the
// private groups. Streams (lists, watches) are package stream's job; it calls Translator.Upstream once
// per item or event.
//
// Whole objects of a mapped kind go through their route's typed codec (route.Object), everything else
// through the trees of group-carrying JSON paths (translate.Node): the route's Paths for patches of a
// mapped kind, translate.MetadataPaths (ownerReferences, managedFields) for any other object. A body that
// does not contain the name of a group to translate is returned as it is, without being decoded.
//
// Only JSON (and YAML, converted to JSON) is handled. Protobuf and CBOR bodies are a known limit: the
// proxy keeps them off mapped resources by negotiating JSON, and forwards them untouched elsewhere, so
// their ownerReferences to mapped groups are not translated.
package body

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

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

var (
	// objectPaths are the group-carrying paths every object has: apiVersion and metadata. It is the tree
	// for objects without a route (non-mapped kinds, PartialObjectMetadata, autoscaling/v1 Scale).
	objectPaths = translate.Paths("apiVersion=apiVersion", "metadata=objectMeta")
	// tablePaths are those of a meta.k8s.io Table: the objects of its rows (PartialObjectMetadata by
	// default). Its cells are text and are not translated.
	tablePaths = translate.Paths("rows[].object.apiVersion=apiVersion", "rows[].object.metadata=objectMeta")
)

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
//   - a private kind with a route: the route's typed codec. Should the typed decode report fields its Go
//     type does not have (a backend CRD newer than the proxy), the object is rewritten along route.Paths
//     (which hold apiVersion and metadata too) instead, so that no field is lost;
//   - a meta.k8s.io Table: apiVersion and metadata of the objects of its rows;
//   - anything else: apiVersion and metadata (ownerReferences, managedFields).
//
// An object that names no private group is returned as it is. It fails on malformed JSON or a value that
// is not an object.
func (t *Translator) Upstream(data []byte) ([]byte, error) {
	d := translate.ToUpstream
	if !groupnames.Mentions(d, data) {
		return data, nil
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(data, &tm); err != nil {
		return nil, fmt.Errorf("decoding object: %w", err)
	}
	switch gvk := schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind); {
	case gvk == schema.GroupVersionKind{Version: "v1", Kind: "Status"}:
		return status.Translate(d, data)
	case gvk.Group == "meta.k8s.io" && gvk.Kind == "Table":
		return Paths(d, data, tablePaths)
	default:
		route, ok := t.table.ByPrivateKind(gvk)
		if !ok {
			return Paths(d, data, objectPaths)
		}
		out, unknown, err := route.Object.ToUpstream(data)
		if err != nil {
			return nil, fmt.Errorf("translating %s: %w", gvk, err)
		}
		if len(unknown) > 0 {
			klog.V(2).InfoS("Object from the backend has fields its Go type lacks; rewriting along paths", "gvk", gvk, "fields", unknown)
			return Paths(d, data, route.Paths)
		}
		return out, nil
	}
}

// Private translates the body of a create or an update (also of the status subresource) of a mapped
// resource to the private group, with the typed codec of the route of the body's own apiVersion and kind,
// or of route if the body names no routed kind (the backend then answers a mismatch as kube-apiserver
// would). unknown lists the fields the Go type does not have (see UnknownFields). A malformed body is an
// error.
func (t *Translator) Private(route *translate.Route, data []byte) (out []byte, unknown []error, err error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil, errEmpty
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(data, &tm); err != nil {
		return nil, nil, fmt.Errorf("decoding object: %w", err)
	}
	if r, ok := t.table.ByUpstreamKind(schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind)); ok {
		route = r
	}
	out, unknown, err = route.Object.ToPrivate(data)
	if err != nil {
		return nil, nil, fmt.Errorf("decoding %s: %w", route.UpstreamGVK().Kind, err)
	}
	return out, unknown, nil
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
// kind, translate.MetadataPaths otherwise) in direction d:
//
//   - merge patch, strategic merge patch: the patch is a partial object, translated like one;
//   - JSON patch (RFC 6902): the value of each operation is translated with the sub-tree at its path
//     (n.Pointer(path)); "from" names a location and needs no change;
//   - apply patch (YAML): converted to JSON, then translated like a partial object. The result is JSON,
//     which is YAML too.
//
// Other media types are an error. A body that names no group of d is returned as it is.
func Patch(d translate.Direction, n *translate.Node, mediaType string, data []byte) ([]byte, error) {
	switch mediaType {
	case MergePatch, StrategicMergePatch:
		return Paths(d, data, n)
	case JSONPatch:
		return jsonPatch(d, n, data)
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

func jsonPatch(d translate.Direction, n *translate.Node, data []byte) ([]byte, error) {
	if !groupnames.Mentions(d, data) {
		return data, nil
	}
	v, err := jsonx.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("decoding JSON patch: %w", err)
	}
	ops, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("decoding JSON patch: want an array of operations, got %s", jsonType(v))
	}
	for i, o := range ops {
		op, ok := o.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("JSON patch operation %d: want an object, got %s", i, jsonType(o))
		}
		value, hasValue := op["value"]
		if !hasValue {
			continue
		}
		path, ok := op["path"].(string)
		if !ok {
			return nil, fmt.Errorf("JSON patch operation %d: want a string \"path\", got %s", i, jsonType(op["path"]))
		}
		op["value"] = d.JSON(n.Pointer(path), value)
	}
	return jsonx.Encode(ops)
}

// Paths translates a JSON document along the trees ns (applied one after the other) in direction d. A
// document that names no group of d is returned as it is, without being decoded. Malformed JSON is an
// error.
func Paths(d translate.Direction, data []byte, ns ...*translate.Node) ([]byte, error) {
	if !groupnames.Mentions(d, data) {
		return data, nil
	}
	v, err := jsonx.Decode(data)
	if err != nil {
		return nil, err
	}
	for _, n := range ns {
		v = d.JSON(n, v)
	}
	return jsonx.Encode(v)
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// errEmpty is returned for a missing body where one is required.
var errEmpty = errors.New("the request body is empty")
