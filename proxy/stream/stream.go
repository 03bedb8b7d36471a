// Package stream translates the two streamed JSON shapes of the Kubernetes API one object at a time, so
// that the proxy never holds a whole list or watch in memory and a watch client sees each event as soon as
// the backend sends it:
//
//   - a list, `{"apiVersion":"g/v","kind":"MachineList","metadata":{...},"items":[{...},{...}]}`: read
//     value by value, each validated once by translate.Scan and handed on as its bytes, never decoded, or
//     an item validated and translated in the same pass (Objects.AppendItem); the list's apiVersion is
//     translated, every item is translated and written as soon as it has been read, every other member
//     is copied as it is; the meta.k8s.io Table of a list (kubectl get) is read the same way, its
//     "rows" one by one (Objects.Row);
//   - a watch, newline-delimited events `{"type":"ADDED","object":{...}}`: the object of ADDED, MODIFIED and
//     DELETED is translated whole, the metav1.Status of ERROR by its own rules, and of a BOOKMARK (which
//     carries only apiVersion, kind and metadata) only the apiVersion.
//
// An item or an event whose object Objects.Object drops is left out. Objects.Object is given only
// well-formed JSON. Watches of one resource can share their translations (Shared).
//
// Members are written in the order they arrive. Whitespace between tokens is not preserved (the
// apiserver sends none). Protobuf watches (length-prefixed WatchEvent frames) are translated frame by
// frame by ProtobufWatchReader; a protobuf list states its length before its items, and is translated
// item by item by package body, which holds the translation until the last item. CBOR streams are a
// known limit of the proxy (kube-apiserver v1.34 serves no CBOR).
package stream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/jsonx"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Objects says how to translate what a stream carries. Every func is called synchronously and must not
// keep its argument.
type Objects struct {
	// APIVersion translates an apiVersion value: a list's own, a BOOKMARK object's.
	APIVersion func(apiVersion string) string
	// Object translates one whole JSON value, which the stream has validated: a list item, the object of
	// an ADDED, MODIFIED or DELETED event. A nil result without an error drops the item or the event:
	// the client must not see the object at all.
	Object func(obj []byte) ([]byte, error)
	// Status translates the metav1.Status of an ERROR event.
	Status func(status []byte) ([]byte, error)
	// AppendObject, when set, is Object for the items of lists, appending the translation to dst
	// (which it returns, extended) instead of returning it in a buffer of its own, so that a list
	// reuses one buffer for all its items. Returning dst as it was drops the item; on error the
	// returned buffer is ignored.
	AppendObject func(dst, obj []byte) ([]byte, error)
	// AppendItem, when set, is AppendObject in one pass for the items of lists that are objects: data
	// begins with an item's '{' and holds what the list has read after it, not validated yet;
	// AppendItem validates the item exactly as translate.Scan does, appends its translation to dst and
	// returns the extended buffer and the item's length. It fails with translate.ErrIncomplete when data
	// ends inside the item (the list reads more and calls it again from the item's start). On any
	// other error the item is read as without AppendItem (validated by translate.Scan, then
	// AppendObject or Object), which fails, or not, as it would have. Returning dst as it was drops the
	// item.
	AppendItem func(dst, data []byte) ([]byte, int, error)
	// Row, when set, translates one element of the "rows" of a meta.k8s.io Table, a validated JSON
	// value: a list reader then reads a Table's rows one by one, as a list's items (kube-apiserver
	// answers a list with a Table when the client asks for one, as kubectl get does). Without it
	// "rows" is copied as it is. Row appends the row's translation to dst and returns the extended
	// buffer; returning dst as it was drops the row.
	Row func(dst, row []byte) ([]byte, error)
}

