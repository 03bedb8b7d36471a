package bench

// The protobuf paths (issue #15: protobuf kept where the client asked for it), with allocation counts:
// the pass-through of answers that name no private group (a byte search, no decode), and the transcode
// of those that do (a Secret owned by a Cluster, a metadata-only list and watch of Machines):
//
//	go test -run '^$' -bench 'HotProtobuf' -benchmem ./tests/bench/
//
// BenchmarkHotProtobufMetadataList translates a list held whole (ProtobufUpstreamOf), as the proxy did
// until it read protobuf lists item by item (BenchmarkHotProtobufMetadataListFrom).

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/stream"
	"github.com/openshift/hypershift-capi-proxy/tests/bench/machines"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

var pbScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientscheme.AddToScheme(s)
	_ = metav1.AddMetaToScheme(s)
	return s
}()

// pbEncode encodes obj as kube-apiserver does in protobuf.
func pbEncode(b *testing.B, obj runtime.Object) []byte {
	gvks, _, err := pbScheme.ObjectKinds(obj)
	if err != nil {
		b.Fatal(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(pbScheme, pbScheme).Encode(obj, &buf); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// secret is a 2 KB kubeconfig Secret, owned by a Cluster in the private group (or by nothing).
func secret(i int, owned bool) corev1.Secret {
	s := corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c-%d-kubeconfig", i), Namespace: "bench",
		Labels: map[string]string{"cluster.x-k8s.io/cluster-name": fmt.Sprintf("c-%d", i)}, ResourceVersion: "12345",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{".":{},"f:value":{}},"f:metadata":{"f:labels":{}}}`)}}},
		Type: "cluster.x-k8s.io/secret", Data: map[string][]byte{"value": bytes.Repeat([]byte("k"), 1800)}}
	if owned {
		s.OwnerReferences = []metav1.OwnerReference{{APIVersion: machines.PrivateCore + "/v1beta2", Kind: "Cluster", Name: fmt.Sprintf("c-%d", i), UID: "0b9f7a4e-5d1c-4c8e-9a55-3e2f0d6a7b10"}}
	}
	return s
}

// machineMetadata is the PartialObjectMetadata of a Machine, as a metadata-only informer sees it: its
// owner and managed fields name the private group.
func machineMetadata(i int) metav1.PartialObjectMetadata {
	return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("machine-%d", i), Namespace: "bench",
		Labels: map[string]string{"cluster.x-k8s.io/cluster-name": "c", "cluster.x-k8s.io/set-name": "ms"}, ResourceVersion: "12345",
		Finalizers:      []string{"machine.cluster.x-k8s.io"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: machines.PrivateCore + "/v1beta2", Kind: "MachineSet", Name: "ms", UID: "0b9f7a4e-5d1c-4c8e-9a55-3e2f0d6a7b10", Controller: new(true)}},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: machines.PrivateCore + "/v1beta2",
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{}},"f:spec":{"f:clusterName":{}}}`)}}}}
}

func benchmarkProtobuf(b *testing.B, gr schema.GroupResource, data []byte) {
	upstream := body.New(translate.NewTable(routes.Routes)).ProtobufUpstreamOf(gr)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := upstream(data); err != nil {
			b.Fatal(err)
		}
	}
}

var secrets = schema.GroupResource{Resource: "secrets"}

// BenchmarkHotProtobufPassThroughList: a 1,000-Secret list (2 MB) naming no private group: searched,
// passed on as it is.
func BenchmarkHotProtobufPassThroughList(b *testing.B) {
	list := &corev1.SecretList{}
	for i := range 1000 {
		list.Items = append(list.Items, secret(i, false))
	}
	benchmarkProtobuf(b, secrets, pbEncode(b, list))
}

// BenchmarkHotProtobufObject: one Secret owned by a Cluster, transcoded.
func BenchmarkHotProtobufObject(b *testing.B) {
	s := secret(1, true)
	benchmarkProtobuf(b, secrets, pbEncode(b, &s))
}

