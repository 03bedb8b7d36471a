package protofield

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func TestReader(t *testing.T) {
	msg := protowire.AppendTag(nil, 1, protowire.VarintType)
	msg = protowire.AppendVarint(msg, 300)
	msg = protowire.AppendTag(msg, 2, protowire.BytesType)
	msg = protowire.AppendBytes(msg, []byte("item"))
	r := NewReader(bufio.NewReader(bytes.NewReader(msg)), uint64(len(msg)))
	var raw []byte
	if num, typ, err := r.Tag(&raw); err != nil || num != 1 || typ != protowire.VarintType {
		t.Fatalf("Tag: %d %d %v", num, typ, err)
	}
	if v, err := r.Varint(&raw); err != nil || v != 300 {
		t.Fatalf("Varint: %d %v", v, err)
	}
	if _, _, err := r.Tag(&raw); err != nil {
		t.Fatal(err)
	}
	n, err := r.Varint(&raw)
	if err != nil {
		t.Fatal(err)
	}
	value, err := r.Read(nil, int(n))
	if err != nil || string(value) != "item" {
		t.Fatalf("Read: %q %v", value, err)
	}
	if !bytes.Equal(raw, msg[:len(msg)-4]) || r.Left() != 0 {
		t.Fatalf("raw %x, left %d", raw, r.Left())
	}
	if _, err := r.Varint(&raw); !errors.Is(err, protowire.ParseError(-1)) {
		t.Fatalf("past the end: %v", err)
	}
}

func TestReaderShort(t *testing.T) {
	// The message claims more bytes than the stream holds.
	r := NewReader(bufio.NewReader(strings.NewReader("ab")), 10)
	if err := r.CopyN(io.Discard, 5); !errors.Is(err, protowire.ParseError(-1)) {
		t.Fatalf("CopyN: %v", err)
	}
	r = NewReader(bufio.NewReader(strings.NewReader("abc")), 2)
	if err := r.CopyTo(new([]byte), 3); !errors.Is(err, protowire.ParseError(-1)) {
		t.Fatalf("CopyTo beyond the message: %v", err)
	}
}