// WriteError marks an error writing to the destination (the client went away, for example), as opposed
// to a malformed or untranslatable input.
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return "writing the translated stream: " + e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// List reads one JSON list object from src and writes it to dst, translated with o.APIVersion (the
// top-level "apiVersion") and o.AppendObject or o.Object (each element of "items", written as soon as it
// is translated). A null "items" is kept. It returns an error for malformed JSON, a top-level value that
// is not an object, or trailing data after it; what was written before the error is not retracted. A
// *WriteError means dst failed.
//
// The list is read with translate.Scan, one value at a time, or an item with o.AppendItem: every byte is
// validated once, and the members and items are handed on as the bytes they are, never decoded.
func List(dst io.Writer, src io.Reader, o Objects) error {
	r := NewListReader(src, o)
	for {
		err := r.Prime(1)
		if len(r.out) > 0 {
			if _, werr := dst.Write(r.out); werr != nil {
				return &WriteError{Err: werr}
			}
			r.out = r.out[:0]
		}
		if err != nil || r.state == listDone {
			return err
		}
	}
}

// ListReader is List as an io.Reader, for a caller that copies the translation on itself (the proxy's
// reverse proxy): each Read translates as many items as fill the caller's buffer, so that a list holds
// no goroutine, pipe or output buffer beyond one buffer of output and the item being read. Read returns
// io.EOF after the whole list, and List's error (never a *WriteError) when it fails; output translated
// in the same Read as the failure is dropped.
type ListReader struct {
	in *source
	o  Objects
	// out[off:] is translated output not read yet.
	out []byte
	off int
	// state is where in the list the reader is; members and items count what was read of the list's
	// members and of its elements, written the elements written (dropped ones are not). elements is the
	// member they are read from: "items", or a Table's "rows".
	state                   listState
	members, items, written int
	elements                string
	err                     error
}

type listState int

const (
	listStart listState = iota
	listMembers
	listItems
	listEnd
	listDone
)

// listReadSize is what a list's source reads at least at a time: lists are read whole, quickly, and a
// larger read costs fewer calls into the backend's transport.
const listReadSize = 32 << 10

// NewListReader returns a ListReader of the list src holds.
func NewListReader(src io.Reader, o Objects) *ListReader {
	in := newSource(src)
	in.minRead = listReadSize
	return &ListReader{in: in, o: o}
}

// Prime translates until at least n bytes of output are ready to be read, or the list ended, and
// returns the error the list failed with, if it did: a caller that must answer a list that cannot be
// translated with an error of its own, before any of it was handed on, primes it with the size of what
// it may hand on first.
func (r *ListReader) Prime(n int) error {
	for r.err == nil && r.state != listDone && len(r.out)-r.off < n {
		r.err = r.step()
	}
	return r.err
}

// Read implements io.Reader.
func (r *ListReader) Read(p []byte) (int, error) {
	if r.off == len(r.out) {
		r.out, r.off = r.out[:0], 0
		if err := r.Prime(len(p)); err != nil {
			r.out = r.out[:0]
			return 0, err
		}
		if len(r.out) == 0 {
			return 0, io.EOF
		}
	}
	n := copy(p, r.out[r.off:])
	r.off += n
	return n, nil
}

// step reads and translates the next part of the list: its opening, a member, an item, or its end.
func (r *ListReader) step() error {
	in := r.in
	switch r.state {
	case listStart:
		if err := in.expect('{', "list"); err != nil {
			return err
		}
		r.out = append(r.out, '{')
		r.state = listMembers
	case listMembers:
		c, err := in.next()
		if err != nil {
			return fmt.Errorf("list: %w", err)
		}
		if c == '}' {
			in.pos++
			r.state = listEnd
			return nil
		}
		if r.members > 0 {
			if c != ',' {
				return fmt.Errorf("list: invalid character %q after object key:value pair", c)
			}
			in.pos++
		}
		lit, key, err := in.key()
		if err != nil {
			return fmt.Errorf("list: %w", err)
		}
		if r.members > 0 {
			r.out = append(r.out, ',')
		}
		r.members++
		r.out = append(r.out, lit...)
		r.out = append(r.out, ':')
		if err := r.member(key); err != nil {
			return fmt.Errorf("list member %q: %w", key, err)
		}
	case listItems:
		if err := r.item(); err != nil {
			return fmt.Errorf("list member %q: %w", r.elements, err)
		}
	case listEnd:
		if _, err := in.next(); !errors.Is(err, io.EOF) {
			return fmt.Errorf("unexpected data after the list at offset %d", in.offset())
		}
		r.out = append(r.out, "}\n"...)
		r.state = listDone
	}
	return nil
}

