package body

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	sigsjson "sigs.k8s.io/json"

	"github.com/openshift/hypershift-capi-proxy/proxy/groupnames"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/protofield"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// ProtobufToJSON transcodes a protobuf-encoded built-in object (the Kubernetes protobuf envelope, as
// client-go sends Secrets, ConfigMaps, ... when asked to) into JSON, with client-go's scheme. It fails for
// a type the scheme does not know; the apiserver accepts the JSON form of every built-in type.
func ProtobufToJSON(data []byte) ([]byte, error) {
	codecs := clientgoscheme.Codecs.WithoutConversion()
	pb, ok := runtime.SerializerInfoForMediaType(clientgoscheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		return nil, fmt.Errorf("no protobuf serializer")
	}
	js, ok := runtime.SerializerInfoForMediaType(clientgoscheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		return nil, fmt.Errorf("no JSON serializer")
	}
	obj, _, err := codecs.DecoderToVersion(pb.Serializer, nil).Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := js.Serializer.Encode(obj, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// protobufScheme holds the kinds whose protobuf answers the proxy translates: client-go's (every
// built-in kind of kube-apiserver's own groups, and metav1.Status), and the meta.k8s.io shapes any
// resource is served in (PartialObjectMetadata, PartialObjectMetadataList, Table).
var protobufScheme = newProtobufScheme()

func newProtobufScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, metav1.AddMetaToScheme, metav1beta1.AddMetaToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// DecodesProtobuf reports whether the proxy decodes the protobuf form of the objects of a resource (a
// request's group, version and resource, "" for the core group, without its subresource): whether
// client-go's scheme knows the kind served there. A group the scheme knows may serve kinds it does not:
// kube-apiserver v1.36 serves MutatingAdmissionPolicy at admissionregistration.k8s.io/v1, which k8s.io/api
// v0.35 lacks, beside kinds it has. The meta.k8s.io shapes are decoded for every resource.
func DecodesProtobuf(gvr schema.GroupVersionResource) bool {
	return protobufResources.Has(gvr)
}

// protobufResources are the resources of the kinds of protobufScheme, named as kube-apiserver names its
// built-in resources: the kind's lower-case plural (meta.UnsafeGuessKindToResource: "endpoints",
// "ingresses", "networkpolicies"). Kinds served by no resource (Scale, DeleteOptions, ...) add names no
// resource has.
var protobufResources = func() sets.Set[schema.GroupVersionResource] {
	out := sets.New[schema.GroupVersionResource]()
	for gvk := range protobufScheme.AllKnownTypes() {
		if gvk.Group == metav1.GroupName || strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		out.Insert(plural)
	}
	return out
}()

// protobufPrefix starts every protobuf-encoded object (k8s.io/apimachinery's protobuf serializer): the
// runtime.Unknown envelope, holding the object's apiVersion and kind, and its own message, follows.
var protobufPrefix = []byte{0x6b, 0x38, 0x73, 0x00}

// protoMessage is what the generated protobuf code of every API type implements.
type protoMessage interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// ProtobufUpstreamOf returns the translation to the upstream groups of one protobuf-encoded object the
// backend sent for a resource (a response body, a watch event's object): the object, a list or a
// metav1.Status, as k8s.io/apimachinery's protobuf serializer writes them ("k8s\x00" and a
// runtime.Unknown envelope).
//
// An object in which no private group name occurs (a byte search, groupnames.Mentions: protobuf strings
// are their bytes) is returned as it is, without being decoded. An object whose only group-carrying paths
// are its metadata (a Secret, a ConfigMap, a PartialObjectMetadata) is translated field by field in its
// protobuf form (appendObjectUpstream: the bytes of the typed translation, translate.Direction.ObjectMeta,
// without a decode). Any other (a Role's rules, a Status's details and message, ...) is decoded into its
// Go type (of protobufScheme), encoded as JSON, translated along the paths of its kind, and decoded from
// the translation and encoded again in protobuf, as kube-apiserver encodes it, if that changed anything:
// the protobuf form of Kubernetes types keeps nothing JSON does not (metav1.Time is whole seconds in
// both, MicroTime microseconds), so the bytes are those kube-apiserver would have sent with the upstream
// values. A list is translated item by item, in its protobuf form: the items that name no private group
// keep their bytes undecoded.
//
// It fails for an object of a kind protobufScheme does not know that names a private group: the proxy
// asks for protobuf only where it knows the kinds (DecodesProtobuf), so this is an answer it cannot
// translate.
func (t *Translator) ProtobufUpstreamOf(gr schema.GroupResource) func([]byte) ([]byte, error) {
	fallback := t.fallback(gr)
	return func(data []byte) ([]byte, error) { return t.protobufUpstream(data, fallback) }
}

func (t *Translator) protobufUpstream(data []byte, fallback *translate.Node) ([]byte, error) {
	if !groupnames.Mentions(translate.ToUpstream, data) {
		return data, nil
	}
	if !bytes.HasPrefix(data, protobufPrefix) {
		return nil, errors.New("decoding protobuf: not a protobuf-encoded object")
	}
	var unk runtime.Unknown
	if err := unk.Unmarshal(data[len(protobufPrefix):]); err != nil {
		return nil, fmt.Errorf("decoding protobuf: %w", err)
	}
	gvk := unk.GroupVersionKind()
	if translate.ToUpstream.Maps(gvk.Group) {
		return nil, fmt.Errorf("decoding protobuf: %s is of a private group", gvk)
	}
	obj, err := protobufScheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("decoding protobuf: %w", err)
	}
	var raw []byte
	if item, ok := t.protobufListItem(gvk, obj, fallback); ok {
		raw, err = protobufListItems(unk.Raw, item)
	} else {
		raw, err = t.protobufMessage(unk.Raw, gvk, obj, fallback)
	}
	if err != nil {
		return nil, fmt.Errorf("translating %s: %w", gvk, err)
	}
	if raw == nil {
		return data, nil
	}
	unk.Raw = raw
	out, err := unk.Marshal()
	if err != nil {
		return nil, err
	}
	return append(append(make([]byte, 0, len(protobufPrefix)+len(out)), protobufPrefix...), out...), nil
}

// listItemType returns the Go type of a list's items: a list of protobufScheme is a struct of TypeMeta,
// ListMeta (protobuf field 1) and Items (field 2), the layout the protobuf serializer's streaming list
// encoding checks too.
func listItemType(obj runtime.Object) (reflect.Type, bool) {
	v := reflect.ValueOf(obj).Elem()
	if v.Kind() != reflect.Struct {
		return nil, false
	}
	f, ok := v.Type().FieldByName("Items")
	if !ok || f.Type.Kind() != reflect.Slice || f.Tag.Get("protobuf") != "bytes,2,rep,name=items" {
		return nil, false
	}
	if _, ok := reflect.New(f.Type.Elem()).Interface().(protoMessage); !ok {
		return nil, false
	}
	return f.Type.Elem(), true
}

// protobufMessage translates the message of one object of kind gvk, decoded into obj: nil when nothing
// changed.
func (t *Translator) protobufMessage(raw []byte, gvk schema.GroupVersionKind, obj runtime.Object, fallback *translate.Node) ([]byte, error) {
	msg, ok := obj.(protoMessage)
	if !ok {
		return nil, fmt.Errorf("%T has no protobuf encoding", obj)
	}
	if t.onlyObjectMeta(gvk) {
		return metadataUpstream(new([]byte), raw, reflect.TypeOf(obj).Elem())
	}
	if err := msg.Unmarshal(raw); err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	j, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	out, err := t.upstream(j, fallback, true)
	if err != nil || bytes.Equal(out, j) {
		return nil, err
	}
	translated, err := protobufScheme.New(gvk)
	if err != nil {
		return nil, err
	}
	return fromJSON(out, translated)
}

// protobufListItem returns the translation of one item of a list of kind gvk (decoded into obj) that
// names a private group, nil when nothing changed (protobufItem), or false when obj is not a list. The
// items' paths are those of the list's item kind: apiVersion and metadata for the meta.k8s.io
// PartialObjectMetadataList, else those of the resource's kind (fallback). The func is for one list: a
// translation it returns may be overwritten by its next call.
func (t *Translator) protobufListItem(gvk schema.GroupVersionKind, obj runtime.Object, fallback *translate.Node) (func([]byte) ([]byte, error), bool) {
	items, ok := listItemType(obj)
	if !ok {
		return nil, false
	}
	paths := fallback
	if gvk.Group == metav1.GroupName {
		paths = objectPaths
	} else if k, ok := builtinByKind[schema.GroupKind{Group: gvk.Group, Kind: strings.TrimSuffix(gvk.Kind, "List")}]; ok {
		paths = k.paths
	}
	var scratch []byte
	return func(value []byte) ([]byte, error) { return t.protobufItem(&scratch, value, items, paths) }, true
}

// protobufListItems translates the message of a list field by field: each item (field 2) that names a
// private group with item, every other field and item as it is. nil when nothing changed.
func protobufListItems(raw []byte, item func([]byte) ([]byte, error)) ([]byte, error) {
	n := 0
	return protofield.Replace(raw, 2, func(value []byte) ([]byte, error) {
		n++
		if !groupnames.Mentions(translate.ToUpstream, value) {
			return nil, nil
		}
		translated, err := item(value)
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", n-1, err)
		}
		return translated, nil
	})
}

