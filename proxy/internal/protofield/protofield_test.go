package protofield

import (
	"bytes"
	"errors"
	"slices"
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
	if _, err := Replace(msg, 2, func([]byte) ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("fn's error: got %v", err)
	}
	if _, err := Replace(msg[:len(msg)-2], 2, upper); err == nil {
		t.Error("a truncated message: no error")
	}
}

// field is one length-delimited field: its tag and its value with a minimal length.
func field(num protowire.Number, value []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), value)
}

// TestAppendLengths: a replacement whose length takes more, fewer or as many bytes as the value's, and a
// value whose length came in more bytes than it needs, are each written with their own minimal length,
// the fields around them as they were.
func TestAppendLengths(t *testing.T) {
	varintField := protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), 300)
	padded := append(protowire.AppendTag(nil, 2, protowire.BytesType), 0x83, 0x80, 0x00) // 3, in three bytes
	padded = append(padded, "abc"...)
	for _, c := range []struct {
		name       string
		value      []byte // the value of field 2 (nil: padded)
		replace    []byte
		wantValue2 []byte
	}{
		{"as long", []byte("abc"), []byte("xyz"), []byte("xyz")},
		{"one byte to two", bytes.Repeat([]byte("a"), 127), bytes.Repeat([]byte("b"), 128), bytes.Repeat([]byte("b"), 128)},
		{"two bytes to one", bytes.Repeat([]byte("a"), 128), bytes.Repeat([]byte("b"), 127), bytes.Repeat([]byte("b"), 127)},
		{"two bytes to three", bytes.Repeat([]byte("a"), 200), bytes.Repeat([]byte("b"), 1<<14), bytes.Repeat([]byte("b"), 1<<14)},
		{"to empty", []byte("abc"), []byte{}, []byte{}},
		{"a padded length", nil, []byte("xyz"), []byte("xyz")},
	} {
		t.Run(c.name, func(t *testing.T) {
			two := padded
			if c.value != nil {
				two = field(2, c.value)
			}
			msg := slices.Concat(field(1, []byte("first")), two, varintField, field(4, []byte("last")))
			want := slices.Concat(field(1, []byte("first")), field(2, c.wantValue2), varintField, field(4, []byte("last")))
			for _, dst := range [][]byte{nil, []byte("prefix"), make([]byte, 0, 1<<16)} {
				got, changed, err := Append(slices.Clone(dst), msg, func(dst []byte, num protowire.Number, value []byte) ([]byte, bool, error) {
					if num != 2 {
						return append(dst, "dropped"...), false, nil // kept: what it appended is dropped
					}
					return append(dst, c.replace...), true, nil
				})
				if err != nil || !changed || !bytes.Equal(got, append(slices.Clone(dst), want...)) {
					t.Errorf("dst %q: got %q, %v, %v, want %q", dst, got, changed, err, want)
				}
			}
		})
	}
}

// TestAppendNested: a walk into embedded messages replaces what lies below them, and keeps every byte of a
// message in which nothing was replaced.
func TestAppendNested(t *testing.T) {
	inner := func(v string) []byte { return slices.Concat(field(1, []byte("k")), field(5, []byte(v))) }
	msg := slices.Concat(field(1, []byte("name")), field(13, inner("a")), field(13, inner("change")), field(14, []byte("change")))
	var fn Func
	fn = func(dst []byte, num protowire.Number, value []byte) ([]byte, bool, error) {
		switch {
		case num == 13:
			return Append(dst, value, fn)
		case num == 5 && string(value) == "change":
			return append(dst, "changed, and longer"...), true, nil
		}
		return dst, false, nil
	}
	got, changed, err := Append(nil, msg, fn)
	want := slices.Concat(field(1, []byte("name")), field(13, inner("a")), field(13, inner("changed, and longer")), field(14, []byte("change")))
	if err != nil || !changed || !bytes.Equal(got, want) {
		t.Errorf("got %q, %v, %v, want %q", got, changed, err, want)
	}
	unchanged := slices.Concat(field(1, []byte("name")), field(13, inner("a")))
	if got, changed, err := Append(nil, unchanged, fn); err != nil || changed || !bytes.Equal(got, unchanged) {
		t.Errorf("nothing to replace: got %q, %v, %v", got, changed, err)
	}
	if _, _, err := Append(nil, slices.Concat(field(13, []byte{0x2a, 0x05, 'a'})), fn); err == nil {
		t.Error("an embedded message cut short: no error")
	}
	boom := errors.New("boom")
	if _, _, err := Append(nil, msg, func([]byte, protowire.Number, []byte) ([]byte, bool, error) { return nil, false, boom }); !errors.Is(err, boom) {
		t.Errorf("fn's error: got %v", err)
	}
}

// TestAppendAllocates: walking nested messages into a buffer of room enough allocates nothing.
func TestAppendAllocates(t *testing.T) {
	inner := slices.Concat(field(1, []byte("k")), field(5, []byte("change")))
	msg := slices.Concat(field(1, []byte("name")), field(13, inner), field(13, inner))
	var fn Func
	fn = func(dst []byte, num protowire.Number, value []byte) ([]byte, bool, error) {
		switch num {
		case 13:
			return Append(dst, value, fn)
		case 5:
			return append(dst, "changed"...), true, nil
		}
		return dst, false, nil
	}
	dst := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { _, _, _ = Append(dst[:0], msg, fn) }); n != 0 {
		t.Errorf("%v allocations per walk", n)
	}
}
