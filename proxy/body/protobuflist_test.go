package body

import (
	"bufio"
	"bytes"
	stdgzip "compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/routestesting"
)

var (
	fakeMachines   = schema.GroupResource{Group: routestesting.PrivateCluster, Resource: "machines"}
	fakeConfigMaps = schema.GroupResource{Resource: "configmaps"}
)

func untimed(fn func([]byte) ([]byte, error)) func([]byte) ([]byte, error) { return fn }

// upstreamFrom reads ProtobufUpstreamFrom's answer whole, checking its size.
func upstreamFrom(t testing.TB, tr *Translator, gr schema.GroupResource, src io.Reader) ([]byte, error) {
	t.Helper()
	r, size, err := tr.ProtobufUpstreamFrom(gr, src, untimed)
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("reading the translation: %v", err)
	}
	if int64(len(out)) != size {
		t.Fatalf("size %d, but %d bytes", size, len(out))
	}
	return out, nil
}

// upstreamGzipFrom reads ProtobufUpstreamGzipFrom's answer whole, decompressed if it is gzip'ed
// (checking that it is one gzip member, read by compress/gzip, and that nothing follows it), and checks
// its size.
func upstreamGzipFrom(t testing.TB, tr *Translator, gr schema.GroupResource, src io.Reader) (out []byte, gzipped bool, err error) {
	t.Helper()
	r, size, gzipped, err := tr.ProtobufUpstreamGzipFrom(gr, src, untimed)
	if err != nil {
		return nil, false, err
	}
	if gzipped {
		br := bufio.NewReader(r)
		zr, err := stdgzip.NewReader(br)
		if err != nil {
			t.Fatalf("the gzip'ed answer: %v", err)
		}
		zr.Multistream(false)
		r = io.MultiReader(zr, br) // what follows the member is read as if it were content
	}
	if out, err = io.ReadAll(r); err != nil {
		t.Fatalf("reading the translation: %v", err)
	}
	if int64(len(out)) != size {
		t.Fatalf("size %d, but %d bytes", size, len(out))
	}
	return out, gzipped, nil
}

// metadataList is the PartialObjectMetadataList of n Machines owned by a MachineSet of apiVersion, with
// managed fields of that apiVersion.
func metadataList(n int, apiVersion string) *metav1.PartialObjectMetadataList {
	list := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next"}}
	for i := range n {
		meta := ownedConfigMap(fmt.Sprintf("machine-%d", i), apiVersion).ObjectMeta
		meta.ManagedFields[0].APIVersion = apiVersion
		meta.Finalizers = []string{"machine.cluster.x-k8s.io"}
		list.Items = append(list.Items, metav1.PartialObjectMetadata{ObjectMeta: meta})
	}
	return list
}

