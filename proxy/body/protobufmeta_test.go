package body

import (
	"bytes"
	"reflect"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/routestesting"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// typedObjectUpstream is what appendObjectUpstream stands for: the message decoded, its ObjectMeta
// translated as typed (translate.Direction.ObjectMeta, which tests/roundtrip holds to the JSON paths of
// "metadata=objectMeta"), and encoded again.
func typedObjectUpstream(t testing.TB, raw []byte, obj protoMessage) []byte {
	t.Helper()
	if err := obj.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
	meta := obj.(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta)
	translate.ToUpstream.ObjectMeta(meta, meta)
	out, err := obj.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMetadataInField1: every kind of protobufScheme with an ObjectMeta holds it in field 1, so that none
// is left untranslated, and the shapes without one are told apart.
func TestMetadataInField1(t *testing.T) {
	for gvk, typ := range protobufScheme.AllKnownTypes() {
		_, hasMeta := reflect.New(typ).Interface().(metav1.ObjectMetaAccessor)
		if got := metadataInField1(typ); got != hasMeta {
			t.Errorf("%s (%s): metadataInField1 is %v, has an ObjectMeta: %v", gvk, typ, got, hasMeta)
		}
	}
}

// metadataMessage returns the protobuf message of a PartialObjectMetadata of metadata meta, as
// kube-apiserver encodes it.
func metadataMessage(t testing.TB, meta metav1.ObjectMeta) []byte {
	t.Helper()
	raw, err := (&metav1.PartialObjectMetadata{ObjectMeta: meta}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestAppendObjectUpstream: the metadata translated field by field is the typed translation's encoding,
// byte for byte; label and annotation keys, finalizers and what only looks like a group are kept.
func TestAppendObjectUpstream(t *testing.T) {
	private := routestesting.PrivateCluster + "/v1beta2"
	long := translate.ToPrivate.APIVersion("infrastructure.cluster.x-k8s.io/v1beta2")
	for name, meta := range map[string]metav1.ObjectMeta{
		"every group-carrying field": {
			Name: "m", Namespace: "ns", UID: "u", ResourceVersion: "7", Generation: 3,
			Labels: map[string]string{"cluster.x-k8s.io/cluster-name": "c", routestesting.PrivateCluster + "/x": private},
			Annotations: map[string]string{
				"cluster.x-k8s.io/cloned-from-groupkind": "AWSMachineTemplate." + routestesting.PrivateCluster,
				"a":                                      private,
				"z":                                      "Machine." + routestesting.PrivateCluster,
			},
			OwnerReferences: []metav1.OwnerReference{
				{APIVersion: private, Kind: "MachineSet", Name: "ms", UID: "u1", Controller: ptr(true)},
				{APIVersion: "apps/v1", Kind: "Deployment", Name: "d", UID: "u2"},
				{APIVersion: long, Kind: "AWSCluster", Name: "a", UID: "u3"},
			},
			Finalizers: []string{routestesting.PrivateCluster, "machine.cluster.x-k8s.io"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "capi", Operation: metav1.ManagedFieldsOperationApply, APIVersion: private, FieldsType: "FieldsV1",
					FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:ownerReferences":{"k:{\"uid\":\"u1\"}":{}}}}`)},
				{Manager: "kcm", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: private, Subresource: "status"},
			},
		},
		"an apiVersion growing past a length byte": {
			OwnerReferences: []metav1.OwnerReference{{APIVersion: routestesting.PrivateCluster + "/" + string(bytes.Repeat([]byte("v"), 120)), Name: "o"}},
		},
		"only the annotation": {
			Annotations: map[string]string{"cluster.x-k8s.io/cloned-from-groupkind": "MachineTemplate." + routestesting.PrivateCluster},
		},
	} {
		t.Run(name, func(t *testing.T) {
			raw := metadataMessage(t, meta)
			want := typedObjectUpstream(t, raw, &metav1.PartialObjectMetadata{})
			got, changed, err := appendObjectUpstream([]byte("prefix"), raw)
			if err != nil || !changed || !bytes.Equal(got, append([]byte("prefix"), want...)) {
				t.Errorf("got %v, %v\n%q\nwant\n%q", changed, err, got, want)
			}
		})
	}
	t.Run("nothing to translate", func(t *testing.T) {
		raw := metadataMessage(t, metav1.ObjectMeta{Name: "m", Labels: map[string]string{"cluster.x-k8s.io/cluster-name": "c"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "cluster.x-k8s.io/v1beta2", Name: "o"}}})
		got, changed, err := appendObjectUpstream(nil, raw)
		if err != nil || changed || !bytes.Equal(got, raw) {
			t.Errorf("got %v, %v, %q", changed, err, got)
		}
	})
	t.Run("a Secret keeps its data", func(t *testing.T) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kubeconfig",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: private, Kind: "Cluster", Name: "c"}}},
			Data: map[string][]byte{"value": []byte(private)}, Type: "cluster.x-k8s.io/secret"}
		raw, err := s.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var out []byte
		got, err := metadataUpstream(&out, raw, reflect.TypeFor[corev1.Secret]())
		if want := typedObjectUpstream(t, raw, &corev1.Secret{}); err != nil || !bytes.Equal(got, want) {
			t.Errorf("got %v\n%q\nwant\n%q", err, got, want)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		raw := metadataMessage(t, metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{APIVersion: private, Name: "o"}}})
		for _, bad := range [][]byte{
			raw[:len(raw)-1], // cut short
			// an ownerReference whose apiVersion claims more than it has
			protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType),
				protowire.AppendBytes(protowire.AppendTag(nil, objectMetaOwnerReferences, protowire.BytesType), []byte{0x2a, 0x09, 'a'})),
			// an annotation entry cut short
			protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType),
				protowire.AppendBytes(protowire.AppendTag(nil, objectMetaAnnotations, protowire.BytesType), []byte{0x0a, 0x09, 'a'})),
		} {
			if _, _, err := appendObjectUpstream(nil, bad); err == nil {
				t.Errorf("%q: no error", bad)
			}
		}
	})
}

// TestAppendObjectUpstreamAllocates: a PartialObjectMetadata of a list is translated into a buffer of
// room enough without allocating.
func TestAppendObjectUpstreamAllocates(t *testing.T) {
	private := routestesting.PrivateCluster + "/v1beta2"
	raw := metadataMessage(t, metav1.ObjectMeta{Name: "m",
		Annotations:     map[string]string{"cluster.x-k8s.io/cloned-from-groupkind": "MachineTemplate." + routestesting.PrivateCluster, "b": "c"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: private, Name: "o"}},
		ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "m", APIVersion: private}, {Manager: "n", APIVersion: private}}})
	scratch := make([]byte, 0, 2*len(raw))
	if n := testing.AllocsPerRun(100, func() { _, _ = metadataUpstream(&scratch, raw, reflect.TypeFor[metav1.PartialObjectMetadata]()) }); n != 0 {
		t.Errorf("%v allocations per item", n)
	}
}

// FuzzAppendObjectUpstream holds the field-level translation to the typed one on metadata made of the
// fuzzer's strings.
func FuzzAppendObjectUpstream(f *testing.F) {
	f.Add(routestesting.PrivateCluster+"/v1beta2", "Machine."+routestesting.PrivateCluster, "cluster.x-k8s.io/cloned-from-groupkind", "v1", "n")
	f.Add("v1", "", "", "", "")
	f.Fuzz(func(t *testing.T, apiVersion, groupKind, annotation, managedAPIVersion, name string) {
		private := translate.ToPrivate.APIVersion(apiVersion)
		meta := metav1.ObjectMeta{Name: name,
			Annotations:     map[string]string{annotation: groupKind, "cluster.x-k8s.io/cloned-from-groupkind": translate.ToPrivate.GroupKind(groupKind)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: apiVersion, Name: name}, {APIVersion: private, Kind: groupKind}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: name, APIVersion: translate.ToPrivate.APIVersion(managedAPIVersion)}},
		}
		raw := metadataMessage(t, meta)
		want := typedObjectUpstream(t, raw, &metav1.PartialObjectMetadata{})
		got, changed, err := appendObjectUpstream(nil, raw)
		if err != nil || !bytes.Equal(got, want) || changed != !bytes.Equal(raw, want) {
			t.Errorf("got %v, %v\n%q\nwant\n%q", changed, err, got, want)
		}
	})
}

func ptr[T any](v T) *T { return &v }

// TestAppendObjectUpstreamOddEncodings: messages a decoder accepts though kube-apiserver never writes them
// (the metadata in two field-1 occurrences, which a decoder merges; a map entry with its value before its
// key, or its key twice) decode after the field-level translation to what the typed translation makes.
func TestAppendObjectUpstreamOddEncodings(t *testing.T) {
	private := routestesting.PrivateCluster + "/v1beta2"
	key := "cluster.x-k8s.io/cloned-from-groupkind"
	groupKind := "MachineTemplate." + routestesting.PrivateCluster
	bytesField := func(num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	metaOf := func(meta metav1.ObjectMeta) []byte {
		raw, err := meta.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	entry := func(fields ...[]byte) []byte { return bytesField(objectMetaAnnotations, slices.Concat(fields...)) }
	for name, raw := range map[string][]byte{
		"metadata in two fields": slices.Concat(
			bytesField(metadataField, metaOf(metav1.ObjectMeta{Name: "m", OwnerReferences: []metav1.OwnerReference{{APIVersion: private, Name: "a"}}})),
			bytesField(metadataField, metaOf(metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x", APIVersion: private}}}))),
		"value before key":                bytesField(metadataField, entry(bytesField(mapEntryValue, []byte(groupKind)), bytesField(mapEntryKey, []byte(key)))),
		"the key twice, the last ours":    bytesField(metadataField, entry(bytesField(mapEntryKey, []byte("other")), bytesField(mapEntryValue, []byte(groupKind)), bytesField(mapEntryKey, []byte(key)))),
		"the key twice, the last another": bytesField(metadataField, entry(bytesField(mapEntryKey, []byte(key)), bytesField(mapEntryValue, []byte(groupKind)), bytesField(mapEntryKey, []byte("other")))),
	} {
		t.Run(name, func(t *testing.T) {
			want := typedObjectUpstream(t, raw, &metav1.PartialObjectMetadata{})
			got, _, err := appendObjectUpstream(nil, raw)
			if err != nil {
				t.Fatal(err)
			}
			var decoded metav1.PartialObjectMetadata
			if err := decoded.Unmarshal(got); err != nil {
				t.Fatal(err)
			}
			if again, _ := decoded.Marshal(); !bytes.Equal(again, want) {
				t.Errorf("decodes to\n%q\nwant\n%q", again, want)
			}
		})
	}
}
