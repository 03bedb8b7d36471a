package protofield

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// A Reader reads the fields of a message from a stream, field by field, so that a message far larger
// than what is held at once (a list of many items) need not be read whole. Its errors begin "decoding
// protobuf: " for a malformed message (one cut short, where the stream ends or Left is 0, wraps
// protowire.ParseError(-1)), and "reading the answer: " for any other read error of the stream, which
// they wrap (errors.Is finds it).
type Reader struct {
	r    *bufio.Reader
	left uint64
}

// NewReader returns a Reader of a message of n bytes, read from r.
func NewReader(r *bufio.Reader, n uint64) *Reader { return &Reader{r: r, left: n} }

// Left returns the number of bytes of the message not yet read.
func (f *Reader) Left() uint64 { return f.left }

// errShort is the error of a message that ends early, as protowire reports it.
var errShort = fmt.Errorf("decoding protobuf: %w", protowire.ParseError(-1))

// byte reads one byte of the message.
func (f *Reader) byte() (byte, error) {
	if f.left == 0 {
		return 0, errShort
	}
	b, err := f.r.ReadByte()
	if err != nil {
		return 0, f.readError(err)
	}
	f.left--
	return b, nil
}

// readError is err, of reading r: a message cut short when r ended.
func (f *Reader) readError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errShort
	}
	return fmt.Errorf("reading the answer: %w", err)
}

// Varint reads a varint, appending its bytes to raw.
func (f *Reader) Varint(raw *[]byte) (uint64, error) {
	start := len(*raw)
	for range protowire.SizeVarint(1 << 63) {
		b, err := f.byte()
		if err != nil {
			return 0, err
		}
		*raw = append(*raw, b)
		if b < 0x80 {
			v, n := protowire.ConsumeVarint((*raw)[start:])
			if n < 0 {
				return 0, fmt.Errorf("decoding protobuf: %w", protowire.ParseError(n))
			}
			return v, nil
		}
	}
	return 0, fmt.Errorf("decoding protobuf: %w", protowire.ParseError(-2)) // overflow
}

// Tag reads a field's tag, appending its bytes to raw.
func (f *Reader) Tag(raw *[]byte) (protowire.Number, protowire.Type, error) {
	v, err := f.Varint(raw)
	if err != nil {
		return 0, 0, err
	}
	num, typ := protowire.DecodeTag(v)
	if num < protowire.MinValidNumber || num > protowire.MaxValidNumber {
		return 0, 0, errors.New("decoding protobuf: invalid field number")
	}
	return num, typ, nil
}

// Read reads n bytes of the message, appending them to dst. dst grows with what arrives, not by what a
// length claims.
func (f *Reader) Read(dst []byte, n int) ([]byte, error) {
	if uint64(n) > f.left {
		return nil, errShort
	}
	for end := len(dst) + n; len(dst) < end; {
		chunk := min(end-len(dst), 1<<20)
		dst = slices.Grow(dst, chunk)
		got, err := io.ReadFull(f.r, dst[len(dst):len(dst)+chunk])
		dst = dst[:len(dst)+got]
		if err != nil {
			return nil, f.readError(err)
		}
	}
	f.left -= uint64(n)
	return dst, nil
}

// CopyTo appends n bytes of the message to raw.
func (f *Reader) CopyTo(raw *[]byte, n int) error {
	var err error
	*raw, err = f.Read(*raw, n)
	return err
}

// CopyN copies n bytes of the message to w.
func (f *Reader) CopyN(w io.Writer, n uint64) error {
	if n > f.left || n > math.MaxInt64 {
		return errShort
	}
	if _, err := io.CopyN(w, f.r, int64(n)); err != nil {
		return f.readError(err)
	}
	f.left -= n
	return nil
}
