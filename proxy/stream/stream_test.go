package stream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift/hypershift-capi-proxy/translate"
)

const (
	private  = "cluster.hypershift.openshift.io"
	upstream = "cluster.x-k8s.io"
)

// objects translates by plain replacement of the one group name: enough to see what was translated.
var objects = Objects{
	APIVersion: func(v string) string { return strings.ReplaceAll(v, private, upstream) },
	Object: func(b []byte) ([]byte, error) {
		if !json.Valid(b) {
			return nil, errors.New("invalid object")
		}
		if bytes.Contains(b, []byte("untranslatable")) {
			return nil, errors.New("cannot translate")
		}
		return bytes.ReplaceAll(b, []byte(private), []byte(upstream)), nil
	},
	Status: func(b []byte) ([]byte, error) {
		return bytes.ReplaceAll(b, []byte(private), []byte("STATUS:"+upstream)), nil
	},
}

func TestList(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"list",
			`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineList","metadata":{"resourceVersion":"7","continue":"abc"},` +
				`"items":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"a"}},` + "\n" +
				`  {"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"b"}}]}` + "\n",
			`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineList","metadata":{"resourceVersion":"7","continue":"abc"},` +
				`"items":[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"a"}},` +
				`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"b"}}]}` + "\n"},
		{"member order kept, items first",
			`{"items":[],"kind":"MachineList","apiVersion":"cluster.hypershift.openshift.io/v1beta2","metadata":{}}`,
			`{"items":[],"kind":"MachineList","apiVersion":"cluster.x-k8s.io/v1beta2","metadata":{}}` + "\n"},
		{"null items",
			`{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadataList","items":null}`,
			`{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadataList","items":null}` + "\n"},
		{"other members untouched",
			`{"kind":"X","metadata":{"annotations":{"a":"cluster.hypershift.openshift.io"}},"extra":[1,2.50,{"z":null}]}`,
			`{"kind":"X","metadata":{"annotations":{"a":"cluster.hypershift.openshift.io"}},"extra":[1,2.50,{"z":null}]}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := List(&out, strings.NewReader(tc.in), objects); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("List\n got %s\nwant %s", out.String(), tc.want)
			}
			if !json.Valid(out.Bytes()) {
				t.Errorf("output is not valid JSON")
			}
			// The same through a ListReader, read in small pieces, and with AppendObject.
			for _, o := range []Objects{objects, appendObjects, inOnePass} {
				got, err := io.ReadAll(struct{ io.Reader }{NewListReader(strings.NewReader(tc.in), o)})
				if err != nil || string(got) != tc.want {
					t.Errorf("ListReader\n got %s, %v\nwant %s", got, err, tc.want)
				}
			}
		})
	}
}

// TestListTable: with Objects.Row a Table's rows are read one by one and translated by it; without it
// "rows" is copied as it is, and a list's items are read as ever.
func TestListTable(t *testing.T) {
	table := `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"},` +
		`"columnDefinitions":[{"name":"Name","type":"string","format":"name","description":"cluster.hypershift.openshift.io","priority":0}],` +
		`"rows":[{"cells":["a"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2"}]}}},` +
		`{"cells":["b"],"object":{"metadata":{"name":"b"}}}]}` + "\n"
	var rows []string
	o := inOnePass
	o.Row = func(dst, row []byte) ([]byte, error) {
		rows = append(rows, string(row))
		if bytes.Contains(row, []byte(`"b"`)) {
			return dst, nil // dropped
		}
		return append(dst, bytes.ReplaceAll(row, []byte(private), []byte("ROW:"+upstream))...), nil
	}
	got, err := io.ReadAll(NewListReader(strings.NewReader(table), o))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(strings.Replace(table, `,{"cells":["b"],"object":{"metadata":{"name":"b"}}}`, "", 1),
		`"apiVersion":"cluster.hypershift.openshift.io/v1beta2"}]`, `"apiVersion":"ROW:cluster.x-k8s.io/v1beta2"}]`, 1)
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if len(rows) != 2 {
		t.Errorf("Row saw %d rows, want 2: %q", len(rows), rows)
	}
	// Without Row, "rows" is a member like any other.
	if got, err := io.ReadAll(NewListReader(strings.NewReader(table), inOnePass)); err != nil || string(got) != table {
		t.Errorf("without Row: %s, %v", got, err)
	}
	// A row that cannot be translated fails the Table, naming the row.
	o.Row = func(dst, _ []byte) ([]byte, error) { return dst, errors.New("cannot translate") }
	if _, err := io.ReadAll(NewListReader(strings.NewReader(table), o)); err == nil || !strings.Contains(err.Error(), `"rows": item 0`) {
		t.Errorf("a failing row: %v", err)
	}
}

