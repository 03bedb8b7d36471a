// Package jsonx decodes and encodes generic JSON values (map[string]any, []any, json.Number, string, bool,
// nil) without changing what they say: numbers keep their exact text (json.Number), and encoding does not
// escape '<', '>' and '&' the way json.Marshal does. The proxy uses it where it must edit a document it
// has no Go type for (patches, metadata of non-mapped objects, Status bodies).
package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Decode decodes exactly one JSON value. Trailing data other than whitespace is an error, as is an empty
// input.
func Decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty JSON document")
		}
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("invalid character after top-level value at offset %d", dec.InputOffset())
	}
	return v, nil
}

// Encode encodes v compactly, without HTML escaping and without a trailing newline.
func Encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Members copies the members of the JSON object obj in their order, each value passed through fn, which
// returns it as it is or rewritten; a nil result drops the member. Whitespace between tokens is not kept,
// whitespace after the object is. It fails if obj is not one JSON object, or with fn's error.
func Members(obj []byte, fn func(key string, raw json.RawMessage) (json.RawMessage, error)) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(obj))
	out = append(out, '{')
	first := true
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("want an object key, got %v", tok)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("member %q: %w", key, err)
		}
		if raw, err = fn(key, raw); err != nil {
			return nil, err
		}
		if raw == nil {
			continue
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = appendKey(out, key)
		out = append(out, raw...)
	}
	if err := expectEnd(dec, '}'); err != nil {
		return nil, err
	}
	return append(append(out, '}'), trailingSpace(obj)...), nil
}

// Elements copies the elements of the JSON array arr in their order, each passed through fn with its
// index, which returns it as it is or rewritten; a nil result drops the element. It fails if arr is not
// one JSON array, or with fn's error. Whitespace after the array is kept.
func Elements(arr []byte, fn func(i int, raw json.RawMessage) (json.RawMessage, error)) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(arr))
	if err := expectDelim(dec, '['); err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(arr))
	out = append(out, '[')
	first := true
	for i := 0; dec.More(); i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		raw, err := fn(i, raw)
		if err != nil {
			return nil, err
		}
		if raw == nil {
			continue
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, raw...)
	}
	if err := expectEnd(dec, ']'); err != nil {
		return nil, err
	}
	return append(append(out, ']'), trailingSpace(arr)...), nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("unexpected end of JSON input")
		}
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, got %v", want, tok)
	}
	return nil
}

// expectEnd reads the closing delimiter (More returned false, so it is one) and fails on trailing data.
func expectEnd(dec *json.Decoder, want json.Delim) error {
	if err := expectDelim(dec, want); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("invalid character after top-level value at offset %d", dec.InputOffset())
	}
	return nil
}

func trailingSpace(data []byte) []byte {
	return data[len(bytes.TrimRight(data, " \t\r\n")):]
}

func appendKey(dst []byte, key string) []byte {
	b, _ := json.Marshal(key) // a string always encodes
	dst = append(dst, b...)
	return append(dst, ':')
}
