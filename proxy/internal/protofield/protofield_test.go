package protofield

import (
	"bytes"
	"errors"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func TestReplace(t *testing.T) {
	var msg []byte
	msg = protowire.AppendTag(msg, 1, protowire.BytesType)
	msg = protowire.AppendBytes(msg, []byte("meta"))
	msg = protowire.AppendTag(msg, 2, protowire.BytesType)
	msg = protowire.AppendBytes(msg, []byte("keep"))
	msg = protowire.AppendTag(msg, 2, protowire.VarintType) // field 2, not length-delimited: never given to fn
	msg = protowire.AppendVarint(msg, 7)
	msg = protowire.AppendTag(msg, 2, protowire.BytesType)
	msg = protowire.AppendBytes(msg, []byte("change"))

	upper := func(v []byte) ([]byte, error) {
		if string(v) == "change" {
			return []byte("CHANGED!"), nil
		}
		return nil, nil
	}
	got, err := Replace(msg, 2, upper)
	want := bytes.Replace(msg, []byte("\x06change"), []byte("\x08CHANGED!"), 1)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("got %q, %v, want %q", got, err, want)
	}
	if got, err := Replace(msg, 3, upper); got != nil || err != nil {
		t.Errorf("no field 3: got %q, %v, want nil", got, err)
	}
	boom := errors.New("boom")
	if _, err := Replace(msg, 2, func([]byte) ([]byte, error) { return nil, boom }); err != boom {
		t.Errorf("fn's error: got %v", err)
	}
	if _, err := Replace(msg[:len(msg)-2], 2, upper); err == nil {
		t.Error("a truncated message: no error")
	}
}