// member copies the value of the list's member key: "apiVersion" translated, "items" (and a Table's
// "rows", with Objects.Row) opened (its elements are read by item), any other as it is.
func (r *ListReader) member(key string) error {
	in := r.in
	if key == "items" || key == "rows" && r.o.Row != nil {
		c, err := in.next()
		if err != nil {
			return err
		}
		if c == '[' {
			in.pos++
			r.out = append(r.out, '[')
			r.state, r.elements, r.items, r.written = listItems, key, 0, 0
			return nil
		}
		raw, err := in.value()
		if err != nil {
			return err
		}
		if string(raw) != "null" {
			return fmt.Errorf("want an array, got %.20s", raw)
		}
		r.out = append(r.out, raw...)
		return nil
	}
	raw, err := in.value()
	if err != nil {
		return err
	}
	if key == "apiVersion" {
		if raw, err = apiVersion(raw, r.o.APIVersion); err != nil {
			return err
		}
	}
	r.out = append(r.out, raw...)
	return nil
}

// item translates the next element of "items" (or "rows"), or closes the array.
func (r *ListReader) item() error {
	in := r.in
	c, err := in.next()
	if err != nil {
		return err
	}
	if c == ']' {
		in.pos++
		r.out = append(r.out, ']')
		r.state = listMembers
		return nil
	}
	i := r.items
	if i > 0 {
		if c != ',' {
			return fmt.Errorf("invalid character %q after array element", c)
		}
		in.pos++
	}
	r.items++
	before := len(r.out)
	if r.written > 0 {
		r.out = append(r.out, ',')
	}
	start := len(r.out)
	if c == ',' {
		c, _ = in.next() // an error is value's
	}
	if c != '{' || r.o.AppendItem == nil || r.elements == "rows" || !r.appendItem() {
		var item []byte
		if item, err = in.value(); err != nil {
			r.out = r.out[:before]
			return fmt.Errorf("item %d: %w", i, err)
		}
		if r.elements == "rows" {
			err = r.appendRow(item)
		} else {
			err = r.appendObject(item)
		}
	}
	switch {
	case err != nil:
		r.out = r.out[:before]
		return fmt.Errorf("item %d: %w", i, err)
	case len(r.out) == start: // dropped
		r.out = r.out[:before]
	default:
		r.written++
	}
	return nil
}

// appendItem translates the item at the source's position in one pass (Objects.AppendItem), reading
// more while it is incomplete, and reports whether it did; if not, nothing was consumed or written.
func (r *ListReader) appendItem() bool {
	in := r.in
	for {
		out, n, err := r.o.AppendItem(r.out, in.buf[in.pos:])
		switch {
		case err == nil:
			r.out = out
			in.pos += n
			return true
		case !errors.Is(err, translate.ErrIncomplete) || !in.fill():
			return false
		}
	}
}

// appendRow translates a Table's row, validated, with Objects.Row.
func (r *ListReader) appendRow(row []byte) error {
	var err error
	r.out, err = r.o.Row(r.out, row)
	return err
}

// appendObject translates item, validated, with Objects.AppendObject or Objects.Object.
func (r *ListReader) appendObject(item []byte) error {
	var err error
	if r.o.AppendObject != nil {
		r.out, err = r.o.AppendObject(r.out, item)
	} else {
		var out []byte
		if out, err = r.o.Object(item); out != nil {
			r.out = append(r.out, out...)
		}
	}
	return err
}

