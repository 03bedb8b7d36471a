package gzip

import (
	"bufio"
	"bytes"
	stdflate "compress/flate"
	stdgzip "compress/gzip"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// TestCRC32Combine: the combination of the CRC-32s of the two parts of random bytes, split anywhere, is
// hash/crc32's of the whole.
func TestCRC32Combine(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(rnd.Uint32())
	}
	splits := []int{0, 1, 2, 7, 8, 255, 256, 4096, len(data) - 1, len(data)}
	for range 200 {
		splits = append(splits, rnd.IntN(len(data)+1))
	}
	for _, at := range splits {
		for _, end := range []int{at, min(at+1, len(data)), min(at+rnd.IntN(1000), len(data)), len(data)} {
			a, b := data[:at], data[at:end]
			got := crc32Combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), int64(len(b)))
			if want := crc32.ChecksumIEEE(data[:end]); got != want {
				t.Fatalf("split %d:%d: %08x, want %08x", at, end, got, want)
			}
		}
	}
	// A longer B: 4 MiB of zeros, hash/crc32 reading on from A's CRC.
	zeros := make([]byte, 1<<16)
	crc := crc32.ChecksumIEEE(data[:100])
	want := crc
	for range 1 << 6 {
		want = crc32.Update(want, crc32.IEEETable, zeros)
	}
	if got := crc32Combine(crc, crc32.ChecksumIEEE(make([]byte, 1<<22)), 1<<22); got != want {
		t.Fatalf("4 MiB of zeros: %08x, want %08x", got, want)
	}
}

// deferredMember writes body to a Deferred in pieces of at most piece bytes and returns its Member of head.
func deferredMember(t *testing.T, head, body []byte, piece int) []byte {
	t.Helper()
	d := NewDeferred()
	for rest := body; len(rest) > 0; {
		n := min(len(rest), piece)
		if _, err := d.Write(rest[:n]); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
	}
	if d.Len() != int64(len(body)) {
		t.Fatalf("Len %d, want %d", d.Len(), len(body))
	}
	r, err := d.Member(head)
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if d.Held() != 0 {
		t.Errorf("%d bytes still held once read", d.Held())
	}
	if _, err := d.Write([]byte("x")); err == nil {
		t.Error("written to after it was read")
	}
	return out
}

// listLike is n bytes that repeat as a list's items do, with some noise.
func listLike(n int, seed uint64) []byte {
	rnd := rand.New(rand.NewPCG(seed, 3))
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `{"metadata":{"name":"machine-%d","uid":"%08x","ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2"}]}}`, i, rnd.Uint32())
	}
	return b.Bytes()[:n]
}

