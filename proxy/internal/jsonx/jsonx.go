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
