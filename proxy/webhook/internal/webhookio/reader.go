package webhookio

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Reader reads a webhook request's body, holding only what it has not consumed yet: JSON values
// are scanned (translate.Scan) in what has arrived, and more is read while one is incomplete, at least
// as much again as is held, so that a large value is scanned a bounded number of times. Its buffers
// are charged to the request's hold as they are allocated: the first of MinRead bytes (or the
// declared length, if smaller), each further one at most twice what is held, never more than what the
// body has left to declare; a buffer outgrown is given back once copied (the collector frees it).
type Reader struct {
	r    io.Reader
	hold *Hold
	// limit bounds the body; declared is its Content-Length (at most limit), or -1.
	limit, declared int64
	buf             []byte
	// pos is where the unconsumed part of buf begins; read is how much was read from r.
	pos  int
	read int64
	// err is r's first error (io.EOF at its end, a *ReadError otherwise); nothing is read after it.
	err error
}

// NewReader returns the reader of body r, whose Content-Length is declared (-1 if none), bounded by limit
// bytes (a body over it fails with an *http.MaxBytesError), its buffers charged to h.
func NewReader(r io.Reader, declared, limit int64, h *Hold) *Reader {
	return &Reader{r: r, hold: h, limit: limit, declared: declared}
}

// ReadError is an error reading the body, or a bound it passed (an *http.MaxBytesError, the budget's),
// as opposed to an error of what it says (a JSON syntax error); Limits.BodyError answers it.
type ReadError struct{ err error }

func (e *ReadError) Error() string { return e.err.Error() }
func (e *ReadError) Unwrap() error { return e.err }

// fill reads more into buf, keeping buf[pos:] (moved to its start), until at least as much again as
// it holds (MinRead at least, what the body has left at most) has arrived or the body ended. It returns
// nil when it read anything, else io.EOF at the end of the body or a *ReadError.
func (s *Reader) fill() error {
	if s.err != nil {
		return s.err
	}
	held := len(s.buf) - s.pos
	if s.pos > 0 {
		s.buf = s.buf[:copy(s.buf, s.buf[s.pos:])]
		s.pos = 0
	}
	left := s.limit - s.read + 1 // a byte past the limit tells a body over it
	if s.declared >= 0 {
		// Go's server ends a body of declared length there, and a client cannot send more of it.
		left = s.declared - s.read
	}
	if left <= 0 {
		s.err = io.EOF
		return s.err
	}
	want := int(min(int64(max(held, MinRead)), left))
	if cap(s.buf)-len(s.buf) < want {
		size := len(s.buf) + want
		if err := s.hold.take(size); err != nil {
			s.err = &ReadError{err}
			return s.err
		}
		grown := make([]byte, len(s.buf), size)
		copy(grown, s.buf)
		s.hold.give(cap(s.buf))
		s.buf = grown
	}
	got := 0
	for got < want {
		n, err := s.r.Read(s.buf[len(s.buf):cap(s.buf)])
		s.buf = s.buf[:len(s.buf)+n]
		got += n
		s.read += int64(n)
		if err != nil {
			if errors.Is(err, io.EOF) {
				s.err = io.EOF
			} else {
				s.err = &ReadError{err}
			}
			break
		}
	}
	if s.read > s.limit {
		s.err = &ReadError{&http.MaxBytesError{Limit: s.limit}}
		return s.err
	}
	if got > 0 {
		return nil
	}
	return s.err
}

// Drop gives the buffer back once the body is read.
func (s *Reader) Drop() {
	s.hold.give(cap(s.buf))
	s.buf, s.pos = nil, 0
}

