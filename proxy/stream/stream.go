// Package stream translates the two streamed JSON shapes of the Kubernetes API one object at a time, so
// that the proxy never holds a whole list or watch in memory and a watch client sees each event as soon as
// the backend sends it:
//
//   - a list, `{"apiVersion":"g/v","kind":"MachineList","metadata":{...},"items":[{...},{...}]}`: read
//     token by token with a json.Decoder; the list's apiVersion is translated, every item is translated and
//     written as soon as it has been read, every other member is copied as it is;
//   - a watch, newline-delimited events `{"type":"ADDED","object":{...}}`: the object of ADDED, MODIFIED and
//     DELETED is translated whole, the metav1.Status of ERROR by its own rules, and of a BOOKMARK (which
//     carries only apiVersion, kind and metadata) only the apiVersion.
//
// An item or an event whose object Objects.Object drops is left out.
//
// Members are written in the order they arrive. Whitespace between tokens is not preserved (the
// apiserver sends none). Only JSON is handled: protobuf and CBOR streams are a known limit of the proxy.
package stream

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/jsonx"
)

// Objects says how to translate what a stream carries. Every func is called synchronously and must not
// keep its argument.
type Objects struct {
	// APIVersion translates an apiVersion value: a list's own, a BOOKMARK object's.
	APIVersion func(apiVersion string) string
	// Object translates one whole JSON object: a list item, the object of an ADDED, MODIFIED or DELETED
	// event. A nil result without an error drops the item or the event: the client must not see the
	// object at all.
	Object func(obj []byte) ([]byte, error)
	// Status translates the metav1.Status of an ERROR event.
	Status func(status []byte) ([]byte, error)
}

// WriteError marks an error writing to the destination (the client went away, for example), as opposed
// to a malformed or untranslatable input.
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return "writing the translated stream: " + e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// writer remembers the first write error, so that a long sequence of writes needs one check.
type writer struct {
	w   io.Writer
	err error
}

func (w *writer) write(p []byte) {
	if w.err == nil {
		if _, err := w.w.Write(p); err != nil {
			w.err = &WriteError{Err: err}
		}
	}
}

func (w *writer) string(s string) {
	b, _ := json.Marshal(s) // a string always encodes
	w.write(b)
}

// List reads one JSON list object from src and writes it to dst, translated with o.APIVersion (the
// top-level "apiVersion") and o.Object (each element of "items", written as soon as it is translated).
// A null "items" is kept. It returns an error for malformed JSON, a top-level value that is not an object,
// or trailing data after it; what was written before the error is not retracted. A *WriteError means
// dst failed.
func List(dst io.Writer, src io.Reader, o Objects) error {
	dec := json.NewDecoder(src)
	w := &writer{w: dst}
	if err := expectDelim(dec, '{', "list"); err != nil {
		return err
	}
	w.write([]byte{'{'})
	for first := true; dec.More(); first = false {
		key, err := readKey(dec)
		if err != nil {
			return err
		}
		if !first {
			w.write([]byte{','})
		}
		w.string(key)
		w.write([]byte{':'})
		switch key {
		case "items":
			err = listItems(dec, w, o.Object)
		case "apiVersion":
			var raw json.RawMessage
			if err = dec.Decode(&raw); err == nil {
				raw, err = apiVersion(raw, o.APIVersion)
				w.write(raw)
			}
		default:
			var raw json.RawMessage
			if err = dec.Decode(&raw); err == nil {
				w.write(raw)
			}
		}
		if err != nil {
			return fmt.Errorf("list member %q: %w", key, err)
		}
		if w.err != nil {
			return w.err
		}
	}
	if err := expectDelim(dec, '}', "list"); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("unexpected data after the list at offset %d", dec.InputOffset())
	}
	w.write([]byte("}\n"))
	return w.err
}

