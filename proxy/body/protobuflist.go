package body

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openshift/hypershift-capi-proxy/proxy/groupnames"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/gzip"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/protofield"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/spool"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// A protobuf answer is the prefix protobufPrefix and a runtime.Unknown message: its TypeMeta (field 1),
// the object's message (Raw, field 2), and its content encoding and type (fields 3 and 4, empty from
// kube-apiserver), in that order. The message of a list is its ListMeta (field 1) and one field 2 per item;
// kube-apiserver writes it item by item (its protobuf serializer's streaming list encoding), but the
// length of Raw comes first.

const (
	// protobufHead bounds the start of an answer that is read to find out whether it is a list: the
	// prefix, the TypeMeta (an apiVersion and a kind) and the length of the list.
	protobufHead = 4 << 10
	// maxProtobufItem bounds one list item read from the backend, far above any object (etcd stores
	// objects of up to 1.5 MiB by default), so that a broken backend cannot make the proxy allocate
	// what it claims.
	maxProtobufItem = 64 << 20
	// maxProtobufTrailer bounds what follows a list in the envelope (its content encoding and type).
	maxProtobufTrailer = 64 << 10
)

// ProtobufUpstreamFrom is ProtobufUpstreamOf(gr) for an answer read from src, returned as a reader of
// size bytes. A list (of a kind protobufScheme knows, in kube-apiserver's order of the envelope's fields)
// is read item by item: each item that names a private group is translated as it arrives, and what is
// held until the last item has been read is the translation alone, compressed (package spool): the
// envelope states the list's length before its items, so nothing can be sent earlier. Anything else (an
// object, a Status, a list of a kind protobufScheme does not know) is read whole and translated as
// ProtobufUpstreamOf translates it. timed wraps each translation: of an item, or of a whole answer.
//
// Its errors are src's own read errors, wrapped (errors.Is finds them), and those of ProtobufUpstreamOf:
// a malformed answer (a list cut short included), or one that cannot be translated.
func (t *Translator) ProtobufUpstreamFrom(gr schema.GroupResource, src io.Reader, timed func(func([]byte) ([]byte, error)) func([]byte) ([]byte, error)) (io.Reader, int64, error) {
	out, size, _, err := t.protobufUpstreamFrom(gr, src, timed, newSpooled)
	return out, size, err
}

// ProtobufUpstreamGzipFrom is ProtobufUpstreamFrom for a client that accepts gzip. A list whose
// translation is larger than gzip's threshold (gzip.Compresses, as kube-apiserver decides) is returned
// gzip'ed (gzipped true) as one gzip member, and size is then the length of its content: each item is
// compressed into the member's DEFLATE stream as it is translated (gzip.Deferred), so that what is left
// once the last item has been read is to put the envelope's head, the list's length included, in front.
// The member's content is what ProtobufUpstreamFrom answers, byte for byte. Anything else is returned
// as ProtobufUpstreamFrom returns it (gzipped false), uncompressed. Its errors are ProtobufUpstreamFrom's.
func (t *Translator) ProtobufUpstreamGzipFrom(gr schema.GroupResource, src io.Reader, timed func(func([]byte) ([]byte, error)) func([]byte) ([]byte, error)) (out io.Reader, size int64, gzipped bool, err error) {
	return t.protobufUpstreamFrom(gr, src, timed, newDeferred)
}

// A listHold holds the translation of a list's message, and the envelope's fields after it, until the
// last item has been read.
type listHold interface {
	io.Writer
	// Len is the number of bytes written.
	Len() int64
	// answer ends the writing and returns the answer: start, then what was written; and whether it is
	// gzip'ed.
	answer(start []byte) (io.Reader, bool, error)
	// discard lets go of what is held, when there will be no answer.
	discard()
}

// spooled holds in a spool.Spool.
type spooled struct{ *spool.Spool }

func newSpooled() listHold { return spooled{spool.New()} }

func (s spooled) answer(start []byte) (io.Reader, bool, error) {
	r, err := s.Reader()
	return io.MultiReader(bytes.NewReader(start), r), false, err
}

func (s spooled) discard() {}