// All reads the whole body into one slice, charged to the hold, and returns it: its buffer doubles
// (copying what it holds) until the body ends, to no more than the body's declared length.
func (s *Reader) All() ([]byte, error) {
	for {
		err := s.fill() // s.pos stays 0: fill keeps everything
		if errors.Is(err, io.EOF) {
			return s.buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// next skips whitespace and returns the next byte without consuming it; io.EOF at the end of the body.
func (s *Reader) next() (byte, error) {
	for {
		s.pos = skipSpace(s.buf, s.pos)
		if s.pos < len(s.buf) {
			return s.buf[s.pos], nil
		}
		if err := s.fill(); err != nil {
			return 0, err
		}
	}
}

// errEnd is the error for a body that ends inside its JSON document.
var errEnd = errors.New("unexpected end of JSON input")

// Value reads the JSON value that begins at the next non-space byte. The bytes returned are valid until
// the next read.
func (s *Reader) Value() ([]byte, error) {
	c, err := s.next()
	if err != nil {
		return nil, endIsUnexpected(err)
	}
	number := c == '-' || '0' <= c && c <= '9'
	for {
		end, err := translate.Scan(s.buf, s.pos)
		// A number that ends where the buffer does may go on.
		if err == nil && !(number && end == len(s.buf) && s.err == nil) {
			v := s.buf[s.pos:end]
			s.pos = end
			return v, nil
		}
		if err != nil && !errors.Is(err, translate.ErrIncomplete) {
			return nil, fmt.Errorf("%w (the value at offset %d of the body)", err, s.offset())
		}
		if ferr := s.fill(); ferr != nil {
			if errors.Is(ferr, io.EOF) {
				if err == nil {
					continue // the number ends with the body
				}
				return nil, errEnd
			}
			return nil, ferr
		}
	}
}

// offset is the offset in the body of the next unconsumed byte.
func (s *Reader) offset() int64 { return s.read - int64(len(s.buf)-s.pos) }

func endIsUnexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return errEnd
	}
	return err
}

// Expect consumes the next byte, which must be c.
func (s *Reader) Expect(c byte) error {
	got, err := s.next()
	if err != nil {
		return endIsUnexpected(err)
	}
	if got != c {
		return fmt.Errorf("invalid character %q at offset %d of the body, want %q", got, s.offset(), c)
	}
	s.pos++
	return nil
}

// Null consumes a JSON null if one comes next, and tells whether it did.
func (s *Reader) Null() (bool, error) {
	c, err := s.next()
	if err != nil {
		return false, endIsUnexpected(err)
	}
	if c != 'n' {
		return false, nil
	}
	v, err := s.Value()
	if err != nil {
		return false, err
	}
	return string(v) == "null", nil // Scan accepts no other literal starting with n
}

// Object reads a JSON object, calling member with each key; member reads the value. As encoding/json
// decodes into a struct, member matches keys case-insensitively (strings.EqualFold is encoding/json's
// rule), and a key given twice is read twice, the last one counting.
func (s *Reader) Object(member func(key string) error) error {
	if err := s.Expect('{'); err != nil {
		return err
	}
	if c, err := s.next(); err != nil {
		return endIsUnexpected(err)
	} else if c == '}' {
		s.pos++
		return nil
	}
	for {
		lit, err := s.Value()
		if err != nil {
			return err
		}
		var key string
		if lit[0] != '"' {
			return fmt.Errorf("invalid character %q looking for beginning of object key string at offset %d of the body", lit[0], s.offset()-int64(len(lit)))
		}
		if err := json.Unmarshal(lit, &key); err != nil {
			return err
		}
		if err := s.Expect(':'); err != nil {
			return err
		}
		if err := member(key); err != nil {
			return err
		}
		c, err := s.next()
		if err != nil {
			return endIsUnexpected(err)
		}
		s.pos++
		switch c {
		case ',':
		case '}':
			return nil
		default:
			return fmt.Errorf("invalid character %q after object key:value pair at offset %d of the body", c, s.offset()-1)
		}
	}
}

// Str reads a JSON string into dst; a null leaves dst as it is, as encoding/json does.
func (s *Reader) Str(what string, dst *string) error {
	v, err := s.Value()
	if err != nil {
		return err
	}
	if string(v) == "null" {
		return nil
	}
	if v[0] != '"' {
		return fmt.Errorf("%s: want a string, got %.20s", what, v)
	}
	return json.Unmarshal(v, dst)
}

// Skip reads a value and drops it.
func (s *Reader) Skip() error {
	_, err := s.Value()
	return err
}

// End checks that only whitespace follows the document.
func (s *Reader) End() error {
	c, err := s.next()
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("invalid character %q after top-level value at offset %d of the body", c, s.offset())
}

// Ended reports whether the whole body was read (and so its read deadline may be lifted).
func (s *Reader) Ended() bool { return errors.Is(s.err, io.EOF) }

// Keep copies v, a value the reader returned, out of its buffer into a slice of its own, charged to
// the hold (a *ReadError when the budget has no room): what a handler keeps of a body once read.
func (s *Reader) Keep(v []byte) ([]byte, error) {
	if err := s.hold.take(len(v)); err != nil {
		return nil, &ReadError{err}
	}
	return append(make([]byte, 0, len(v)), v...), nil
}

// Array reads a JSON array, calling elem for each element; elem reads the value. what names the array
// in the error when the next value is not one.
func (s *Reader) Array(what string, elem func() error) error {
	if err := s.Expect('['); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if c, err := s.next(); err != nil {
		return endIsUnexpected(err)
	} else if c == ']' {
		s.pos++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		c, err := s.next()
		if err != nil {
			return endIsUnexpected(err)
		}
		s.pos++
		switch c {
		case ',':
		case ']':
			return nil
		default:
			return fmt.Errorf("invalid character %q after array element at offset %d of the body", c, s.offset()-1)
		}
	}
}

func skipSpace(in []byte, i int) int {
	for i < len(in) && (in[i] == ' ' || in[i] == '\t' || in[i] == '\n' || in[i] == '\r') {
		i++
	}
	return i
}
