package cutover

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"testing/iotest"

	sigsjson "sigs.k8s.io/json"

	"github.com/openshift/hypershift-capi-proxy/migration/serving"
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

// FuzzReadEventHead holds readEventHead to kube-apiserver's own decoder (sigs.k8s.io/json, exact member
// names, the last of duplicates winning) on every event that decodes into the head's shape.
func FuzzReadEventHead(f *testing.F) {
	for _, seed := range []string{
		`{"type":"MODIFIED","object":{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"m","namespace":"a","resourceVersion":"20"}}}`,
		`{"type":"BOOKMARK","object":{"kind":"Machine","apiVersion":"cluster.x-k8s.io/v1beta2","metadata":{"resourceVersion":"7","annotations":{"k8s.io/initial-events-end":"true"}}}}` + "\n",
		`{"type":"BOOKMARK","object":{"metadata":{"annotations":{"k8s.io/initial-events-end":"false","k8s.io/initial-events-end":"true"}}}}`,
		`{"type":"ADDED","object":{"metadata":{"namespace":"a\u0062","namespace":"c","resourceVersion":"\u0031"}},"Type":"X"}`,
		`{"object":{"metadata":{"Namespace":"x"}},"type":"DELETED","object":{"kind":"M\"x"}}`,
		`{"type":"ERROR","object":{"kind":"Status","code":410}}`,
		` {"type" : "ADDED" , "object" : { "metadata" : { "namespace" : "n" } } } `,
		`{"type":"ADDED","object":null}`,
		`{"type":"ADDED"`,
		`[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := readEventHead(data)
		var want struct {
			Type   string `json:"type"`
			Object struct {
				Kind       string `json:"kind"`
				APIVersion string `json:"apiVersion"`
				Metadata   struct {
					Namespace       string            `json:"namespace"`
					ResourceVersion string            `json:"resourceVersion"`
					Annotations     map[string]string `json:"annotations"`
				} `json:"metadata"`
			} `json:"object"`
		}
		strict, err := sigsjson.UnmarshalStrict(data, &want)
		if err != nil {
			if !json.Valid(data) {
				if ok {
					t.Fatalf("read an invalid event: %q", data)
				}
			}
			return // not the head's shape: nothing to compare
		}
		_ = strict // duplicate members are reported there, and decoded as the last wins
		if !ok {
			t.Fatalf("did not read a valid event: %q", data)
		}
		if want.Type != "BOOKMARK" {
			want.Object.Metadata.Annotations = nil
		}
		w := eventHead{typ: want.Type, kind: want.Object.Kind, apiVersion: want.Object.APIVersion,
			namespace: want.Object.Metadata.Namespace, resourceVersion: want.Object.Metadata.ResourceVersion,
			initialEventsEnd: want.Object.Metadata.Annotations[initialEventsEnd] == "true"}
		if got != w {
			t.Fatalf("%q: read %+v, the decoder %+v", data, got, w)
		}
	})
}

// TestWatchEndsOnlyWhenGroupsChange: a namespace's watch ends when the namespace is served from other
// groups, not when its writes are only held or released (the migration's Copying and Resuming label
// changes), so that a client-go reflector relists once per move; a resourceVersion from before a change
// that only holds writes stays valid. The check a view's replacement runs is called directly: it is what
// the callback on the view runs.
func TestWatchEndsOnlyWhenGroupsChange(t *testing.T) {
	n := NewNamespaces(nil)
	n.SetGuarded(true, "1")
	n.Set("a", "10", map[string]string{serving.Label: string(serving.Upstream)})
	ended := 0
	w := &modeWatch{n: n, namespace: "a", want: n.current().mode("a"), end: func() { ended++ }}
	defer w.disarm()
	for _, step := range []struct {
		mode    serving.Mode
		rv      string
		ends    bool
		expired uint64
	}{
		{serving.UpstreamHeld, "20", false, 10},
		{serving.Upstream, "25", false, 10},
		{serving.UpstreamHeld, "30", false, 10},
		{serving.PrivateHeld, "40", true, 40},
		{serving.Private, "50", true, 40},
	} {
		n.Set("a", step.rv, map[string]string{serving.Label: string(step.mode)})
		ended = 0
		w.check()
		if got := ended > 0; got != step.ends {
			t.Errorf("%s at %s: watch from upstream ended %v, want %v", step.mode, step.rv, got, step.ends)
		}
		if got := n.current().mode("a").expired; got != step.expired {
			t.Errorf("%s at %s: expired %d, want %d", step.mode, step.rv, got, step.expired)
		}
	}
	if moved := n.current().moved; moved != 40 {
		t.Errorf("moved %d, want 40 (the change of groups)", moved)
	}
}
