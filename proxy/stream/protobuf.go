package stream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/protofield"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// A protobuf watch (Content-Type application/vnd.kubernetes.protobuf;stream=watch) is a sequence of
// frames, each a 4-byte big-endian length and a metav1.WatchEvent message of that length without the
// envelope (protobuf.LengthDelimitedFramer around the raw protobuf serializer): its type (field 1) and
// a runtime.RawExtension (field 2) whose raw bytes (its field 1) are the event's object, encoded with the
// envelope as any protobuf object (k8s.io/apiserver's watchEncoder).

// maxProtobufFrame bounds one frame read from the backend: far above any watch event (etcd stores
// objects of up to 1.5 MiB by default), so that a broken backend cannot make the proxy hold unbounded
// memory.
const maxProtobufFrame = 64 << 20

// ProtobufWatchReader is WatchReader for a protobuf watch: each Read hands on the next translated frame,
// or the rest of it, and src is read only when the last frame was read whole. The object of every event
// (ADDED, MODIFIED, DELETED, BOOKMARK and ERROR alike: the translation chooses by the object's kind) is
// translated by object, which gets the protobuf-encoded object and may return it as it is (the frame is
// then passed on as the backend sent it) or nil to drop the event. A frame that cannot be read or
// translated ends the stream after an ERROR event carrying a 500 Status, in protobuf; the end of src, or
// its failure between frames or inside one, ends it without one, as the backend's own stream would have
// ended (Err tells them apart).
type ProtobufWatchReader struct {
	src    io.Reader
	object func([]byte) ([]byte, error)
	header [4]byte
	// pending is the part of the current frame not read yet.
	pending []byte
	ended   bool
	err     error
}

// NewProtobufWatchReader returns a ProtobufWatchReader of the frames of src.
func NewProtobufWatchReader(src io.Reader, object func([]byte) ([]byte, error)) *ProtobufWatchReader {
	return &ProtobufWatchReader{src: src, object: object}
}

// Read implements io.Reader.
func (r *ProtobufWatchReader) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		if r.ended {
			return 0, io.EOF
		}
		r.next()
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

// Err returns why the stream ended: nil at its end or before it, the reader's error when src failed, else
// the frame that could not be translated.
func (r *ProtobufWatchReader) Err() error { return r.err }

// Idle reports whether the reader holds nothing of the stream and the stream has not ended: its next
// Read reads src (and waits for it), as WatchReader.Idle.
func (r *ProtobufWatchReader) Idle() bool { return len(r.pending) == 0 && !r.ended }

// next reads and translates the next frame into pending (nothing for a dropped event: Read then reads
// the next), or ends the stream: pending then holds the ERROR event, if any, and err why it ended.
func (r *ProtobufWatchReader) next() {
	if _, err := io.ReadFull(r.src, r.header[:]); err != nil {
		r.ended = true
		if !errors.Is(err, io.EOF) {
			r.err = err
		}
		return
	}
	size := binary.BigEndian.Uint32(r.header[:])
	if size > maxProtobufFrame {
		r.fail(fmt.Errorf("watch event: a frame of %d bytes", size))
		return
	}
	frame, err := readFrame(r.src, r.header, size)
	if err != nil {
		r.ended, r.err = true, err
		return
	}
	out, err := protobufEvent(frame[4:], r.object)
	switch {
	case err != nil:
		r.fail(fmt.Errorf("watch event: %w", err))
	case out == nil: // dropped
	case len(out) == int(size) && (size == 0 || &out[0] == &frame[4]):
		r.pending = frame // as the backend sent it
	default:
		r.pending = protobufFrame(out)
	}
}

// eagerFrame is the largest frame read into a buffer of its stated length at once; a longer one is read
// as it comes, so that a length the backend does not send is not allocated.
const eagerFrame = 1 << 20

// readFrame reads the size bytes of a frame after its header, and returns the frame with its header.
func readFrame(src io.Reader, header [4]byte, size uint32) ([]byte, error) {
	if size <= eagerFrame {
		frame := make([]byte, 4+size)
		copy(frame, header[:])
		if _, err := io.ReadFull(src, frame[4:]); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		return frame, nil
	}
	buf := bytes.NewBuffer(make([]byte, 0, 4+eagerFrame))
	buf.Write(header[:])
	n, err := buf.ReadFrom(io.LimitReader(src, int64(size)))
	if err == nil && n < int64(size) {
		err = io.ErrUnexpectedEOF
	}
	return buf.Bytes(), err
}

func (r *ProtobufWatchReader) fail(err error) {
	r.ended, r.err = true, err
	r.pending = protobufFrame(protobufErrorEvent(err))
}

func protobufFrame(event []byte) []byte {
	frame := make([]byte, 4, 4+len(event))
	binary.BigEndian.PutUint32(frame, uint32(len(event)))
	return append(frame, event...)
}

// protobufEvent translates one metav1.WatchEvent message (without frame or envelope): the raw object of
// its RawExtension with object, every other field as it is. It returns event itself when object returns
// the object as it is, nil when object drops it, and an error for a malformed event.
func protobufEvent(event []byte, object func([]byte) ([]byte, error)) ([]byte, error) {
	out, err := protofield.Replace(event, 2, func(ext []byte) ([]byte, error) {
		return protofield.Replace(ext, 1, func(obj []byte) ([]byte, error) {
			out, err := object(obj)
			switch {
			case err != nil:
				return nil, err
			case out == nil:
				return nil, errDropped
			case len(out) == len(obj) && (len(obj) == 0 || &out[0] == &obj[0]):
				return nil, nil // the object as it is
			}
			return out, nil
		})
	})
	switch {
	case errors.Is(err, errDropped):
		return nil, nil
	case err != nil:
		return nil, err
	case out == nil:
		return event, nil
	}
	return out, nil
}

// errDropped carries object's dropping of an event out of protofield.Replace.
var errDropped = errors.New("dropped")

// protobufPrefix starts every protobuf-encoded object (k8s.io/apimachinery's protobuf serializer).
var protobufPrefix = []byte{0x6b, 0x38, 0x73, 0x00}

// protobufErrorEvent is ErrorEvent in protobuf: a metav1.WatchEvent message of type ERROR whose object is
// a 500 InternalError Status for err, encoded as kube-apiserver encodes them.
func protobufErrorEvent(err error) []byte {
	s := apierrors.NewInternalError(err).ErrStatus
	raw, _ := s.Marshal()
	unk := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Status"}, Raw: raw}
	obj, _ := unk.Marshal()
	event := metav1.WatchEvent{Type: watchError, Object: runtime.RawExtension{Raw: append(append([]byte(nil), protobufPrefix...), obj...)}}
	out, _ := event.Marshal()
	return out
}
