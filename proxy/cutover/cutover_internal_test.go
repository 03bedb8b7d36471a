package cutover

import (
	"context"
	"io"
	"testing"
	"testing/iotest"
)

// TestWatchEnder: the stream ends after the event in flight with the tail, whatever the sizes of the
// source's writes and of the client's reads.
func TestWatchEnder(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after []string // writes before and after end is closed
		want          string
	}{
		{"at a boundary", []string{"{a}\n", "{b}\n"}, []string{"{c}\n"}, "{a}\n{b}\nTAIL\n"},
		{"in an event", []string{"{a}\n{b"}, []string{"b}\n{c", "c}\n"}, "{a}\n{bb}\nTAIL\n"},
		{"nothing yet", nil, []string{"{a}\n"}, "TAIL\n"},
	} {
		for _, small := range []bool{false, true} {
			pr, pw := io.Pipe()
			end, cancel := context.WithCancelCause(context.Background())
			e := newWatchEnder(pr, end, []byte("TAIL\n"))
			var r io.Reader = e
			if small {
				r = iotest.OneByteReader(e)
			}
			got := make(chan string, 1)
			sent := 0
			for _, w := range tc.before {
				sent += len(w)
			}
			go func() {
				for _, w := range tc.before {
					_, _ = pw.Write([]byte(w))
				}
				<-end.Done()
				for _, w := range tc.after {
					if _, err := pw.Write([]byte(w)); err != nil {
						return
					}
				}
			}()
			// Read what was written before end closes, then close it.
			buf := make([]byte, sent)
			if _, err := io.ReadFull(r, buf); err != nil {
				t.Fatal(err)
			}
			cancel(errModeChanged)
			go func() {
				rest, _ := io.ReadAll(r)
				got <- string(buf) + string(rest)
			}()
			if g := <-got; g != tc.want {
				t.Errorf("%s (one byte reads: %v): %q, want %q", tc.name, small, g, tc.want)
			}
			_ = e.Close()
		}
	}
}

// TestWatchEnderRequestEnds: an end that is not a mode change (the request's context ended) adds no
// tail: the stream goes on until the reverse proxy stops reading it.
func TestWatchEnderRequestEnds(t *testing.T) {
	pr, pw := io.Pipe()
	end, cancel := context.WithCancelCause(context.Background())
	e := newWatchEnder(pr, end, []byte("TAIL\n"))
	defer e.Close()
	cancel(context.Canceled)
	go func() { _, _ = pw.Write([]byte("{a}\n")); _ = pw.Close() }()
	got, err := io.ReadAll(e)
	if err != nil || string(got) != "{a}\n" {
		t.Errorf("got %q, %v", got, err)
	}
}
