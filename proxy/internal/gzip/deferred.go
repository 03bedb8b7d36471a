package gzip

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net/http"
	"sync"

	"github.com/klauspost/compress/flate"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/spool"
)

// A protobuf list states its length before its items, so nothing of its answer can be sent before its
// last item has been translated; compressing the whole answer only then would add the compression of
// all of it to the answer's latency. Deferred compresses the body of such an answer as it is written,
// and puts the head, known last, in front of it: a gzip member (RFC 1952) is a header, a DEFLATE stream
// (RFC 1951) and a trailer (the CRC-32 and length of the content), and a DEFLATE stream may be made of
// the blocks of two compressors one after the other, the first ending on a byte boundary without its
// final block (a sync flush), the second referring to nothing before its own output. The head goes out
// as a stored block: it is a few hundred bytes.

// header is the header of a gzip member as compress/gzip and klauspost/compress write it at
// kube-apiserver's level without a name or a time: the magic number, DEFLATE, no flags, no modification
// time, "fastest compression" (XFL 4) and an unknown operating system (255).
var header = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255}

// flateWriters are reused, as writers are.
var flateWriters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, level) // a valid level: no error
	return w
}}

// Deferred is an io.Writer that compresses what is written at kube-apiserver's level, holds it in
// blocks of spool.BlockSize compressed bytes (spool.Blocks), and gives it back once, after a head given last (Member), or
// uncompressed (Reader). It is not safe for concurrent use.
type Deferred struct {
	fw      *flate.Writer
	held    spool.Blocks
	crc     uint32
	written int64
	err     error
}

// NewDeferred returns an empty Deferred.
func NewDeferred() *Deferred {
	d := &Deferred{fw: flateWriters.Get().(*flate.Writer)}
	d.fw.Reset(&d.held)
	return d
}

var errDeferredRead = errors.New("gzip: written to after it was read")

// Write implements io.Writer. It fails only after Member, Reader or Discard was called.
func (d *Deferred) Write(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	n, err := d.fw.Write(p)
	d.crc = crc32.Update(d.crc, crc32.IEEETable, p[:n])
	d.written += int64(n)
	return n, err
}

// Len is the number of bytes written.
func (d *Deferred) Len() int64 { return d.written }

// Held is the number of compressed bytes held, less what has been read back.
func (d *Deferred) Held() int64 { return d.held.Len() }

// end ends the writing: the compressor's final block is written and the compressor given back.
func (d *Deferred) end() error {
	if d.err != nil {
		return d.err
	}
	d.err = errDeferredRead
	err := d.fw.Close()
	flateWriters.Put(d.fw)
	d.fw = nil
	return err
}

// Discard ends the writing and lets go of what is held.
func (d *Deferred) Discard() {
	if d.err == nil {
		d.err = errDeferredRead
		d.fw.Reset(io.Discard)
		flateWriters.Put(d.fw)
		d.fw = nil
	}
	d.held = spool.Blocks{}
}

// Member ends the writing and returns a reader of one gzip member (RFC 1952) whose content is head
// followed by the bytes written: the header, head in stored blocks that are not final, the compressed
// bytes (ending with the final block), the CRC-32 of the content and its length modulo 2^32. Each held
// block is let go once read. The error is the compressor's.
func (d *Deferred) Member(head []byte) (io.Reader, error) {
	if err := d.end(); err != nil {
		return nil, err
	}
	start := append([]byte{}, header...)
	for rest := head; len(rest) > 0; {
		n := min(len(rest), 0xffff)
		// BFINAL 0, BTYPE 00 (stored), padded to the byte; LEN and its complement NLEN, little-endian.
		start = append(start, 0)
		start = binary.LittleEndian.AppendUint16(start, uint16(n))
		start = binary.LittleEndian.AppendUint16(start, ^uint16(n))
		start = append(start, rest[:n]...)
		rest = rest[n:]
	}
	crc := crc32Combine(crc32.ChecksumIEEE(head), d.crc, d.written)
	trailer := binary.LittleEndian.AppendUint32(nil, crc)
	trailer = binary.LittleEndian.AppendUint32(trailer, uint32(int64(len(head))+d.written))
	return io.MultiReader(bytes.NewReader(start), &d.held, bytes.NewReader(trailer)), nil
}

// Reader ends the writing and returns a reader of the bytes written, decompressed, for an answer too
// small to be compressed (Compresses). The error is the compressor's.
func (d *Deferred) Reader() (io.Reader, error) {
	if err := d.end(); err != nil {
		return nil, err
	}
	return flate.NewReader(&d.held), nil
}

// Compresses reports whether an answer of size bytes is gzip'ed for a client that accepts gzip, as
// kube-apiserver decides it: larger than 128 KiB (its defaultGzipThresholdBytes).
func Compresses(size int64) bool { return size > threshold }

// SetCompressed makes body, a gzip member, the body of resp, with the headers kube-apiserver's gzip
// writer sends: Content-Encoding gzip, "Vary: Accept-Encoding", and no Content-Length.
func SetCompressed(resp *http.Response, body io.ReadCloser) {
	resp.Body = body
	resp.ContentLength = -1
	resp.Header.Set("Content-Encoding", "gzip")
	resp.Header.Add("Vary", "Accept-Encoding")
	resp.Header.Del("Content-Length")
}

// crc32Combine is the CRC-32 (IEEE) of A followed by B from crcA, the CRC-32 of A, crcB, that of B, and
// lenB, the length of B: crcA, as a polynomial over GF(2), times x^(8 lenB) modulo the CRC's
// polynomial, plus crcB (the pre- and post-conditioning of the two cancel out). hash/crc32 has no
// combination.
func crc32Combine(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	// x^(8 lenB) from the powers x^(2^k), k = 3 (x^8: one byte) and up, by the bits of lenB.
	p := uint32(1) << 31 // x^0 in the reflected bit order of IEEE CRC-32
	for k, n := 3, uint64(lenB); n != 0; k, n = k+1, n>>1 {
		if n&1 != 0 {
			p = crcMulMod(crcPow2[k], p)
		}
	}
	return crcMulMod(p, crcA) ^ crcB
}

// crcPow2[k] is x^(2^k) modulo the polynomial of IEEE CRC-32, for k up to 66: lenB < 2^63.
var crcPow2 = func() (t [67]uint32) {
	t[0] = 1 << 30 // x^1
	for k := 1; k < len(t); k++ {
		t[k] = crcMulMod(t[k-1], t[k-1])
	}
	return t
}()

// crcMulMod is a times b modulo the polynomial of IEEE CRC-32, both in the reflected bit order
// (the bit of x^0 the highest), crc32.IEEE being that order's polynomial without its x^32.
func crcMulMod(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
		}
		// b times x.
		if b&1 != 0 {
			b = b>>1 ^ crc32.IEEE
		} else {
			b >>= 1
		}
	}
	return p
}