// Watch reads newline-delimited JSON watch events from src until it ends, and writes each translated
// event, followed by a newline, to dst, calling flush after every event. io.EOF from src at an event
// boundary ends the stream with a nil error.
//
// A malformed event, or one whose object cannot be translated, ends the stream: Watch then writes an ERROR
// event carrying a 500 InternalError Status (what kube-apiserver sends when it cannot encode an event;
// client-go's reflector answers it by watching again) and returns the error. A failure to read src (the
// backend connection broke, also in the middle of an event) ends the stream without an ERROR event, as the
// backend's own stream would have ended, and is returned as it is. A *WriteError means dst or flush
// failed; nothing more is written then.
func Watch(dst io.Writer, flush func() error, src io.Reader, o Objects) error {
	r := NewWatchReader(src, o)
	for {
		r.next(nil)
		if len(r.pending) > 0 {
			if err := writeEvent(dst, flush, r.pending); err != nil {
				return err
			}
			r.pending = nil
		}
		if r.ended {
			return r.err
		}
	}
}

// WatchReader is Watch as an io.Reader, for a caller that copies the translation on itself (the proxy's
// reverse proxy, which flushes after every read): each Read hands on the next translated event, or the
// rest of it, and src is read only when the last event was read whole, so that a watch holds no
// goroutine or output buffer of its own while it waits for the backend: a Read that finds nothing
// buffered reads src into its caller's buffer first. Read returns io.EOF at the end of the stream
// whatever ended it (after the ERROR event where Watch writes one); Err says what Watch would have
// returned.
type WatchReader struct {
	in *source
	o  Objects
	// shared, when set, holds whole events' translations under scope (NewSharedWatchReader).
	shared *Shared
	scope  string
	// lines is set while the stream ends each event with a newline.
	lines bool
	// pending is the part of the current event not read yet.
	pending []byte
	ended   bool
	err     error
}

// NewWatchReader returns a WatchReader of the watch events of src.
func NewWatchReader(src io.Reader, o Objects) *WatchReader {
	return &WatchReader{in: newSource(src), o: o}
}

// NewSharedWatchReader returns a WatchReader of the watch events of src that shares whole events'
// translations, through shared, with the other readers of scope, which must name everything o's
// translations depend on besides the bytes (the resource). kube-apiserver sends every watcher of a
// resource the same bytes for an event (it encodes an event once per encoding and caches it for all its
// watchers), and ends each with a newline (its JSON serializer's json.Encoder does): an event on a line
// of its own that was translated before, by any reader of scope, is handed on without being scanned or
// translated again, and, when it arrived in one read of src, without a buffer of its own. Once the stream
// has shown that it ends events with a newline, an event is read up to its newline before it is looked
// for. Errors and dropped events are not shared.
func NewSharedWatchReader(src io.Reader, o Objects, shared *Shared, scope string) *WatchReader {
	r := NewWatchReader(src, o)
	r.shared, r.scope = shared, scope
	return r
}

// Read implements io.Reader.
func (r *WatchReader) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		if r.ended {
			return 0, io.EOF
		}
		r.next(p)
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	if len(r.pending) == 0 {
		r.pending = nil // let the event go
	}
	return n, nil
}

// Err returns why the stream ended: nil at its end or before it, else as Watch's error.
func (r *WatchReader) Err() error { return r.err }

// Idle reports whether the reader holds nothing of the stream and the stream has not ended: its next
// Read reads src (and waits for it), so that a caller may wait for src itself first, without the buffer
// it reads into.
func (r *WatchReader) Idle() bool { return len(r.pending) == 0 && !r.ended && r.in.drained() }