// protobufItem translates the message of one list item of Go type item along paths (its JSON form has
// no apiVersion and kind, as in a JSON list of a built-in resource): nil when nothing changed. A
// translation of metadata alone is made in *scratch (metadataUpstream).
func (t *Translator) protobufItem(scratch *[]byte, raw []byte, item reflect.Type, paths *translate.Node) ([]byte, error) {
	if paths == objectPaths {
		return metadataUpstream(scratch, raw, item)
	}
	obj := reflect.New(item).Interface()
	if err := obj.(protoMessage).Unmarshal(raw); err != nil {
		return nil, err
	}
	j, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	out, err := translate.ToUpstream.RewriteValid(paths, j)
	if err != nil || bytes.Equal(out, j) {
		return nil, err
	}
	return fromJSON(out, reflect.New(item).Interface())
}

// fromJSON decodes JSON into obj (as kube-apiserver decodes JSON: keys matched exactly) and returns its
// protobuf encoding.
func fromJSON(j []byte, obj any) ([]byte, error) {
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, obj); err != nil {
		return nil, err
	}
	return obj.(protoMessage).Marshal()
}

// onlyObjectMeta reports whether the group-carrying paths of a kind of protobufScheme are objectPaths
// (apiVersion and metadata) alone, as Upstream chooses them: not a Status (whose message is translated),
// a Table, a list, a kind with a route or one of builtinKinds. The apiVersion of a kind of protobufScheme
// names no private group.
func (t *Translator) onlyObjectMeta(gvk schema.GroupVersionKind) bool {
	if gvk.Kind == "Status" || gvk.Kind == "Table" || strings.HasSuffix(gvk.Kind, "List") {
		return false
	}
	if _, ok := builtinByKind[gvk.GroupKind()]; ok {
		return false
	}
	_, routed := t.table.ByPrivateKind(gvk)
	return !routed
}
