package stream

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestSharedTranslatesOnce: the same bytes in the same scope are translated once, and every caller gets
// the same result; another scope, or other bytes, are translated on their own.
func TestSharedTranslatesOnce(t *testing.T) {
	s := NewShared(1 << 20)
	calls := map[string]int{}
	var mu sync.Mutex
	translate := func(scope string) func([]byte) ([]byte, error) {
		return func(b []byte) ([]byte, error) {
			mu.Lock()
			calls[scope+string(b)]++
			mu.Unlock()
			return bytes.ReplaceAll(b, []byte(private), []byte(upstream)), nil
		}
	}
	in := []byte(`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2"}`)
	// The first watch to see the event translates it. Watches that read it at the same moment may each
	// translate it too (Shared does not make them wait for one another, which is an ordering no test
	// can rely on), so the others read it after the first is done, concurrently.
	if out, err := s.Object("machines", translate("machines"))(bytes.Clone(in)); err != nil || string(out) != `{"apiVersion":"cluster.x-k8s.io/v1beta2"}` {
		t.Fatalf("got %s, %v", out, err)
	}
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := bytes.Clone(in) // each watch reads into its own buffer
			out, err := s.Object("machines", translate("machines"))(buf)
			if err != nil || string(out) != `{"apiVersion":"cluster.x-k8s.io/v1beta2"}` {
				t.Errorf("got %s, %v", out, err)
			}
		}()
	}
	wg.Wait()
	if n := calls["machines"+string(in)]; n != 1 {
		t.Errorf("translated %d times, want once", n)
	}
	if out, _ := s.Object("secrets", translate("secrets"))(in); calls["secrets"+string(in)] != 1 || !bytes.Contains(out, []byte(upstream)) {
		t.Errorf("another scope shares a result: %d calls", calls["secrets"+string(in)])
	}
}

// TestSharedBounded: what is held stays within the bound, the oldest translations go first.
func TestSharedBounded(t *testing.T) {
	s := NewShared(64 << 10)
	id := func(b []byte) ([]byte, error) { return b, nil }
	for i := range 1000 {
		obj := []byte(fmt.Sprintf(`{"i":%d,"pad":%q}`, i, strings.Repeat("x", 500)))
		if _, err := s.Object("x", id)(obj); err != nil {
			t.Fatal(err)
		}
		if s.bytes > 64<<10 {
			t.Fatalf("holding %d bytes, bound %d", s.bytes, 64<<10)
		}
	}
	if len(s.entries) == 0 || len(s.entries) != len(s.fifo) {
		t.Errorf("%d entries, %d keys", len(s.entries), len(s.fifo))
	}
}

// TestSharedErrorsNotShared: an error or a dropped object is not remembered.
func TestSharedErrorsNotShared(t *testing.T) {
	s := NewShared(1 << 20)
	n := 0
	fail := func([]byte) ([]byte, error) { n++; return nil, fmt.Errorf("no") }
	for range 3 {
		_, _ = s.Object("x", fail)([]byte(`{}`))
	}
	if n != 3 {
		t.Errorf("translated %d times, want 3", n)
	}
}

// TestSharedReset: Reset drops what is held; a result handed out before stays as it was, and the same
// bytes are translated again afterwards.
func TestSharedReset(t *testing.T) {
	s := NewShared(1 << 20)
	calls := 0
	translate := s.Object("machines", func(b []byte) ([]byte, error) {
		calls++
		return bytes.ReplaceAll(b, []byte(private), []byte(upstream)), nil
	})
	in := []byte(`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2"}`)
	before, _ := translate(in)
	s.Reset()
	if s.bytes != 0 || len(s.entries) != 0 || s.fifo != nil {
		t.Errorf("after Reset: %d bytes, %d entries held", s.bytes, len(s.entries))
	}
	after, _ := translate(in)
	if calls != 2 || string(before) != string(after) || string(before) != `{"apiVersion":"cluster.x-k8s.io/v1beta2"}` {
		t.Errorf("%d translations, %s then %s", calls, before, after)
	}
}