// BenchmarkHotProtobufList: a 1,000-Secret list of which one in ten is owned by a Cluster: those items
// transcoded, the others' bytes kept.
func BenchmarkHotProtobufList(b *testing.B) {
	list := &corev1.SecretList{}
	for i := range 1000 {
		list.Items = append(list.Items, secret(i, i%10 == 0))
	}
	benchmarkProtobuf(b, secrets, pbEncode(b, list))
}

// BenchmarkHotProtobufMetadataList: the PartialObjectMetadataList of 1,000 Machines, every item
// transcoded.
func BenchmarkHotProtobufMetadataList(b *testing.B) {
	list := &metav1.PartialObjectMetadataList{}
	for i := range 1000 {
		list.Items = append(list.Items, machineMetadata(i))
	}
	benchmarkProtobuf(b, machinesResource, pbEncode(b, list))
}

// metadataListFrom is the setup of the ListFrom benchmarks: a protobuf PartialObjectMetadataList of 1,000
// Machines as the backend sends it, the translator, and a timing function that times nothing. It sets
// the benchmark's bytes and reports its allocations.
func metadataListFrom(b *testing.B) ([]byte, *body.Translator, func(func([]byte) ([]byte, error)) func([]byte) ([]byte, error)) {
	list := &metav1.PartialObjectMetadataList{}
	for i := range 1000 {
		list.Items = append(list.Items, machineMetadata(i))
	}
	data := pbEncode(b, list)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	untimed := func(fn func([]byte) ([]byte, error)) func([]byte) ([]byte, error) { return fn }
	return data, body.New(translate.NewTable(routes.Routes)), untimed
}

// BenchmarkHotProtobufMetadataListFrom: the same list as the proxy serves it, read from the backend's
// body item by item (body.Translator.ProtobufUpstreamFrom), its translation held compressed until the
// last item and then read out.
func BenchmarkHotProtobufMetadataListFrom(b *testing.B) {
	data, tr, untimed := metadataListFrom(b)
	for b.Loop() {
		r, _, err := tr.ProtobufUpstreamFrom(machinesResource, bytes.NewReader(data), untimed)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHotProtobufMetadataListFromGzip: BenchmarkHotProtobufMetadataListFrom for a client that
// accepts gzip (client-go's metadata client): the list compressed item by item into its gzip'ed answer
// as it is read (body.Translator.ProtobufUpstreamGzipFrom), and then read out.
func BenchmarkHotProtobufMetadataListFromGzip(b *testing.B) {
	data, tr, untimed := metadataListFrom(b)
	for b.Loop() {
		r, _, gzipped, err := tr.ProtobufUpstreamGzipFrom(machinesResource, bytes.NewReader(data), untimed)
		if err != nil || !gzipped {
			b.Fatal(gzipped, err)
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHotProtobufWatch: 1,000 MODIFIED events of a Machine's metadata through
// stream.ProtobufWatchReader.
func BenchmarkHotProtobufWatch(b *testing.B) {
	upstream := body.New(translate.NewTable(routes.Routes)).ProtobufUpstreamOf(machinesResource)
	var events []byte
	for i := range 1000 {
		m := machineMetadata(i)
		e := metav1.WatchEvent{Type: "MODIFIED", Object: runtime.RawExtension{Raw: pbEncode(b, &m)}}
		data, err := e.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		events = binary.BigEndian.AppendUint32(events, uint32(len(data)))
		events = append(events, data...)
	}
	b.SetBytes(int64(len(events)))
	b.ReportAllocs()
	for b.Loop() {
		r := stream.NewProtobufWatchReader(bytes.NewReader(events), upstream)
		if _, err := io.Copy(io.Discard, r); err != nil || r.Err() != nil {
			b.Fatal(err, r.Err())
		}
	}
}