// appendObjects is objects with AppendObject.
var appendObjects = func() Objects {
	o := objects
	o.AppendObject = func(dst, b []byte) ([]byte, error) {
		out, err := objects.Object(b)
		return append(dst, out...), err
	}
	return o
}()

// inOnePass is appendObjects with AppendItem, which leaves an item holding "slow" to AppendObject.
var inOnePass = func() Objects {
	o := appendObjects
	o.AppendItem = func(dst, data []byte) ([]byte, int, error) {
		end, err := translate.Scan(data, 0)
		switch {
		case err != nil:
			return dst, 0, err
		case bytes.Contains(data[:end], []byte("slow")):
			return dst, 0, errors.New("not in one pass")
		}
		dst, err = appendObjects.AppendObject(dst, data[:end])
		return dst, end, err
	}
	return o
}()

// TestListDrops: an item the translation drops is left out, with its comma.
func TestListDrops(t *testing.T) {
	drop := func(b []byte) bool { return bytes.Contains(b, []byte(`"drop"`)) }
	o := objects
	o.Object = func(b []byte) ([]byte, error) {
		if drop(b) {
			return nil, nil
		}
		return objects.Object(b)
	}
	a := appendObjects
	a.AppendObject = func(dst, b []byte) ([]byte, error) {
		if drop(b) {
			return dst, nil
		}
		return appendObjects.AppendObject(dst, b)
	}
	in := `{"items":[{"n":"drop"},{"n":1},{"n":"drop"},{"n":2},{"n":"drop"}]}`
	want := `{"items":[{"n":1},{"n":2}]}` + "\n"
	for _, o := range []Objects{o, a} {
		var out bytes.Buffer
		if err := List(&out, strings.NewReader(in), o); err != nil || out.String() != want {
			t.Errorf("List: got %s, %v; want %s", out.String(), err, want)
		}
	}
}

// TestListReaderPrime: Prime reports a list that fails before the output asked for is ready, and
// Read hands on what was primed, then the error.
func TestListReaderPrime(t *testing.T) {
	r := NewListReader(strings.NewReader(`{"kind":"X","items":[{"a":"untranslatable"}]}`), objects)
	if err := r.Prime(1 << 10); err == nil {
		t.Fatal("Prime: want the item's error")
	}
	r = NewListReader(strings.NewReader(`{"kind":"X","items":[{"a":1},{"a":"untranslatable"}]}`), objects)
	if err := r.Prime(1); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err == nil || !strings.HasPrefix(`{"kind":"X","items":[{"a":1}`, string(got)) {
		t.Errorf("got %s, %v; want a prefix of the list and an error", got, err)
	}
}

