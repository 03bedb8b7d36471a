// Package protofield rewrites length-delimited fields of protobuf messages in place of a decode and
// re-encode: every byte of the message but the replaced values stays as it was.
package protofield

import "google.golang.org/protobuf/encoding/protowire"

// Replace returns msg with the value of each length-delimited field num replaced by what fn returns for
// it, every other field as it is, in its order. fn returns nil to keep a value as it is. Replace returns
// nil when it replaced nothing, fn's first error as it is, and protowire's parse error for a malformed
// message.
func Replace(msg []byte, num protowire.Number, fn func(value []byte) ([]byte, error)) ([]byte, error) {
	var out []byte
	for i := 0; i < len(msg); {
		n, typ, tagLen := protowire.ConsumeTag(msg[i:])
		if tagLen < 0 {
			return nil, protowire.ParseError(tagLen)
		}
		valueLen := protowire.ConsumeFieldValue(n, typ, msg[i+tagLen:])
		if valueLen < 0 {
			return nil, protowire.ParseError(valueLen)
		}
		field := msg[i : i+tagLen+valueLen]
		i += len(field)
		var replaced []byte
		if n == num && typ == protowire.BytesType {
			value, _ := protowire.ConsumeBytes(field[tagLen:])
			var err error
			if replaced, err = fn(value); err != nil {
				return nil, err
			}
		}
		switch {
		case replaced != nil:
			if out == nil {
				out = append(make([]byte, 0, len(msg)+64), msg[:i-len(field)]...)
			}
			out = protowire.AppendTag(out, num, protowire.BytesType)
			out = protowire.AppendBytes(out, replaced)
		case out != nil:
			out = append(out, field...)
		}
	}
	return out, nil
}