// deferred holds in a gzip.Deferred: gzip'ed if the answer is large enough to be.
type deferred struct{ *gzip.Deferred }

func newDeferred() listHold { return deferred{gzip.NewDeferred()} }

func (d deferred) answer(start []byte) (io.Reader, bool, error) {
	if !gzip.Compresses(int64(len(start)) + d.Len()) {
		r, err := d.Reader()
		return io.MultiReader(bytes.NewReader(start), r), false, err
	}
	r, err := d.Member(start)
	return r, true, err
}

func (d deferred) discard() { d.Discard() }

// protobufUpstreamFrom is ProtobufUpstreamFrom, a list's translation held in a hold of newHold.
func (t *Translator) protobufUpstreamFrom(gr schema.GroupResource, src io.Reader, timed func(func([]byte) ([]byte, error)) func([]byte) ([]byte, error), newHold func() listHold) (io.Reader, int64, bool, error) {
	fallback := t.fallback(gr)
	br := bufio.NewReaderSize(src, 32<<10)
	head, err := br.Peek(protobufHead)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, false, fmt.Errorf("reading the answer: %w", err)
	}
	list, ok := t.protobufListHead(head, fallback)
	if !ok {
		data, err := io.ReadAll(br)
		if err != nil {
			return nil, 0, false, fmt.Errorf("reading the answer: %w", err)
		}
		if len(bytes.TrimSpace(data)) == 0 {
			return bytes.NewReader(data), int64(len(data)), false, nil
		}
		out, err := timed(func(data []byte) ([]byte, error) { return t.protobufUpstream(data, fallback) })(data)
		if err != nil {
			return nil, 0, false, err
		}
		return bytes.NewReader(out), int64(len(out)), false, nil
	}
	list.typeMeta = bytes.Clone(list.typeMeta) // head is the reader's buffer, which reading the items overwrites
	_, _ = br.Discard(list.headLen)            // peeked
	items := protofield.NewReader(br, list.length)
	held := newHold()
	out, size, gzipped, err := protobufListAnswer(list, items, br, held, timed(list.item))
	if err != nil {
		held.discard()
		return nil, 0, false, err
	}
	return out, size, gzipped, nil
}

// protobufListAnswer reads the rest of a list's answer, its items from items and the envelope's fields
// after it from br, into held, and returns the answer held gives of it, of size bytes uncompressed.
func protobufListAnswer(list protobufList, items *protofield.Reader, br *bufio.Reader, held listHold, item func([]byte) ([]byte, error)) (io.Reader, int64, bool, error) {
	if err := protobufListFrom(items, held, item); err != nil {
		return nil, 0, false, fmt.Errorf("translating %s: %w", list.gvk, err)
	}
	translated := held.Len()
	trailer, err := io.ReadAll(io.LimitReader(br, maxProtobufTrailer+1))
	switch {
	case err != nil:
		return nil, 0, false, fmt.Errorf("reading the answer: %w", err)
	case len(trailer) > maxProtobufTrailer:
		return nil, 0, false, errors.New("decoding protobuf: more than 64 KiB after the list")
	}
	if err := checkTrailer(trailer); err != nil {
		return nil, 0, false, err
	}
	if err := writeAll(held, trailer); err != nil {
		return nil, 0, false, err
	}
	start := append(append(append([]byte{}, protobufPrefix...), list.typeMeta...), protowire.AppendTag(nil, 2, protowire.BytesType)...)
	start = protowire.AppendVarint(start, uint64(translated))
	size := int64(len(start)) + held.Len()
	out, gzipped, err := held.answer(start)
	if err != nil {
		return nil, 0, false, err
	}
	return out, size, gzipped, nil
}

// protobufList is the start of a protobuf answer that holds a list.
type protobufList struct {
	gvk schema.GroupVersionKind
	// typeMeta is the envelope's field 1, as it came.
	typeMeta []byte
	// item translates one item (protobufListItem).
	item func([]byte) ([]byte, error)
	// headLen is where the list's message starts, and length is its length.
	headLen int
	length  uint64
}