func TestListErrors(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"empty", ``},
		{"not an object", `[1,2]`},
		{"truncated", `{"apiVersion":"v1","items":[{"a":1}`},
		{"malformed item", `{"items":[{"a":}]}`},
		{"malformed item read the slow way", `{"items":[{"a":"slow",}]}`},
		{"malformed later item", `{"items":[{"a":1},{"a":1},{"a":[1,2,3,"x",{"b":1}}]}`},
		{"untranslatable item read the slow way", `{"items":[{"a":"untranslatable slow"}]}`},
		{"items not an array", `{"items":{"a":1}}`},
		{"untranslatable item", `{"items":[{"a":"untranslatable"}]}`},
		{"trailing data", `{"items":[]} {"items":[]}`},
		{"apiVersion not a string", `{"apiVersion":1,"items":[]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := List(io.Discard, strings.NewReader(tc.in), objects); err == nil {
				t.Errorf("List(%s): want an error", tc.in)
			}
			_, err := io.ReadAll(NewListReader(strings.NewReader(tc.in), appendObjects))
			if err == nil {
				t.Errorf("ListReader(%s): want an error", tc.in)
			}
			if _, oneErr := io.ReadAll(NewListReader(strings.NewReader(tc.in), inOnePass)); fmt.Sprint(oneErr) != fmt.Sprint(err) {
				t.Errorf("ListReader(%s) in one pass: %v; want %v", tc.in, oneErr, err)
			}
		})
	}
}

// signalWriter records what is written and signals every write.
type signalWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	written chan struct{}
	flushes int
}

func newSignalWriter() *signalWriter { return &signalWriter{written: make(chan struct{}, 1)} }

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	select {
	case w.written <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (w *signalWriter) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushes++
	return nil
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// waitFor waits until the output contains want.
func (w *signalWriter) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for !strings.Contains(w.String(), want) {
		select {
		case <-w.written:
		case <-deadline:
			t.Fatalf("timed out waiting for %s in the output; have %d bytes", want, len(w.String()))
		}
	}
}

// TestListStreams feeds a 1,000-item list through a pipe one item at a time and requires each item to
// be translated and written out before the next one is even sent: the list is never held whole.
func TestListStreams(t *testing.T) {
	t.Run("Object", func(t *testing.T) { testListStreams(t, objects) })
	t.Run("AppendItem", func(t *testing.T) { testListStreams(t, inOnePass) })
}

func testListStreams(t *testing.T, o Objects) {
	const n = 1000
	pr, pw := io.Pipe()
	out := newSignalWriter()
	done := make(chan error, 1)
	go func() { done <- List(out, pr, o) }()

	write := func(s string) {
		t.Helper()
		if _, err := io.WriteString(pw, s); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineList","metadata":{"resourceVersion":"1"},"items":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			write(",")
		}
		write(fmt.Sprintf(`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m%d"}}`, i))
		out.waitFor(t, fmt.Sprintf(`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"m%d"}}`, i))
	}
	write(`]}`)
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var list struct {
		APIVersion string            `json:"apiVersion"`
		Items      []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal([]byte(out.String()), &list); err != nil {
		t.Fatal(err)
	}
	if list.APIVersion != "cluster.x-k8s.io/v1beta2" || len(list.Items) != n {
		t.Errorf("apiVersion %q, %d items", list.APIVersion, len(list.Items))
	}
	if strings.Contains(out.String(), private) {
		t.Errorf("output still names the private group")
	}
}

func TestWatch(t *testing.T) {
	in := strings.Join([]string{
		`{"type":"ADDED","object":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"a"}}}`,
		`{"type":"MODIFIED","object":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"a"}}}`,
		`{"type":"DELETED","object":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"a"}}}`,
		`{"type":"BOOKMARK","object":{"kind":"Machine","apiVersion":"cluster.hypershift.openshift.io/v1beta2","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true","x":"cluster.hypershift.openshift.io"}}}}`,
		`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"machines.cluster.hypershift.openshift.io gone","reason":"Expired","code":410}}`,
	}, "\n") + "\n"
	want := strings.Join([]string{
		`{"type":"ADDED","object":{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"a"}}}`,
		`{"type":"MODIFIED","object":{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"a"}}}`,
		`{"type":"DELETED","object":{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"a"}}}`,
		// Only the bookmark's apiVersion changes.
		`{"type":"BOOKMARK","object":{"kind":"Machine","apiVersion":"cluster.x-k8s.io/v1beta2","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true","x":"cluster.hypershift.openshift.io"}}}}`,
		`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"machines.STATUS:cluster.x-k8s.io gone","reason":"Expired","code":410}}`,
	}, "\n") + "\n"
	out := newSignalWriter()
	if err := Watch(out, out.Flush, strings.NewReader(in), objects); err != nil {
		t.Fatal(err)
	}
	if out.String() != want {
		t.Errorf("Watch\n got %s\nwant %s", out.String(), want)
	}
	if out.flushes != 5 {
		t.Errorf("%d flushes, want one per event (5)", out.flushes)
	}
}