// TestProtobufUpstreamFrom: read from a stream, every answer is translated into the bytes
// ProtobufUpstreamOf makes of it whole: lists item by item, anything else whole.
func TestProtobufUpstreamFrom(t *testing.T) {
	tr := New(routestesting.Table())
	private := routestesting.PrivateCluster + "/v1beta2"
	upstream := routestesting.Cluster + "/v1beta2"
	status := apierrors.NewNotFound(schema.GroupResource{Group: routestesting.PrivateCluster, Resource: "machines"}, "m").ErrStatus
	gzippedCases := 0
	defer func() {
		if gzippedCases == 0 {
			t.Error("no answer was gzip'ed")
		}
	}()
	for _, tc := range []struct {
		name string
		gr   schema.GroupResource
		in   runtime.Object
		want runtime.Object
		// gzipped: a list, gzip'ed by ProtobufUpstreamGzipFrom when larger than 128 KiB.
		gzipped bool
	}{
		{"a metadata list", fakeMachines, metadataList(300, private), metadataList(300, upstream), true},
		{"a metadata list larger than gzip's threshold", fakeMachines, metadataList(1000, private), metadataList(1000, upstream), true},
		{"a metadata list naming no private group", fakeMachines, metadataList(3, "apps/v1"), metadataList(3, "apps/v1"), true},
		{"an empty metadata list", fakeMachines, &metav1.PartialObjectMetadataList{}, &metav1.PartialObjectMetadataList{}, true},
		{"a list of built-in objects, some owned", fakeConfigMaps,
			&corev1.ConfigMapList{Items: []corev1.ConfigMap{*ownedConfigMap("a", "apps/v1"), *ownedConfigMap("b", private), *ownedConfigMap("c", "v1")}},
			&corev1.ConfigMapList{Items: []corev1.ConfigMap{*ownedConfigMap("a", "apps/v1"), *ownedConfigMap("b", upstream), *ownedConfigMap("c", "v1")}}, true},
		{"an object, read whole", fakeConfigMaps, ownedConfigMap("a", private), ownedConfigMap("a", upstream), false},
		{"a Status, read whole", fakeMachines, &status, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := encodeProtobuf(t, tc.in)
			whole, err := tr.ProtobufUpstreamOf(tc.gr)(in)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != nil {
				if want := encodeProtobuf(t, tc.want); !bytes.Equal(whole, want) {
					t.Fatalf("ProtobufUpstreamOf: %s", firstDifference(whole, want))
				}
			}
			// Read as the backend's body arrives: a byte at a time, and in one read.
			for _, src := range []io.Reader{iotest.OneByteReader(bytes.NewReader(in)), bytes.NewReader(in)} {
				got, err := upstreamFrom(t, tr, tc.gr, src)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, whole) {
					t.Fatalf("the translation read from a stream differs from the whole one: %s", firstDifference(got, whole))
				}
			}
			// For a client that accepts gzip: the same bytes, gzip'ed for a list larger than 128 KiB.
			for _, src := range []io.Reader{iotest.OneByteReader(bytes.NewReader(in)), bytes.NewReader(in)} {
				got, gzipped, err := upstreamGzipFrom(t, tr, tc.gr, src)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, whole) {
					t.Fatalf("the gzip'ed translation differs from the whole one: %s", firstDifference(got, whole))
				}
				if wantGzip := tc.gzipped && len(whole) > 128<<10; gzipped != wantGzip {
					t.Errorf("%d bytes: gzip'ed %v, want %v", len(whole), gzipped, wantGzip)
				}
				if gzipped {
					gzippedCases++
				}
			}
		})
	}
}

// firstDifference describes where got first differs from want.
func firstDifference(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	return fmt.Sprintf("%d and %d bytes, first different at %d: %q, want %q", len(got), len(want), i, got[i:min(i+40, len(got))], want[i:min(i+40, len(want))])
}

