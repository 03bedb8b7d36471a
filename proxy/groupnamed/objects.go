package groupnamed

import (
	"encoding/json"
	"fmt"

	kjson "sigs.k8s.io/json"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/jsonx"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// identity is what Upstream needs to know of an object, decoded with decodeStrict.
type identity struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

// tableRow is a meta.k8s.io Table's row as far as its name goes.
type tableRow struct {
	Cells  []json.RawMessage `json:"cells"`
	Object *identity         `json:"object"`
}

// columnDefinition is a Table's column as far as finding the name column goes.
type columnDefinition struct {
	Format string `json:"format"`
}

// nameColumn returns the index of the column of format "name" (kube-apiserver's Tables have one, the
// first), or -1.
func nameColumn(columns []columnDefinition) int {
	for i, c := range columns {
		if c.Format == "name" {
			return i
		}
	}
	return -1
}

// name returns the name of the object of a row: its object's, else its name column's.
func (r *tableRow) name(nameColumn int) string {
	name := ""
	if r.Object != nil {
		name = r.Object.Metadata.Name
	} else if nameColumn >= 0 && nameColumn < len(r.Cells) {
		_ = json.Unmarshal(r.Cells[nameColumn], &name)
	}
	return name
}

// decodeStrict decodes JSON as kube-apiserver's JSON decoder does (exact member names, the last of
// repeated members winning, objects merging).
func decodeStrict(data []byte, v any) error {
	return kjson.UnmarshalCaseSensitivePreserveInts(data, v)
}

// Upstream translates one object of the resource the backend sent (an object, a PartialObjectMetadata of
// one, a list item without a kind, a Table of them, or a Status) to the view of the proxy's clients: a
// private object with a route is renamed (Rename), an object of a mapped group that is not one is dropped
// (nil without an error, as discovery drops what it registers), any other object is passed on as it is. A
// Status is translated as every Status is (status.Translate), and its details.name of a private object
// with a route renamed. It fails on malformed JSON.
func (n *Names) Upstream(obj []byte) ([]byte, error) {
	var id identity
	if err := decodeStrict(obj, &id); err != nil {
		return nil, fmt.Errorf("decoding a %s: %w", n.resource.Kind, err)
	}
	switch id.Kind {
	case "Status":
		return n.status(obj)
	case "Table":
		return n.table(obj)
	}
	upstream, renamed, hide := n.view(id.Metadata.Name)
	switch {
	case hide:
		return nil, nil
	case !renamed:
		return obj, nil
	}
	return n.rename(obj, id.Metadata.Name, upstream)
}

// status translates a Status as every Status is (status.Translate: details.group, and group names in
// messages), and its details.name where it is the private name of an object with a route (a 404 or 403 of
// a request the proxy sent by the private name): the upstream name, as the client named it.
func (n *Names) status(obj []byte) ([]byte, error) {
	out, err := status.Translate(translate.ToUpstream, obj)
	if err != nil {
		return nil, err
	}
	var st struct {
		Details struct {
			Name string `json:"name"`
		} `json:"details"`
	}
	if decodeStrict(out, &st) != nil {
		return out, nil
	}
	upstream, ok := n.byPrivate[st.Details.Name]
	if !ok {
		return out, nil
	}
	return Apply(out, Edits{"details": Edits{"name": SetString(st.Details.Name, upstream)}})
}

// table translates a meta.k8s.io Table of the resource (kubectl get crd, kubectl get apiservices): rows
// of hidden objects are dropped, and rows of private objects with a route get the upstream name in their
// name column and their object renamed.
func (n *Names) table(data []byte) ([]byte, error) {
	column := -1
	return jsonx.Members(data, func(key string, raw json.RawMessage) (json.RawMessage, error) {
		switch key {
		case "columnDefinitions":
			var columns []columnDefinition
			if err := decodeStrict(raw, &columns); err != nil {
				return nil, fmt.Errorf("decoding Table columns: %w", err)
			}
			column = nameColumn(columns)
		case "rows":
			if string(raw) == "null" {
				return raw, nil
			}
			return jsonx.Elements(raw, func(i int, row json.RawMessage) (json.RawMessage, error) {
				out, err := n.row(row, column)
				if err != nil {
					return nil, fmt.Errorf("table row %d: %w", i, err)
				}
				return out, nil
			})
		}
		return raw, nil
	})
}

func (n *Names) row(row json.RawMessage, column int) (json.RawMessage, error) {
	var r tableRow
	if err := decodeStrict(row, &r); err != nil {
		return nil, err
	}
	private := r.name(column)
	upstream, renamed, hide := n.view(private)
	switch {
	case hide:
		return nil, nil
	case !renamed:
		return row, nil
	}
	return jsonx.Members(row, func(key string, raw json.RawMessage) (json.RawMessage, error) {
		switch key {
		case "cells":
			return jsonx.Elements(raw, func(i int, cell json.RawMessage) (json.RawMessage, error) {
				if i != column {
					return cell, nil
				}
				return SetString(private, upstream)(cell)
			})
		case "object":
			if string(raw) == "null" {
				return raw, nil
			}
			return n.rename(raw, private, upstream)
		}
		return raw, nil
	})
}

// Edits is a tree of JSON object members to rewrite: a value is either Edits (descend) or a Leaf, which
// returns the member's new value, or nil to drop the member.
type Edits map[string]any

// Leaf rewrites one member's value.
type Leaf = func(json.RawMessage) (json.RawMessage, error)

// Apply rewrites the members of the JSON object raw named by e, in one pass, keeping every other member
// as it is; a value that is not an object is kept as it is.
func Apply(raw []byte, e Edits) ([]byte, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return raw, nil
	}
	return jsonx.Members(raw, func(key string, v json.RawMessage) (json.RawMessage, error) {
		switch x := e[key].(type) {
		case Edits:
			return Apply(v, x)
		case Leaf:
			return x(v)
		}
		return v, nil
	})
}

// SetString returns a Leaf that replaces a string value from with to, and keeps any other value.
func SetString(from, to string) Leaf {
	return func(raw json.RawMessage) (json.RawMessage, error) {
		var s string
		if json.Unmarshal(raw, &s) != nil || s != from {
			return raw, nil
		}
		return jsonx.Encode(to)
	}
}