// protobufListHead reads the start of a protobuf answer, head: false unless it is the envelope of a list
// of a kind of protobufScheme (not of a private group), with its TypeMeta first and its message second.
func (t *Translator) protobufListHead(head []byte, fallback *translate.Node) (protobufList, bool) {
	if !bytes.HasPrefix(head, protobufPrefix) {
		return protobufList{}, false
	}
	i := len(protobufPrefix)
	field := func(want protowire.Number) (uint64, bool) {
		num, typ, n := protowire.ConsumeTag(head[i:])
		if n < 0 || num != want || typ != protowire.BytesType {
			return 0, false
		}
		i += n
		length, n := protowire.ConsumeVarint(head[i:])
		if n < 0 {
			return 0, false
		}
		i += n
		return length, true
	}
	length, ok := field(1)
	if !ok || length > uint64(len(head)-i) {
		return protobufList{}, false
	}
	var typeMeta runtime.TypeMeta
	if err := typeMeta.Unmarshal(head[i : i+int(length)]); err != nil {
		return protobufList{}, false
	}
	list := protobufList{gvk: schema.FromAPIVersionAndKind(typeMeta.APIVersion, typeMeta.Kind), typeMeta: head[len(protobufPrefix) : i+int(length)]}
	i += int(length)
	if translate.ToUpstream.Maps(list.gvk.Group) {
		return protobufList{}, false
	}
	obj, err := protobufScheme.New(list.gvk)
	if err != nil {
		return protobufList{}, false
	}
	if list.item, ok = t.protobufListItem(list.gvk, obj, fallback); !ok {
		return protobufList{}, false
	}
	if list.length, ok = field(2); !ok {
		return protobufList{}, false
	}
	list.headLen = i
	return list, true
}

// protobufListFrom copies the message of a list from src to dst field by field, each item (field 2) that
// names a private group translated by item (nil: kept as it is).
func protobufListFrom(src *protofield.Reader, dst io.Writer, item func([]byte) ([]byte, error)) error {
	var value, out []byte
	for n := 0; src.Left() > 0; {
		out = out[:0]
		num, typ, err := src.Tag(&out)
		if err != nil {
			return err
		}
		switch typ {
		case protowire.VarintType:
			_, err = src.Varint(&out)
		case protowire.Fixed32Type:
			err = src.CopyTo(&out, 4)
		case protowire.Fixed64Type:
			err = src.CopyTo(&out, 8)
		case protowire.BytesType:
			var length uint64
			if length, err = src.Varint(&out); err != nil {
				break
			}
			if num == 2 && length > maxProtobufItem {
				return fmt.Errorf("item %d: decoding protobuf: larger than 64 MiB", n)
			}
			if num != 2 {
				// The ListMeta (or a field of no item) is copied as it is.
				if err = writeAll(dst, out); err == nil {
					err = src.CopyN(dst, length)
				}
				out = out[:0]
				break
			}
			if value, err = src.Read(value[:0], int(length)); err != nil {
				break
			}
			n++
			var translated []byte
			if groupnames.Mentions(translate.ToUpstream, value) {
				if translated, err = item(value); err != nil {
					return fmt.Errorf("item %d: %w", n-1, err)
				}
			}
			if translated == nil {
				out = append(out, value...)
			} else {
				out = protowire.AppendTag(out[:0], 2, protowire.BytesType)
				out = protowire.AppendBytes(out, translated)
			}
		default:
			err = fmt.Errorf("decoding protobuf: wire type %d in a list", typ)
		}
		if err == nil {
			err = writeAll(dst, out)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkTrailer checks what follows a list in the envelope: its content encoding and type (fields 3 and
// 4), and fields of no meaning to runtime.Unknown, passed on as they are. A second TypeMeta or Raw would
// replace the first for a decoder.
func checkTrailer(trailer []byte) error {
	for len(trailer) > 0 {
		num, typ, n := protowire.ConsumeField(trailer)
		if n < 0 {
			return fmt.Errorf("decoding protobuf: %w", protowire.ParseError(n))
		}
		if num <= 2 {
			return fmt.Errorf("decoding protobuf: field %d (wire type %d) after the list", num, typ)
		}
		trailer = trailer[n:]
	}
	return nil
}

func writeAll(w io.Writer, p []byte) error {
	_, err := w.Write(p)
	return err
}
