package stream

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/openshift/hypershift-capi-proxy/translate"
)

// minRead is what a source reads at least at a time (and the size of its first buffer), unless its
// own minRead is larger.
const minRead = 4 << 10

// source reads JSON values one at a time from a reader, holding only the value being read: a value is
// scanned (translate.Scan) in what has been read, and more is read while it is incomplete, at least as
// much again as is held, so that a large value is scanned a bounded number of times.
type source struct {
	r io.Reader
	// minRead is what is read at least at a time; minRead when zero.
	minRead int
	buf     []byte
	// pos is where the unread part of buf begins; read is how much was read before buf[0].
	pos, read int
	// err is the reader's first error (io.EOF at its end); nothing is read after it.
	err error
	// size is the capacity of the last buffer released (at most maxSize), that of the next one: the
	// events of a watch are alike, and one buffer large enough is read and scanned once.
	size int
}

// maxSize bounds source.size: a rare large event does not make every later one take as much.
const maxSize = 64 << 10

func newSource(r io.Reader) *source { return &source{r: r} }

// fill reads more into buf, keeping buf[pos:] and dropping what is before it. It returns false when the
// reader has nothing more (s.err is set then).
func (s *source) fill() bool {
	if s.err != nil {
		return false
	}
	held := len(s.buf) - s.pos
	if s.pos > 0 {
		s.read += s.pos
		s.buf = s.buf[:copy(s.buf, s.buf[s.pos:])]
		s.pos = 0
	}
	want := max(held, s.minRead, minRead)
	if cap(s.buf) == 0 {
		want = max(want, s.size)
	}
	if cap(s.buf)-len(s.buf) < want {
		grown := make([]byte, len(s.buf), len(s.buf)+want)
		copy(grown, s.buf)
		s.buf = grown
	}
	for {
		n, err := s.r.Read(s.buf[len(s.buf):cap(s.buf)])
		s.buf = s.buf[:len(s.buf)+n]
		if err != nil {
			s.err = err
			return n > 0
		}
		if n > 0 {
			return true
		}
	}
}

// release gives back the buffer once everything in it was read (but whitespace, the newline after a
// watch event): a watch between events holds none.
func (s *source) release() {
	s.pos = skipSpace(s.buf, s.pos)
	if s.pos == len(s.buf) {
		s.size = min(cap(s.buf), maxSize)
		s.read += s.pos
		s.buf, s.pos = nil, 0
	}
}

// drained reports whether everything read was consumed: the source holds nothing.
func (s *source) drained() bool { return s.pos == len(s.buf) && s.err == nil }

// take hands the source what its caller read from s.r into a buffer of its own (with the read's error),
// when it holds nothing (drained).
func (s *source) take(p []byte, err error) {
	s.read += s.pos
	s.buf = append(make([]byte, 0, max(len(p), minRead, s.size)), p...)
	s.pos = 0
	s.err = err
}

// consume drops the first n bytes of data, which is either the unread part of the source's buffer or
// what its caller read from s.r into a buffer of its own while the source held nothing (the rest of
// which the source takes).
func (s *source) consume(data []byte, n int) {
	if s.pos < len(s.buf) && &data[0] == &s.buf[s.pos] {
		s.pos += n
		s.release()
		return
	}
	s.read += s.pos + n
	s.buf, s.pos = nil, 0
	if n < len(data) {
		s.take(data[n:], nil)
	}
}

// fillLine reads until a newline is held after pos, more than limit bytes are, or the reader has
// nothing more.
func (s *source) fillLine(limit int) {
	for bytes.IndexByte(s.buf[s.pos:], '\n') < 0 && len(s.buf)-s.pos <= limit && s.fill() {
	}
}

// newline reports whether what follows the value just read is a newline (after spaces, tabs and
// carriage returns); unknown, when nothing follows it yet.
func (s *source) newline(unknown bool) bool {
	i := s.pos
	for i < len(s.buf) && (s.buf[i] == ' ' || s.buf[i] == '\t' || s.buf[i] == '\r') {
		i++
	}
	if i == len(s.buf) {
		return unknown
	}
	return s.buf[i] == '\n'
}

// offset is the offset in the stream of the next unread byte.
func (s *source) offset() int { return s.read + s.pos }

// next skips whitespace and returns the next byte without consuming it; io.EOF at the end of the
// stream, or the reader's error.
func (s *source) next() (byte, error) {
	for {
		s.pos = skipSpace(s.buf, s.pos)
		if s.pos < len(s.buf) {
			return s.buf[s.pos], nil
		}
		if !s.fill() {
			if s.pos < len(s.buf) {
				continue
			}
			return 0, s.err
		}
	}
}

// value reads the JSON value that begins at the next non-space byte. The bytes returned are valid until
// the next call. A stream that ends inside the value is io.ErrUnexpectedEOF (or the reader's error).
func (s *source) value() ([]byte, error) {
	if _, err := s.next(); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	for {
		end, err := translate.Scan(s.buf, s.pos)
		// A number that ends where the input does may go on.
		number := s.buf[s.pos] == '-' || '0' <= s.buf[s.pos] && s.buf[s.pos] <= '9'
		if err == nil && !(number && end == len(s.buf) && s.err == nil) {
			v := s.buf[s.pos:end]
			s.pos = end
			return v, nil
		}
		if err != nil && !errors.Is(err, translate.ErrIncomplete) {
			return nil, fmt.Errorf("%w (stream offset %d)", err, s.read+s.pos)
		}
		if !s.fill() {
			if err == nil { // the number ends with the stream
				continue
			}
			if errors.Is(s.err, io.EOF) {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, s.err
		}
	}
}

// expect consumes the next byte, which must be c; what names the value in errors.
func (s *source) expect(c byte, what string) error {
	got, err := s.next()
	switch {
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%s: unexpected end of JSON input", what)
	case err != nil:
		return fmt.Errorf("%s: %w", what, err)
	case got != c:
		return fmt.Errorf("%s: want %q, got %q", what, c, got)
	}
	s.pos++
	return nil
}

// key reads an object key and the ':' after it: the key's literal as it is in the stream (valid until
// the next read) and its decoded value.
func (s *source) key() ([]byte, string, error) {
	c, err := s.next()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, "", err
	}
	if c != '"' {
		return nil, "", fmt.Errorf("invalid character %q looking for beginning of object key string", c)
	}
	lit, err := s.value()
	if err != nil {
		return nil, "", err
	}
	key, err := unquote(lit)
	if err != nil {
		return nil, "", err
	}
	lit = append([]byte(nil), lit...) // reading the ':' may move the buffer

	if err := s.expect(':', "object key"); err != nil {
		return nil, "", err
	}
	return lit, key, nil
}

func skipSpace(in []byte, i int) int {
	for i < len(in) && (in[i] == ' ' || in[i] == '\t' || in[i] == '\n' || in[i] == '\r') {
		i++
	}
	return i
}