// TestProtobufUpstreamFromTimesEachItem: timed wraps the translation of every item of a list, and
// nothing else.
func TestProtobufUpstreamFromTimesEachItem(t *testing.T) {
	tr := New(routestesting.Table())
	list := metadataList(5, routestesting.PrivateCluster+"/v1beta2")
	list.Items[2] = metadataList(1, "apps/v1").Items[0] // names no private group: not translated
	calls := 0
	r, _, err := tr.ProtobufUpstreamFrom(fakeMachines, bytes.NewReader(encodeProtobuf(t, list)), func(fn func([]byte) ([]byte, error)) func([]byte) ([]byte, error) {
		return func(data []byte) ([]byte, error) { calls++; return fn(data) }
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(r); err != nil {
		t.Fatal(err)
	}
	if calls != 4 {
		t.Errorf("%d translations timed, want the 4 items that name a private group", calls)
	}
}

// TestProtobufUpstreamFromRefuses: a list cut short anywhere, or whose backend fails, is an error, never
// a shorter list; the backend's error is the error's cause.
func TestProtobufUpstreamFromRefuses(t *testing.T) {
	tr := New(routestesting.Table())
	in := encodeProtobuf(t, metadataList(20, routestesting.PrivateCluster+"/v1beta2"))
	// The envelope ends with its (empty) content encoding and type, which a decoder does without.
	trailer := []byte("\x1a\x00\x22\x00")
	if !bytes.HasSuffix(in, trailer) {
		t.Fatalf("the envelope does not end with %q: %q", trailer, in[len(in)-10:])
	}
	for cut := range len(in) - len(trailer) {
		got, err := upstreamFrom(t, tr, fakeMachines, bytes.NewReader(in[:cut]))
		if err != nil {
			continue
		}
		// Too short to be known as a list: read whole, as ProtobufUpstreamOf reads it.
		whole, wholeErr := tr.ProtobufUpstreamOf(fakeMachines)(in[:cut])
		if cut > protobufHead || wholeErr != nil || !bytes.Equal(got, whole) {
			t.Fatalf("the list cut at %d of %d bytes was answered with %d bytes", cut, len(in), len(got))
		}
	}
	broken := errors.New("the backend's connection broke")
	for _, at := range []int{10, 100, len(in) / 2, len(in) - 1} {
		_, err := upstreamFrom(t, tr, fakeMachines, io.MultiReader(bytes.NewReader(in[:at]), iotest.ErrReader(broken)))
		if !errors.Is(err, broken) {
			t.Errorf("the backend broke after %d bytes: %v, want its error", at, err)
		}
	}
	t.Run("an item larger than any object", func(t *testing.T) {
		huge := append(append([]byte{}, in[:len(in)-2]...), 0x12, 0xff, 0xff, 0xff, 0xff, 0x7f)
		if _, err := upstreamFrom(t, tr, fakeMachines, bytes.NewReader(huge)); err == nil {
			t.Error("an item of 32 GiB was accepted")
		}
	})
}

// TestProtobufUpstreamGzipFromRefuses: for a client that accepts gzip too, a list larger than gzip's
// threshold that is cut short anywhere, whose backend fails, that holds an item larger than any object,
// or one that cannot be translated half-way through is an error, never a shorter answer or a partial
// gzip member, and the backend's error is the error's cause.
func TestProtobufUpstreamGzipFromRefuses(t *testing.T) {
	tr := New(routestesting.Table())
	private := routestesting.PrivateCluster + "/v1beta2"
	in := encodeProtobuf(t, metadataList(2000, private))
	if len(in) <= 128<<10 {
		t.Fatalf("the list is %d bytes, not larger than gzip's threshold", len(in))
	}
	for cut := protobufHead; cut < len(in)-4; cut += 49999 {
		if _, _, err := upstreamGzipFrom(t, tr, fakeMachines, bytes.NewReader(in[:cut])); err == nil {
			t.Fatalf("the list cut at %d of %d bytes was answered", cut, len(in))
		}
	}
	broken := errors.New("the backend's connection broke")
	for _, at := range []int{10, 100, len(in) / 2, len(in) - 1} {
		_, _, err := upstreamGzipFrom(t, tr, fakeMachines, io.MultiReader(bytes.NewReader(in[:at]), iotest.ErrReader(broken)))
		if !errors.Is(err, broken) {
			t.Errorf("the backend broke after %d bytes: %v, want its error", at, err)
		}
	}
	// The list's message with a field put in after its 1000th item.
	var envelope runtime.Unknown
	if err := envelope.Unmarshal(in[len(protobufPrefix):]); err != nil {
		t.Fatal(err)
	}
	withField := func(field []byte) []byte {
		raw, at := envelope.Raw, 0
		for n := 0; n < 1001; n++ { // the ListMeta and 1000 items
			_, _, k := protowire.ConsumeField(raw[at:])
			at += k
		}
		msg := append(append([]byte{}, raw[:at]...), field...)
		msg = append(msg, raw[at:]...)
		e := envelope
		e.Raw = msg
		out, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return append(append([]byte{}, protobufPrefix...), out...)
	}
	withItem := func(item []byte) []byte {
		return withField(protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), item))
	}
	t.Run("an item that cannot be translated, half-way", func(t *testing.T) {
		// An ObjectMeta that claims more bytes than the item holds, naming the private group.
		bad := append([]byte{0x0a, 0x7f, 0x0a, 0x10}, routestesting.PrivateCluster...)
		_, _, err := upstreamGzipFrom(t, tr, fakeMachines, bytes.NewReader(withItem(bad)))
		if err == nil || !strings.Contains(err.Error(), "item 1000") {
			t.Errorf("%v, want an error about item 1000", err)
		}
	})
	t.Run("an item larger than any object", func(t *testing.T) {
		huge := withField([]byte{0x12, 0xff, 0xff, 0xff, 0xff, 0x7f})
		if _, _, err := upstreamGzipFrom(t, tr, fakeMachines, bytes.NewReader(huge)); err == nil || !strings.Contains(err.Error(), "larger than 64 MiB") {
			t.Errorf("an item of 32 GiB: %v", err)
		}
	})
	t.Run("a large item", func(t *testing.T) {
		// An item of 2 MiB naming the private group, among the others: translated and compressed as any.
		big := metadataList(1, private).Items[0]
		big.Annotations = map[string]string{"big": strings.Repeat("x", 2<<20)}
		item, err := big.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		data := withItem(item)
		whole, err := tr.ProtobufUpstreamOf(fakeMachines)(data)
		if err != nil {
			t.Fatal(err)
		}
		got, gzipped, err := upstreamGzipFrom(t, tr, fakeMachines, bytes.NewReader(data))
		if err != nil || !gzipped || !bytes.Equal(got, whole) {
			t.Fatalf("gzip'ed %v, %v: %s", gzipped, err, firstDifference(got, whole))
		}
	})
}

