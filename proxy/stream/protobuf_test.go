package stream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func protobufWatchFrame(t *testing.T, eventType, object string) []byte {
	t.Helper()
	e := metav1.WatchEvent{Type: eventType, Object: runtime.RawExtension{Raw: []byte(object)}}
	data, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return protobufFrame(data)
}

func readProtobufWatch(t *testing.T, data []byte) []metav1.WatchEvent {
	t.Helper()
	var events []metav1.WatchEvent
	for len(data) > 0 {
		size := binary.BigEndian.Uint32(data)
		var e metav1.WatchEvent
		if err := e.Unmarshal(data[4 : 4+size]); err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
		data = data[4+size:]
	}
	return events
}

// TestProtobufWatchReader: each frame's object is translated, frames the translation leaves alone keep
// their bytes, dropped events are skipped, and the stream ends cleanly at the end of the backend's.
func TestProtobufWatchReader(t *testing.T) {
	in := bytes.Join([][]byte{
		protobufWatchFrame(t, "ADDED", "k8s\x00 private.example one"),
		protobufWatchFrame(t, "MODIFIED", "k8s\x00 nothing to do"),
		protobufWatchFrame(t, "DELETED", "drop me"),
		protobufWatchFrame(t, "BOOKMARK", "k8s\x00 private.example"),
	}, nil)
	object := func(obj []byte) ([]byte, error) {
		if string(obj) == "drop me" {
			return nil, nil
		}
		return bytes.ReplaceAll(obj, []byte("private.example"), []byte("up")), nil
	}
	r := NewProtobufWatchReader(iotest.OneByteReader(bytes.NewReader(in)), object)
	out, err := io.ReadAll(r)
	if err != nil || r.Err() != nil {
		t.Fatal(err, r.Err())
	}
	var got []string
	for _, e := range readProtobufWatch(t, out) {
		got = append(got, e.Type+" "+string(e.Object.Raw))
	}
	want := []string{"ADDED k8s\x00 up one", "MODIFIED k8s\x00 nothing to do", "BOOKMARK k8s\x00 up"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
	if second := protobufWatchFrame(t, "MODIFIED", "k8s\x00 nothing to do"); !bytes.Contains(out, second) {
		t.Error("an untranslated frame changed")
	}
}

// TestProtobufWatchReaderEnds: a frame that cannot be translated ends the stream with an ERROR event; a
// backend that breaks off inside a frame ends it without one.
func TestProtobufWatchReaderEnds(t *testing.T) {
	failing := func([]byte) ([]byte, error) { return nil, errors.New("boom") }
	r := NewProtobufWatchReader(bytes.NewReader(protobufWatchFrame(t, "ADDED", "x")), failing)
	out, _ := io.ReadAll(r)
	events := readProtobufWatch(t, out)
	if len(events) != 1 || events[0].Type != "ERROR" || !bytes.HasPrefix(events[0].Object.Raw, protobufPrefix) || r.Err() == nil {
		t.Errorf("events %v, err %v", events, r.Err())
	}
	var s metav1.Status
	var unk runtime.Unknown
	if err := unk.Unmarshal(events[0].Object.Raw[4:]); err != nil {
		t.Fatal(err)
	}
	if err := s.Unmarshal(unk.Raw); err != nil || s.Code != 500 || unk.Kind != "Status" {
		t.Errorf("status %v %v %v", s, unk.TypeMeta, err)
	}

	frame := protobufWatchFrame(t, "ADDED", "x")
	r = NewProtobufWatchReader(bytes.NewReader(frame[:len(frame)-1]), func(b []byte) ([]byte, error) { return b, nil })
	if out, _ := io.ReadAll(r); len(out) != 0 || !errors.Is(r.Err(), io.ErrUnexpectedEOF) {
		t.Errorf("out %q, err %v", out, r.Err())
	}
}

// FuzzProtobufWatch: whatever the backend sends as a protobuf watch, the reader never panics, and what it
// hands on is whole frames of WatchEvents.
func FuzzProtobufWatch(f *testing.F) {
	f.Add(bytes.Join([][]byte{
		protobufWatchFrame(&testing.T{}, "ADDED", "k8s\x00 private.example"),
		protobufWatchFrame(&testing.T{}, "ERROR", "k8s\x00"),
	}, nil))
	f.Add([]byte{0, 0, 0, 2, 0x12, 0})
	object := func(obj []byte) ([]byte, error) {
		if bytes.Contains(obj, []byte("fail")) {
			return nil, errors.New("fail")
		}
		return bytes.ReplaceAll(obj, []byte("private.example"), []byte("up")), nil
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := io.ReadAll(NewProtobufWatchReader(bytes.NewReader(data), object))
		if err != nil {
			t.Fatal(err)
		}
		for len(out) > 0 {
			if len(out) < 4 {
				t.Fatalf("a partial frame header %q", out)
			}
			size := binary.BigEndian.Uint32(out)
			if uint32(len(out)-4) < size {
				t.Fatalf("a partial frame %q", out)
			}
			var e metav1.WatchEvent
			if err := e.Unmarshal(out[4 : 4+size]); err != nil && !bytes.Contains(data, out[4:4+size]) {
				t.Fatalf("a frame the proxy wrote does not decode: %v", err)
			}
			out = out[4+size:]
		}
	})
}
