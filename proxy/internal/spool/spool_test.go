package spool

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
)

func TestSpoolGivesBackWhatWasWritten(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 3*BlockSize+17)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	var items bytes.Buffer
	for i := range 5000 {
		fmt.Fprintf(&items, `{"metadata":{"name":"machine-%d","namespace":"clusters-hc1","managedFields":[{"manager":"capi"}]}}`, i)
	}
	for _, tc := range []struct {
		name        string
		data        []byte
		compresses  bool
		writeLength int
	}{
		{"nothing", nil, false, 1},
		{"one byte", []byte{7}, false, 1},
		{"a block exactly", bytes.Repeat([]byte("a"), BlockSize), true, BlockSize},
		{"list items, in odd writes", items.Bytes(), true, 1000},
		{"list items, in one write", items.Bytes(), true, items.Len()},
		{"random bytes, which S2 stores as they are", random, false, 4097},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New()
			for rest := tc.data; len(rest) > 0; {
				n := min(tc.writeLength, len(rest))
				if w, err := s.Write(rest[:n]); err != nil || w != n {
					t.Fatalf("Write = %d, %v; want %d", w, err, n)
				}
				rest = rest[n:]
			}
			if s.Len() != int64(len(tc.data)) {
				t.Errorf("Len = %d, want %d", s.Len(), len(tc.data))
			}
			r, err := s.Reader()
			if err != nil {
				t.Fatal(err)
			}
			if held := s.Held(); tc.compresses && held > int64(len(tc.data))/4 {
				t.Errorf("the spool holds %d bytes of %d", held, len(tc.data))
			}
			got, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.data) {
				t.Errorf("read back %d bytes, not the %d written", len(got), len(tc.data))
			}
			if held := s.Held(); held != 0 {
				t.Errorf("the spool still holds %d bytes once read", held)
			}
			if _, err := s.Write([]byte("late")); err == nil {
				t.Error("Write after Reader succeeded")
			}
			if _, err := s.Reader(); err == nil {
				t.Error("a second Reader succeeded")
			}
		})
	}
}

// TestSpoolLetsBlocksGo: what has been read back is no longer held.
func TestSpoolLetsBlocksGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 8*BlockSize)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	s := New()
	if _, err := s.Write(data); err != nil {
		t.Fatal(err)
	}
	r, err := s.Reader()
	if err != nil {
		t.Fatal(err)
	}
	before := s.Held()
	if _, err := io.ReadFull(r, make([]byte, 4*BlockSize)); err != nil {
		t.Fatal(err)
	}
	if after := s.Held(); after > before*5/8 {
		t.Errorf("after half was read back the spool holds %d of %d bytes", after, before)
	}
}