// next reads and translates the next event into pending (a dropped one is skipped), or ends the stream:
// pending then holds the ERROR event, if any, and err what Watch returns. scratch, when not empty, is a
// buffer to read into while the source holds nothing (Read's caller's).
func (r *WatchReader) next(scratch []byte) {
	for {
		if len(scratch) > 0 && r.in.drained() {
			n, err := r.in.r.Read(scratch)
			if err == nil && r.sharedLine(scratch[:n]) {
				return
			}
			r.in.take(scratch[:n], err)
		}
		scratch = nil
		_, err := r.in.next()
		if err == nil && r.shared != nil {
			if r.lines {
				r.in.fillLine(r.shared.maxBytes / 8)
			}
			if r.sharedLine(r.in.buf[r.in.pos:]) {
				return
			}
		}
		var event, out []byte
		if err == nil {
			event, err = r.in.value()
			if err == nil {
				r.lines = r.in.newline(r.lines)
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			r.ended = true
			return
		case err != nil && r.in.err != nil && !errors.Is(r.in.err, io.EOF):
			r.ended, r.err = true, r.in.err
			return
		case errors.Is(err, io.ErrUnexpectedEOF):
			r.ended, r.err = true, fmt.Errorf("watch event: %w", err)
			return
		case err == nil:
			out, err = r.translate(event)
			if err == nil && out == nil {
				continue // dropped
			}
		}
		if err != nil {
			r.ended, r.err = true, fmt.Errorf("watch event: %w", err)
			r.pending = append(ErrorEvent(r.err), '\n')
			return
		}
		r.pending = out
		r.in.release()
		return
	}
}

// translate translates one event (a valid JSON value) and returns it with its newline, shared when it
// can be.
func (r *WatchReader) translate(event []byte) ([]byte, error) {
	if r.shared != nil {
		if out, ok := r.shared.lookup(r.scope, event); ok {
			return out, nil
		}
	}
	out, err := translateEvent(event, r.o)
	if err != nil || out == nil {
		return out, err
	}
	out = append(out, '\n')
	if r.shared != nil {
		out = r.shared.store(r.scope, event, out)
	}
	return out, nil
}

// sharedLine looks for the line data begins with (after whitespace) among the shared translations: on
// a hit, the translation is pending and the line, with its newline, consumed from data (in.buf or a
// scratch buffer: what follows it in a scratch buffer, if anything, goes to the source).
func (r *WatchReader) sharedLine(data []byte) bool {
	if r.shared == nil {
		return false
	}
	start := skipSpace(data, 0)
	end := bytes.IndexByte(data[start:], '\n')
	if end < 0 {
		return false
	}
	end += start
	line := data[start:end]
	for len(line) > 0 && (line[len(line)-1] == ' ' || line[len(line)-1] == '\t' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	out, ok := r.shared.lookup(r.scope, line)
	if !ok {
		return false
	}
	r.lines = true
	r.pending = out
	r.in.consume(data, end+1)
	return true
}

func writeEvent(dst io.Writer, flush func() error, event []byte) error {
	if _, err := dst.Write(event); err != nil {
		return &WriteError{Err: err}
	}
	if flush != nil {
		if err := flush(); err != nil {
			return &WriteError{Err: err}
		}
	}
	return nil
}

// Event translates one watch event, a JSON object {"type":"ADDED","object":{...}} as kube-apiserver
// encodes a metav1.WatchEvent, the way Watch translates each event of a stream: the object of ADDED,
// MODIFIED and DELETED with o.Object, the Status of ERROR with o.Status, the apiVersion of a BOOKMARK's
// object with o.APIVersion. The event's members are kept in their order; "object" is translated according
// to "type", which must therefore come first (as metav1.WatchEvent and every apiserver send it). It
// returns nil without an error when o.Object drops the event's object, and an error for a malformed event
// or an object that cannot be translated (Watch and the proxy's websocket watches answer it with
// ErrorEvent). Whitespace after the event is kept; the event written is on one line.
func Event(event []byte, o Objects) ([]byte, error) {
	if err := translate.Valid(event); err != nil {
		return nil, fmt.Errorf("watch event: %w", err)
	}
	start := skipSpace(event, 0)
	end, _ := translate.Scan(event, start)
	out, err := translateEvent(event[start:end], o)
	if out == nil || err != nil {
		return nil, err
	}
	return append(out, event[end:]...), nil
}

// translateEvent is Event of one valid JSON value, without leading or trailing whitespace.
func translateEvent(event []byte, o Objects) ([]byte, error) {
	if event[0] != '{' {
		return nil, fmt.Errorf("watch event: want an object, got %.20s", event)
	}
	out := make([]byte, 0, len(event)+64)
	out = append(out, '{')
	eventType := ""
	for i, first := skipSpace(event, 1), true; event[i] != '}'; first = false {
		if !first {
			i = skipSpace(event, i+1) // ','
		}
		keyEnd, _ := translate.Scan(event, i)
		lit := event[i:keyEnd]
		key, err := unquote(lit)
		if err != nil {
			return nil, err
		}
		i = skipSpace(event, skipSpace(event, keyEnd)+1) // ':'
		valueEnd, _ := translate.Scan(event, i)
		raw := event[i:valueEnd]
		i = skipSpace(event, valueEnd)
		switch key {
		case "type":
			if err := json.Unmarshal(raw, &eventType); err != nil {
				return nil, fmt.Errorf("member %q: %w", key, err)
			}
		case "object":
			if raw, err = eventObject(eventType, raw, o); err != nil {
				return nil, fmt.Errorf("%s object: %w", orUnknown(eventType), err)
			}
			if raw == nil {
				return nil, nil // dropped
			}
		}
		if !first {
			out = append(out, ',')
		}
		out = append(out, lit...)
		out = append(out, ':')
		out = append(out, raw...)
	}
	out = append(out, '}')
	if bytes.IndexByte(out, '\n') >= 0 || bytes.IndexByte(out, '\r') >= 0 {
		// Whitespace inside the object (in valid JSON a raw line break can be nothing else): one event
		// per line.
		var compact bytes.Buffer
		if err := json.Compact(&compact, out); err != nil {
			return nil, err
		}
		out = compact.Bytes()
	}
	return out, nil
}

func eventObject(eventType string, obj []byte, o Objects) ([]byte, error) {
	switch eventType {
	case watchAdded, watchModified, watchDeleted:
		return o.Object(obj)
	case watchError:
		return o.Status(obj)
	case watchBookmark:
		return objectAPIVersion(obj, o.APIVersion)
	case "":
		return nil, errors.New(`"object" before "type"`)
	default:
		return nil, fmt.Errorf("unknown event type %q", eventType)
	}
}

// The watch event types, as in k8s.io/apimachinery/pkg/watch (not imported: this package needs only
// their names).
const (
	watchAdded    = "ADDED"
	watchModified = "MODIFIED"
	watchDeleted  = "DELETED"
	watchBookmark = "BOOKMARK"
	watchError    = "ERROR"
)

// objectAPIVersion translates the top-level apiVersion of a JSON object and copies every other member.
func objectAPIVersion(obj []byte, translate func(string) string) ([]byte, error) {
	var fnErr error
	out, err := jsonx.Members(obj, func(key string, raw json.RawMessage) (json.RawMessage, error) {
		if key == "apiVersion" {
			raw, fnErr = apiVersion(raw, translate)
		}
		return raw, fnErr
	})
	switch {
	case fnErr != nil:
		return nil, fnErr
	case err != nil:
		return nil, fmt.Errorf("object: %w", err)
	}
	return out, nil
}

// apiVersion translates a raw JSON apiVersion value, which must be a string.
func apiVersion(raw []byte, translate func(string) string) ([]byte, error) {
	v, err := unquote(raw)
	if err != nil {
		return nil, fmt.Errorf("apiVersion: %w", err)
	}
	if t := translate(v); t != v {
		return json.Marshal(t)
	}
	return raw, nil
}

// unquote decodes a JSON string literal; the common case without escapes is a copy.
func unquote(lit []byte) (string, error) {
	if len(lit) >= 2 && lit[0] == '"' && bytes.IndexByte(lit, '\\') < 0 {
		return string(lit[1 : len(lit)-1]), nil
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return "", err
	}
	return s, nil
}

// ErrorEvent is an ERROR watch event carrying a 500 InternalError Status for err, what kube-apiserver
// sends when it cannot encode an event (client-go's reflector answers it by watching again).
func ErrorEvent(err error) []byte {
	s := apierrors.NewInternalError(err).ErrStatus
	s.Kind, s.APIVersion = "Status", "v1"
	b, _ := json.Marshal(struct {
		Type   string        `json:"type"`
		Object metav1.Status `json:"object"`
	}{Type: watchError, Object: s})
	return b
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