// TestDeferredMember: the member is one gzip member that compress/gzip (read as one member only),
// klauspost/compress and a raw DEFLATE reader decode into head and body, whatever their sizes.
func TestDeferredMember(t *testing.T) {
	for _, tc := range []struct {
		name       string
		head, body []byte
		piece      int
	}{
		{"empty", nil, nil, 1},
		{"a head only", []byte("k8s\x00\x0a\x10"), nil, 1},
		{"a body only", nil, listLike(1000, 1), 7},
		{"a list", []byte("k8s\x00\x0a\x10\x0a\x02v1\x12\x0aList\x12\x84\x80\x01"), listLike(3<<20, 2), 6000},
		{"a head of more than one stored block", listLike(150<<10, 3), listLike(1<<20, 4), 1 << 20},
		{"random bytes, written a byte at a time", randomBytes(5000), randomBytes(70000), 1},
		{"a huge write", []byte("head"), listLike(20<<20, 5), 20 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			member := deferredMember(t, tc.head, tc.body, tc.piece)
			want := append(append([]byte{}, tc.head...), tc.body...)
			if !bytes.HasPrefix(member, header) {
				t.Fatalf("the member starts with %x", member[:min(len(member), 10)])
			}
			// compress/gzip, one member only, and nothing left after it.
			src := bytes.NewReader(member)
			br := bufio.NewReader(src)
			zr, err := stdgzip.NewReader(br)
			if err != nil {
				t.Fatal(err)
			}
			zr.Multistream(false)
			got, err := io.ReadAll(zr)
			if err != nil {
				t.Fatalf("compress/gzip: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("compress/gzip read %d bytes, want %d", len(got), len(want))
			}
			if rest, _ := io.ReadAll(br); len(rest) != 0 {
				t.Fatalf("%d bytes after the member", len(rest))
			}
			// klauspost/compress.
			kr, err := gzip.NewReader(bytes.NewReader(member))
			if err != nil {
				t.Fatal(err)
			}
			if got, err = io.ReadAll(kr); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("klauspost/compress: %d bytes, %v", len(got), err)
			}
			// The raw DEFLATE stream between the header and the trailer, as zlib's inflate reads it, and the
			// trailer.
			fr := stdflate.NewReader(bytes.NewReader(member[len(header) : len(member)-8]))
			if got, err = io.ReadAll(fr); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("compress/flate: %d bytes, %v", len(got), err)
			}
			trailer := member[len(member)-8:]
			if crc := binary.LittleEndian.Uint32(trailer); crc != crc32.ChecksumIEEE(want) {
				t.Errorf("CRC-32 %08x, want %08x", crc, crc32.ChecksumIEEE(want))
			}
			if size := binary.LittleEndian.Uint32(trailer[4:]); size != uint32(len(want)) {
				t.Errorf("size %d, want %d", size, len(want))
			}
		})
	}
}

func randomBytes(n int) []byte {
	rnd := rand.New(rand.NewPCG(uint64(n), 5))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rnd.Uint32())
	}
	return b
}

// TestDeferredMemberCorrupted: a decoder refuses the member if a byte of its compressed body or trailer
// is changed, so that the CRC-32 it carries is checked (a member with a wrong one would read as a
// decoder's error on the client).
func TestDeferredMemberCorrupted(t *testing.T) {
	head, body := []byte("k8s\x00head"), listLike(1<<16, 6)
	member := deferredMember(t, head, body, 1<<16)
	for _, at := range []int{len(member) - 8, len(member) - 1} {
		bad := bytes.Clone(member)
		bad[at] ^= 1
		zr, err := stdgzip.NewReader(bytes.NewReader(bad))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(zr); err == nil {
			t.Errorf("a member changed at %d of %d was read", at, len(member))
		}
	}
}

// TestDeferredReader: Reader gives back the bytes written, uncompressed.
func TestDeferredReader(t *testing.T) {
	for _, body := range [][]byte{nil, []byte("x"), listLike(100000, 7)} {
		d := NewDeferred()
		if _, err := d.Write(body); err != nil {
			t.Fatal(err)
		}
		r, err := d.Reader()
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("%d bytes back, want %d: %v", len(got), len(body), err)
		}
		if _, err := d.Member(nil); err == nil {
			t.Fatal("read twice")
		}
	}
}

// TestDeferredDiscard: a Deferred let go before it was read refuses writes and holds nothing.
func TestDeferredDiscard(t *testing.T) {
	d := NewDeferred()
	if _, err := d.Write(listLike(1<<20, 8)); err != nil {
		t.Fatal(err)
	}
	d.Discard()
	d.Discard()
	if d.Held() != 0 {
		t.Errorf("%d bytes held after Discard", d.Held())
	}
	if _, err := d.Write([]byte("x")); err == nil {
		t.Error("written to after Discard")
	}
	if _, err := d.Member(nil); err == nil {
		t.Error("read after Discard")
	}
}

func TestSetCompressed(t *testing.T) {
	resp := &http.Response{Header: http.Header{"Content-Length": {"10"}}, ContentLength: 10}
	SetCompressed(resp, io.NopCloser(bytes.NewReader(nil)))
	if resp.ContentLength != -1 || resp.Header.Get("Content-Length") != "" || resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("Vary") != "Accept-Encoding" {
		t.Errorf("headers %v, length %d", resp.Header, resp.ContentLength)
	}
}
