package body

import (
	"reflect"
	"slices"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/protofield"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// The protobuf field numbers of the group-carrying fields of an object's metadata
// (k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto): every Kubernetes object holds its ObjectMeta
// in field 1, "metadata".
const (
	metadataField = 1

	objectMetaAnnotations     = 12 // map<string, string>: entries of key (1) and value (2)
	objectMetaOwnerReferences = 13 // repeated OwnerReference
	objectMetaManagedFields   = 17 // repeated ManagedFieldsEntry

	mapEntryKey   = 1
	mapEntryValue = 2

	ownerReferenceAPIVersion     = 5
	managedFieldsEntryAPIVersion = 3
)

// metadataInField1 reports whether the protobuf message of Go type typ (a struct of protobufScheme) holds
// its metav1.ObjectMeta in field 1, as every Kubernetes object does (its embedded ObjectMeta, tagged
// "bytes,1,opt,name=metadata"); such a message's metadata is translated field by field
// (appendObjectUpstream). Answers are remembered by type.
func metadataInField1(typ reflect.Type) bool {
	if v, ok := metadataInField1Of.Load(typ); ok {
		return v.(bool)
	}
	ok := false
	if typ.Kind() == reflect.Struct {
		f, found := typ.FieldByName("ObjectMeta")
		ok = found && f.Type == reflect.TypeFor[metav1.ObjectMeta]() && strings.HasPrefix(f.Tag.Get("protobuf"), "bytes,1,")
	}
	metadataInField1Of.Store(typ, ok)
	return ok
}

var metadataInField1Of sync.Map // reflect.Type -> bool

// metadataUpstream translates the metadata of the message raw of an object of Go type typ
// (appendObjectUpstream) into *scratch, which it keeps for the next call: the translation, valid until
// then, or nil when nothing changed or typ holds no ObjectMeta in field 1.
func metadataUpstream(scratch *[]byte, raw []byte, typ reflect.Type) ([]byte, error) {
	if !metadataInField1(typ) {
		return nil, nil
	}
	out, changed, err := appendObjectUpstream((*scratch)[:0], raw)
	*scratch = out
	if err != nil || !changed {
		return nil, err
	}
	return out, nil
}

// appendObjectUpstream appends to dst the message of an object whose metadata is field 1
// (metadataInField1), with its metadata translated as translate.Direction.ObjectMeta translates the
// decoded ObjectMeta (the ownerReferences' and managedFields' apiVersions, the values of
// upstream.GroupKindAnnotations): every other byte is kept, so that for a message as kube-apiserver
// encodes it (fields in order, map entries sorted by key) the result is the encoding of the translated
// object, byte for byte. It reports whether anything changed, and fails, with protowire's parse error, for
// a message or a metadata field that does not parse.
func appendObjectUpstream(dst, msg []byte) ([]byte, bool, error) {
	return protofield.Append(dst, msg, func(dst []byte, num protowire.Number, meta []byte) ([]byte, bool, error) {
		if num != metadataField {
			return dst, false, nil
		}
		return protofield.Append(dst, meta, objectMetaFieldUpstream)
	})
}

// objectMetaFieldUpstream is the protofield.Func of the fields of an ObjectMeta.
func objectMetaFieldUpstream(dst []byte, num protowire.Number, value []byte) ([]byte, bool, error) {
	switch num {
	case objectMetaOwnerReferences:
		return protofield.Append(dst, value, ownerReferenceUpstream)
	case objectMetaManagedFields:
		return protofield.Append(dst, value, managedFieldsEntryUpstream)
	case objectMetaAnnotations:
		key, err := mapEntryKeyOf(value)
		if err != nil || !slices.ContainsFunc(upstream.GroupKindAnnotations, func(k string) bool { return k == string(key) }) {
			return dst, false, err
		}
		return protofield.Append(dst, value, annotationEntryUpstream)
	}
	return dst, false, nil
}

// The protofield.Funcs of the messages below ObjectMeta, made once (a Func made per call would be garbage
// per field).
var (
	ownerReferenceUpstream     = valueUpstreamFunc(ownerReferenceAPIVersion, translate.APIVersionValue)
	managedFieldsEntryUpstream = valueUpstreamFunc(managedFieldsEntryAPIVersion, translate.APIVersionValue)
	annotationEntryUpstream    = valueUpstreamFunc(mapEntryValue, translate.GroupKindValue)
)

// valueUpstreamFunc is the protofield.Func that translates the string field num of a message, a value of
// kind.
func valueUpstreamFunc(num protowire.Number, kind translate.ValueKind) protofield.Func {
	return func(dst []byte, n protowire.Number, value []byte) ([]byte, bool, error) {
		if n != num {
			return dst, false, nil
		}
		dst, changed := translate.ToUpstream.AppendValue(dst, kind, value)
		return dst, changed, nil
	}
}

// mapEntryKeyOf returns the key of a map entry message: its last field 1, as a decoder keeps it.
func mapEntryKeyOf(entry []byte) ([]byte, error) {
	var key []byte
	for len(entry) > 0 {
		num, typ, n := protowire.ConsumeTag(entry)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, entry[n:])
		if m < 0 {
			return nil, protowire.ParseError(m)
		}
		if num == mapEntryKey && typ == protowire.BytesType {
			key, _ = protowire.ConsumeBytes(entry[n:])
		}
		entry = entry[n+m:]
	}
	return key, nil
}
