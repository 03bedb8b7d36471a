// Package spool holds bytes that must be held whole before they can be sent, compressed, and gives them
// back once: a protobuf list states its length before its items, so the proxy holds a translated list
// until its last item has been translated. The bytes are held in S2's stream format
// (github.com/klauspost/compress/s2, its fastest level), in blocks of at most BlockSize of input, and
// each block is let go as soon as it has been read back; a list of Kubernetes objects, whose items
// repeat their keys, names and managed fields, is held in a fraction of its size.
package spool

import (
	"errors"
	"io"

	"github.com/klauspost/compress/s2"
)

// BlockSize is the most input compressed into one block: what the spool holds uncompressed while it is
// written to, and again while it is read back.
const BlockSize = 64 << 10

// Spool is an io.Writer whose bytes Reader gives back. It is not safe for concurrent use.
type Spool struct {
	w       *s2.Writer
	blocks  Blocks
	written int64
	err     error
}

// New returns an empty Spool.
func New() *Spool {
	s := &Spool{}
	// One goroutine (S2 compresses on GOMAXPROCS of them by default), and blocks of BlockSize.
	s.w = s2.NewWriter(&s.blocks, s2.WriterConcurrency(1), s2.WriterBlockSize(BlockSize))
	return s
}

// Write implements io.Writer. It fails only after Reader was called.
func (s *Spool) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	s.written += int64(n)
	return n, err
}

// Len is the number of bytes written.
func (s *Spool) Len() int64 { return s.written }

// Held is the number of bytes the spool holds: compressed, and less what has been read back.
func (s *Spool) Held() int64 { return s.blocks.Len() }

var errRead = errors.New("spool: written to after it was read")

// Reader ends the writing and returns a reader of the Len bytes written, which lets each block go once
// it has read it.
func (s *Spool) Reader() (io.Reader, error) {
	if s.err != nil {
		return nil, s.err
	}
	s.err = errRead
	if err := s.w.Close(); err != nil {
		return nil, err
	}
	return s2.NewReader(&s.blocks, s2.ReaderMaxBlockSize(BlockSize)), nil
}

// Blocks holds bytes in slices of BlockSize, copied as they are written (a writer may reuse what it
// writes), and reads them back once, letting each slice go once read: the Spool's S2 stream, and the
// compressed answer of gzip.Deferred. Writes after a read are not supported. The zero value is empty.
type Blocks struct {
	held [][]byte
}

// Write implements io.Writer. It never fails.
func (b *Blocks) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if len(b.held) == 0 || len(b.held[len(b.held)-1]) == BlockSize {
			b.held = append(b.held, make([]byte, 0, BlockSize))
		}
		last := &b.held[len(b.held)-1]
		k := min(len(p), BlockSize-len(*last))
		*last = append(*last, p[:k]...)
		p = p[k:]
	}
	return n, nil
}

// Read implements io.Reader.
func (b *Blocks) Read(p []byte) (int, error) {
	for len(b.held) > 0 && len(b.held[0]) == 0 {
		b.held[0] = nil
		b.held = b.held[1:]
	}
	if len(b.held) == 0 {
		return 0, io.EOF
	}
	n := copy(p, b.held[0])
	b.held[0] = b.held[0][n:]
	return n, nil
}

// Len is the number of bytes held: written, less what has been read back.
func (b *Blocks) Len() int64 {
	var n int64
	for _, h := range b.held {
		n += int64(len(h))
	}
	return n
}