// TestWatchStreams requires each event to be written and flushed before the next one is sent.
func TestWatchStreams(t *testing.T) {
	pr, pw := io.Pipe()
	out := newSignalWriter()
	done := make(chan error, 1)
	go func() { done <- Watch(out, out.Flush, pr, objects) }()
	for i := 0; i < 50; i++ {
		event := fmt.Sprintf(`{"type":"ADDED","object":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m%d"}}}`+"\n", i)
		if _, err := io.WriteString(pw, event); err != nil {
			t.Fatal(err)
		}
		out.waitFor(t, fmt.Sprintf(`"metadata":{"name":"m%d"}}}`+"\n", i))
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestWatchReaderIdle: a WatchReader is idle (its next Read reads src) only while it holds nothing of the
// stream: not with part of an event still to hand on, nor with a second event read ahead, nor once the
// stream has ended.
func TestWatchReaderIdle(t *testing.T) {
	event := func(name string) string {
		return `{"type":"ADDED","object":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"` + name + `"}}}` + "\n"
	}
	for _, shared := range []bool{false, true} {
		src := strings.NewReader(event("a") + event("b"))
		r := NewWatchReader(src, objects)
		if shared {
			r = NewSharedWatchReader(src, objects, NewShared(1<<20), "machines")
		}
		if !r.Idle() {
			t.Errorf("shared %v: a new reader is not idle", shared)
		}
		p := make([]byte, 10)
		if _, err := r.Read(p); err != nil {
			t.Fatal(err)
		}
		if r.Idle() {
			t.Errorf("shared %v: idle with the rest of an event to hand on", shared)
		}
		var out []byte
		for !bytes.HasSuffix(out, []byte("\n")) {
			n, err := r.Read(p)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, p[:n]...)
		}
		if r.Idle() {
			t.Errorf("shared %v: idle with the next event read ahead", shared)
		}
		if _, err := io.Copy(io.Discard, r); err != nil {
			t.Fatal(err)
		}
		if r.Idle() {
			t.Errorf("shared %v: idle at the end of the stream", shared)
		}
	}
}

func TestWatchMalformedEndsWithErrorEvent(t *testing.T) {
	for _, tc := range []struct{ name, bad string }{
		{"malformed JSON", `{"type":"ADDED","object":{"apiVersion":}}`},
		{"untranslatable object", `{"type":"ADDED","object":{"kind":"untranslatable"}}`},
		{"unknown type", `{"type":"SURPRISE","object":{}}`},
		{"object before type", `{"object":{},"type":"ADDED"}`},
		{"not an object", `[1]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := `{"type":"ADDED","object":{"kind":"Machine"}}` + "\n" + tc.bad + "\n" + `{"type":"ADDED","object":{"kind":"Never"}}` + "\n"
			out := newSignalWriter()
			err := Watch(out, out.Flush, strings.NewReader(in), objects)
			if err == nil {
				t.Fatal("want an error")
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) != 2 {
				t.Fatalf("want the first event and an ERROR event, got %q", out.String())
			}
			var event struct {
				Type   string        `json:"type"`
				Object metav1.Status `json:"object"`
			}
			if err := json.Unmarshal([]byte(lines[1]), &event); err != nil {
				t.Fatal(err)
			}
			if event.Type != "ERROR" || event.Object.Code != 500 || event.Object.Reason != metav1.StatusReasonInternalError || event.Object.Kind != "Status" {
				t.Errorf("last event %s", lines[1])
			}
		})
	}
}

type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestWatchBrokenSource(t *testing.T) {
	broken := errors.New("connection reset")
	src := &failingReader{data: []byte(`{"type":"ADDED","object":{"kind":"Machine"}}` + "\n" + `{"type":"ADD`), err: broken}
	out := newSignalWriter()
	err := Watch(out, out.Flush, src, objects)
	if !errors.Is(err, broken) {
		t.Fatalf("err = %v, want %v", err, broken)
	}
	if strings.Contains(out.String(), "ERROR") {
		t.Errorf("a broken source must not produce an ERROR event: %s", out.String())
	}
}

type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestWriteErrors(t *testing.T) {
	var we *WriteError
	if err := List(errWriter{}, strings.NewReader(`{"items":[{"a":1}]}`), objects); !errors.As(err, &we) {
		t.Errorf("List: err = %v, want a *WriteError", err)
	}
	if err := Watch(errWriter{}, nil, strings.NewReader(`{"type":"ADDED","object":{}}`), objects); !errors.As(err, &we) {
		t.Errorf("Watch: err = %v, want a *WriteError", err)
	}
}

func TestDroppedObjects(t *testing.T) {
	hiding := Objects{
		APIVersion: objects.APIVersion,
		Object: func(b []byte) ([]byte, error) {
			if strings.Contains(string(b), `"hidden"`) {
				return nil, nil
			}
			return objects.Object(b)
		},
		Status: objects.Status,
	}
	var list strings.Builder
	in := `{"kind":"List","items":[{"metadata":{"name":"hidden"}},{"metadata":{"name":"a"}},{"metadata":{"name":"hidden"}},{"metadata":{"name":"b"}}]}`
	if err := List(&list, strings.NewReader(in), hiding); err != nil {
		t.Fatal(err)
	}
	if want := `{"kind":"List","items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}` + "\n"; list.String() != want {
		t.Errorf("List\n got %s\nwant %s", list.String(), want)
	}
	watch := `{"type":"ADDED","object":{"metadata":{"name":"hidden"}}}` + "\n" + `{"type":"ADDED","object":{"metadata":{"name":"a"}}}` + "\n"
	out := newSignalWriter()
	if err := Watch(out, out.Flush, strings.NewReader(watch), hiding); err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"ADDED","object":{"metadata":{"name":"a"}}}` + "\n"; out.String() != want {
		t.Errorf("Watch\n got %s\nwant %s", out.String(), want)
	}
}

// TestSharedWatchReader: readers of one scope translate an event once between them, and hand on the
// same events as a reader of their own would; dropped events and errors are not shared.
func TestSharedWatchReader(t *testing.T) {
	calls := map[string]int{}
	counting := Objects{
		APIVersion: objects.APIVersion,
		Status:     objects.Status,
		Object: func(b []byte) ([]byte, error) {
			calls[string(b)]++
			if bytes.Contains(b, []byte("hidden")) {
				return nil, nil
			}
			return objects.Object(b)
		},
	}
	a := `{"type":"ADDED","object":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","metadata":{"name":"a"}}}`
	hidden := `{"type":"ADDED","object":{"metadata":{"name":"hidden"}}}`
	in := a + "\n" + hidden + "\n" + a + "\r\n"
	want := strings.Repeat(`{"type":"ADDED","object":{"apiVersion":"cluster.x-k8s.io/v1beta2","metadata":{"name":"a"}}}`+"\n", 2)
	shared := NewShared(1 << 20)
	for i := range 3 {
		r := NewSharedWatchReader(strings.NewReader(in), counting, shared, "machines")
		got, err := io.ReadAll(r)
		if err != nil || r.Err() != nil || string(got) != want {
			t.Fatalf("reader %d: %q, %v, %v", i, got, err, r.Err())
		}
	}
	if n := calls[`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","metadata":{"name":"a"}}`]; n != 1 {
		t.Errorf("translated %d times, want once", n)
	}
	if n := calls[`{"metadata":{"name":"hidden"}}`]; n != 3 {
		t.Errorf("dropped object translated %d times, want once per reader (3)", n)
	}
	// Another scope translates on its own.
	if _, err := io.ReadAll(NewSharedWatchReader(strings.NewReader(a+"\n"), counting, shared, "other")); err != nil {
		t.Fatal(err)
	}
	if n := calls[`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","metadata":{"name":"a"}}`]; n != 2 {
		t.Errorf("translated %d times in two scopes, want twice", n)
	}
}

// TestSharedWatchReaderStreams: an event is handed on as soon as it is whole, also when no newline
// follows it (a stream that does not end its events with one).
func TestSharedWatchReaderStreams(t *testing.T) {
	shared := NewShared(1 << 20)
	for _, sep := range []string{"\n", " ", ""} {
		pr, pw := io.Pipe()
		r := NewSharedWatchReader(pr, objects, shared, "machines")
		buf := make([]byte, 8<<10)
		for i := range 20 {
			event := fmt.Sprintf(`{"type":"ADDED","object":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","metadata":{"name":"m%d"}}}`, i%3)
			go func() { _, _ = io.WriteString(pw, event+sep) }()
			var got []byte
			for !bytes.HasSuffix(got, []byte("\n")) {
				n, err := r.Read(buf)
				if err != nil {
					t.Fatalf("separator %q, event %d: %v", sep, i, err)
				}
				got = append(got, buf[:n]...)
			}
			if want := strings.ReplaceAll(event, private, upstream) + "\n"; string(got) != want {
				t.Fatalf("separator %q, event %d: %q, want %q", sep, i, got, want)
			}
		}
		_ = pw.Close()
	}
}