// listItems copies the "items" array, translating and writing one element at a time.
func listItems(dec *json.Decoder, w *writer, object func([]byte) ([]byte, error)) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		w.write([]byte("null"))
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("want an array, got %v", tok)
	}
	w.write([]byte{'['})
	written := 0
	for i := 0; dec.More(); i++ {
		var item json.RawMessage
		if err := dec.Decode(&item); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
		out, err := object(item)
		if err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
		if out == nil {
			continue
		}
		if written > 0 {
			w.write([]byte{','})
		}
		written++
		w.write(out)
		if w.err != nil {
			return w.err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing ']'; More() returned false, so it is one
		return err
	}
	w.write([]byte{']'})
	return nil
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
	in := &reader{r: src}
	dec := json.NewDecoder(in)
	for {
		var event json.RawMessage
		var out []byte
		err := dec.Decode(&event)
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil && in.err != nil && !errors.Is(in.err, io.EOF):
			return in.err
		case errors.Is(err, io.ErrUnexpectedEOF):
			return fmt.Errorf("watch event: %w", err)
		case err == nil:
			out, err = Event(event, o)
			if err == nil && out == nil {
				continue // dropped
			}
		}
		if err != nil {
			err = fmt.Errorf("watch event: %w", err)
			if werr := writeEvent(dst, flush, ErrorEvent(err)); werr != nil {
				return werr
			}
			return err
		}
		if err := writeEvent(dst, flush, out); err != nil {
			return err
		}
	}
}

// reader remembers the first error of the reader it wraps, to tell a broken source from malformed data.
type reader struct {
	r   io.Reader
	err error
}

func (r *reader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && r.err == nil {
		r.err = err
	}
	return n, err
}

func writeEvent(dst io.Writer, flush func() error, event []byte) error {
	if _, err := dst.Write(append(event, '\n')); err != nil {
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
// ErrorEvent).
func Event(event []byte, o Objects) ([]byte, error) {
	eventType := ""
	dropped := false
	out, err := rewriteMembers(event, "watch event", func(key string, raw json.RawMessage) (json.RawMessage, error) {
		switch key {
		case "type":
			if err := json.Unmarshal(raw, &eventType); err != nil {
				return nil, fmt.Errorf("member %q: %w", key, err)
			}
		case "object":
			out, err := eventObject(eventType, raw, o)
			if err != nil {
				return nil, fmt.Errorf("%s object: %w", orUnknown(eventType), err)
			}
			dropped = out == nil
			return out, nil
		}
		return raw, nil
	})
	if dropped {
		return nil, err
	}
	return out, err
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
	return rewriteMembers(obj, "object", func(key string, raw json.RawMessage) (json.RawMessage, error) {
		if key == "apiVersion" {
			return apiVersion(raw, translate)
		}
		return raw, nil
	})
}

// rewriteMembers copies the members of the JSON object obj in their order, each value passed through fn
// (which returns it as it is, or rewritten). what names obj in errors.
func rewriteMembers(obj []byte, what string, fn func(key string, raw json.RawMessage) (json.RawMessage, error)) ([]byte, error) {
	var fnErr error
	out, err := jsonx.Members(obj, func(key string, raw json.RawMessage) (json.RawMessage, error) {
		raw, fnErr = fn(key, raw)
		return raw, fnErr
	})
	switch {
	case fnErr != nil:
		return nil, fnErr
	case err != nil:
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// apiVersion translates a raw JSON apiVersion value, which must be a string.
func apiVersion(raw json.RawMessage, translate func(string) string) (json.RawMessage, error) {
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("apiVersion: %w", err)
	}
	if t := translate(v); t != v {
		return json.Marshal(t)
	}
	return raw, nil
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

func expectDelim(dec *json.Decoder, want json.Delim, what string) error {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: unexpected end of JSON input", what)
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("%s: want %q, got %v", what, want, tok)
	}
	return nil
}

func readKey(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	key, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("want an object key, got %v", tok)
	}
	return key, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