// TestProtobufUpstreamGzipFromClientGone: an answer its client stops reading half-way (it went away)
// lets go of it without an error, and the next answer is whole.
func TestProtobufUpstreamGzipFromClientGone(t *testing.T) {
	tr := New(routestesting.Table())
	in := encodeProtobuf(t, metadataList(2000, routestesting.PrivateCluster+"/v1beta2"))
	r, _, gzipped, err := tr.ProtobufUpstreamGzipFrom(fakeMachines, bytes.NewReader(in), untimed)
	if err != nil || !gzipped {
		t.Fatalf("gzip'ed %v, %v", gzipped, err)
	}
	if _, err := io.ReadFull(r, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	whole, err := tr.ProtobufUpstreamOf(fakeMachines)(in)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := upstreamGzipFrom(t, tr, fakeMachines, bytes.NewReader(in))
	if err != nil || !bytes.Equal(got, whole) {
		t.Fatalf("the next answer: %v", err)
	}
}

// FuzzProtobufUpstreamFrom: any bytes read from the backend are translated or refused cleanly, never
// with a panic, and the translation of what decodes is what ProtobufUpstreamOf makes of the same bytes,
// decoded. (The bytes may differ where the input is not as kube-apiserver encodes: ProtobufUpstreamOf
// encodes the envelope again, ProtobufUpstreamFrom keeps its fields as they came.)
func FuzzProtobufUpstreamFrom(f *testing.F) {
	private := routestesting.PrivateCluster + "/v1beta2"
	f.Add(encodeProtobuf(f, metadataList(3, private)))
	f.Add(encodeProtobuf(f, &corev1.ConfigMapList{Items: []corev1.ConfigMap{*ownedConfigMap("a", private), *ownedConfigMap("b", "v1")}}))
	f.Add(encodeProtobuf(f, ownedConfigMap("a", private)))
	f.Add([]byte("k8s\x00\x0a\x04" + routestesting.PrivateCluster))
	tr := New(routestesting.Table())
	whole := tr.ProtobufUpstreamOf(fakeMachines)
	pb := protobuf.NewSerializer(protobufScheme, protobufScheme)
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := upstreamFrom(t, tr, fakeMachines, bytes.NewReader(data))
		gotGzip, _, gzipErr := upstreamGzipFrom(t, tr, fakeMachines, bytes.NewReader(data))
		if (err == nil) != (gzipErr == nil) || !bytes.Equal(got, gotGzip) {
			t.Fatalf("%q: answered %q (%v) for a client that accepts gzip, %q (%v) for one that does not", data, gotGzip, gzipErr, got, err)
		}
		if err != nil {
			return
		}
		in, _, err := pb.Decode(data, nil, nil)
		if err != nil {
			return
		}
		want, err := whole(data)
		if err != nil {
			t.Fatalf("%q: answered %q, where ProtobufUpstreamOf fails: %v", data, got, err)
		}
		wantObj, _, err := pb.Decode(want, nil, nil)
		if err != nil {
			t.Fatalf("%q: ProtobufUpstreamOf's translation does not decode: %v", data, err)
		}
		gotObj, _, err := pb.Decode(got, nil, nil)
		if err != nil {
			t.Fatalf("%q: the translation %q of %T does not decode: %v", data, got, in, err)
		}
		if !equality.Semantic.DeepEqual(gotObj, wantObj) {
			t.Fatalf("%q: translated to %v, want %v", data, gotObj, wantObj)
		}
	})
}
