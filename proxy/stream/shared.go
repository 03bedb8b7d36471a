package stream

import (
	"bytes"
	"hash/maphash"
	"slices"
	"sync"
)

// Shared lets the watches of one resource share the translation of an object: kube-apiserver sends
// every watcher of a resource the same bytes for the same event (it encodes an event once per
// encoding and caches it for all its watchers), so that N clients watching through the proxy would
// otherwise have one event translated N times. Each client keeps its own backend watch (what it may see
// is decided by its own credentials); only the translation, a pure function of the bytes and the
// resource, is shared.
//
// It holds the most recent translations, up to a number of bytes; an object is found by its bytes
// (hashed, then compared whole: equal bytes, never a hash collision, give a shared result). It is
// safe for concurrent use. The zero value is not usable: see NewShared.
type Shared struct {
	seed     maphash.Seed
	maxBytes int

	mu      sync.Mutex
	entries map[uint64]*sharedEntry
	// fifo holds the keys in the order they were added, for eviction; bytes is the size of what is held.
	fifo  []uint64
	bytes int
}

type sharedEntry struct {
	scope   string
	in, out []byte
}

// NewShared returns a Shared holding translations of up to maxBytes (inputs and outputs).
func NewShared(maxBytes int) *Shared {
	return &Shared{seed: maphash.MakeSeed(), maxBytes: maxBytes, entries: map[uint64]*sharedEntry{}}
}

// Object returns translate with its results shared: an object whose bytes equal those of one
// translated before under the same scope (which must name everything translate's result depends on
// besides the bytes, e.g. the resource) gets the earlier result. Errors and dropped objects (nil) are not
// shared. The result must not be modified.
func (s *Shared) Object(scope string, translate func([]byte) ([]byte, error)) func([]byte) ([]byte, error) {
	return func(obj []byte) ([]byte, error) {
		if out, ok := s.lookup(scope, obj); ok {
			return out, nil
		}
		out, err := translate(obj)
		if err != nil || out == nil {
			return out, err
		}
		return s.store(scope, obj, out), nil
	}
}

// Reset drops every translation held, for the memory to be returned once the watches that shared them
// have ended; results already handed out stay valid.
func (s *Shared) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries, s.fifo, s.bytes = map[uint64]*sharedEntry{}, nil, 0
}

// lookup returns the translation of in stored under scope, if any.
func (s *Shared) lookup(scope string, in []byte) ([]byte, bool) {
	if !s.fits(scope, in) {
		return nil, false
	}
	key := s.key(scope, in)
	s.mu.Lock()
	e, ok := s.entries[key]
	s.mu.Unlock()
	if ok && e.scope == scope && bytes.Equal(e.in, in) {
		return e.out, true
	}
	return nil, false
}

// store remembers out as the translation of in under scope (when it is small enough to be held) and
// returns the copy it holds, or out. Both are copied: in is the caller's buffer, and out may be in
// itself. The copy of out has no room to append to.
func (s *Shared) store(scope string, in, out []byte) []byte {
	if !s.fits(scope, in) {
		return out
	}
	e := &sharedEntry{scope: scope, in: bytes.Clone(in), out: slices.Clip(bytes.Clone(out))}
	s.add(s.key(scope, in), e, len(e.in)+len(e.out)+len(scope))
	return e.out
}

// fits reports whether a translation of in is small enough to be held: at most an eighth of the bound.
func (s *Shared) fits(scope string, in []byte) bool { return 2*len(in)+len(scope) <= s.maxBytes/8 }

func (s *Shared) key(scope string, in []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(scope)
	h.Write(in)
	return h.Sum64()
}

func (s *Shared) add(key uint64, e *sharedEntry, size int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.entries[key]; ok {
		s.bytes -= len(old.in) + len(old.out) + len(old.scope)
	} else {
		s.fifo = append(s.fifo, key)
	}
	s.entries[key] = e
	s.bytes += size
	for s.bytes > s.maxBytes && len(s.fifo) > 0 {
		oldest := s.fifo[0]
		s.fifo = s.fifo[1:]
		if old, ok := s.entries[oldest]; ok {
			s.bytes -= len(old.in) + len(old.out) + len(old.scope)
			delete(s.entries, oldest)
		}
	}
	if len(s.fifo) == 0 {
		s.fifo = nil // let the backing array go
	}
}
