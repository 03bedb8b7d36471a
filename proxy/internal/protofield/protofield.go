// Package protofield rewrites length-delimited fields of protobuf messages in place of a decode and
// re-encode: every byte of the message but the replaced values stays as it was. A Reader reads a
// message's fields from a stream (reader.go).
package protofield

import (
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// Replace returns msg with the value of each length-delimited field num replaced by what fn returns for
// it, every other field as it is, in its order. fn returns nil to keep a value as it is. Replace returns
// nil when it replaced nothing, fn's first error as it is, and protowire's parse error for a malformed
// message.
func Replace(msg []byte, num protowire.Number, fn func(value []byte) ([]byte, error)) ([]byte, error) {
	out, changed, err := Append(make([]byte, 0, len(msg)+64), msg, func(dst []byte, n protowire.Number, value []byte) ([]byte, bool, error) {
		if n != num {
			return dst, false, nil
		}
		replaced, err := fn(value)
		if err != nil || replaced == nil {
			return dst, false, err
		}
		return append(dst, replaced...), true, nil
	})
	if err != nil || !changed {
		return nil, err
	}
	return out, nil
}

// A Func is given the number and value of a length-delimited field (a string, bytes, an embedded message
// or a packed repeated field: the wire type does not tell them apart) and dst. To replace the value it
// appends the new one to dst, without tag or length, and returns dst and true; to keep the value as it is
// it returns false (what it appended is dropped). An error ends the walk.
type Func func(dst []byte, num protowire.Number, value []byte) ([]byte, bool, error)

// Append appends msg to dst field by field, in its order: every field as it is, but the length-delimited
// fields whose values fn replaces, each written with its tag, as it came, and the replacement's length.
// It returns the extended dst and whether fn replaced any value (a replacement equal to the value counts:
// fn decides), fn's first error as it is, or protowire's parse error for a malformed message (dst is then
// of no use). Nothing is allocated beyond dst's growth, so that a walk into nested messages (fn calling
// Append on a value) costs no garbage.
func Append(dst, msg []byte, fn Func) ([]byte, bool, error) {
	changed := false
	for i := 0; i < len(msg); {
		num, typ, tagLen := protowire.ConsumeTag(msg[i:])
		if tagLen < 0 {
			return dst, false, protowire.ParseError(tagLen)
		}
		valueLen := protowire.ConsumeFieldValue(num, typ, msg[i+tagLen:])
		if valueLen < 0 {
			return dst, false, protowire.ParseError(valueLen)
		}
		field := msg[i : i+tagLen+valueLen]
		i += len(field)
		if typ != protowire.BytesType {
			dst = append(dst, field...)
			continue
		}
		value, _ := protowire.ConsumeBytes(field[tagLen:])
		// The tag and the value's length as they came: a replacement of a length of as many bytes (the
		// common case) is written over it without moving.
		start := len(dst)
		dst = append(dst, field[:len(field)-len(value)]...)
		at := len(dst)
		var replaced bool
		var err error
		if dst, replaced, err = fn(dst, num, value); err != nil {
			return dst, false, err
		}
		if !replaced {
			dst = append(dst[:at], value...)
			continue
		}
		changed = true
		dst = setLength(dst, start+tagLen, at)
	}
	return dst, changed, nil
}

// setLength writes the length of dst[at:] as a varint at dst[lengthAt:at], where a varint of at-lengthAt
// bytes was reserved, moving dst[at:] when the length takes another number of bytes.
func setLength(dst []byte, lengthAt, at int) []byte {
	size := len(dst) - at
	reserved, want := at-lengthAt, protowire.SizeVarint(uint64(size))
	if want != reserved {
		end := lengthAt + want + size
		if want > reserved {
			dst = slices.Grow(dst, want-reserved)[:end]
		}
		copy(dst[lengthAt+want:end], dst[at:at+size])
		dst = dst[:end]
	}
	protowire.AppendVarint(dst[lengthAt:lengthAt], uint64(size))
	return dst
}
