package crd

import (
	"encoding/json"
	"fmt"

	kjson "sigs.k8s.io/json"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/jsonx"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// edits is a tree of JSON object members to rewrite: a value is either edits (descend) or a leaf func
// that returns the member's new value, or nil to drop the member.
type edits map[string]any

type leaf = func(json.RawMessage) (json.RawMessage, error)

// apply rewrites the members of the JSON object raw named by e, in one pass, keeping every other member
// as it is; a value that is not an object is kept as it is.
func apply(raw json.RawMessage, e edits) (json.RawMessage, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return raw, nil
	}
	return jsonx.Members(raw, func(key string, v json.RawMessage) (json.RawMessage, error) {
		switch x := e[key].(type) {
		case edits:
			return apply(v, x)
		case leaf:
			return x(v)
		}
		return v, nil
	})
}

// setString returns a leaf that replaces a string value from with to.
func setString(from, to string) leaf {
	return func(raw json.RawMessage) (json.RawMessage, error) {
		var s string
		if json.Unmarshal(raw, &s) != nil || s != from {
			return raw, nil
		}
		return jsonx.Encode(to)
	}
}

// setList returns a leaf that replaces a list of strings by list, or drops the member if list is empty.
func setList(list []string) leaf {
	return func(json.RawMessage) (json.RawMessage, error) {
		if len(list) == 0 {
			return nil, nil
		}
		return jsonx.Encode(list)
	}
}

// mapList returns a leaf that maps every string of a list with fn.
func mapList(fn func([]string) []string) leaf {
	return func(raw json.RawMessage) (json.RawMessage, error) {
		var list []string
		if json.Unmarshal(raw, &list) != nil || list == nil {
			return raw, nil
		}
		return jsonx.Encode(fn(list))
	}
}

// toUpstream are the edits that turn the private CRD c into its upstream view.
func (c *crdNames) toUpstream() edits {
	names := edits{"shortNames": setList(c.shortNames), "categories": setList(c.categories)}
	return edits{
		"metadata": edits{"name": setString(c.private, c.upstream)},
		"spec":     edits{"group": setString(c.privateGroup, c.upstreamGroup), "names": names},
		"status":   edits{"acceptedNames": names},
	}
}

// toPrivate are the edits that turn a client's upstream view of the CRD c back into the private CRD.
func (c *crdNames) toPrivate() edits {
	names := edits{"shortNames": mapList(privateShortNames), "categories": mapList(privateCategories)}
	return edits{
		"metadata": edits{"name": setString(c.upstream, c.private)},
		"spec":     edits{"group": setString(c.upstreamGroup, c.privateGroup), "names": names},
		"status":   edits{"acceptedNames": names},
	}
}

// identity is what Upstream needs to know of an object, decoded with decodeIdentity.
type identity struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

// Upstream translates one object of the customresourcedefinitions resource the backend sent (a CRD, a
// PartialObjectMetadata of one, a list item without a kind, a Table of them, or a Status) to the view of
// the proxy's clients. It returns nil without an error for a CRD they must not see: one named in an
// upstream mapped group (the platform's own). It fails on malformed JSON.
func (n *Names) Upstream(obj []byte) ([]byte, error) {
	id, err := decodeIdentity(obj)
	if err != nil {
		return nil, fmt.Errorf("decoding a CustomResourceDefinition: %w", err)
	}
	switch id.Kind {
	case "Status":
		return status.Translate(translate.ToUpstream, obj)
	case "Table":
		return n.table(obj)
	}
	c, hide := n.view(id.Metadata.Name)
	switch {
	case hide:
		return nil, nil
	case c == nil:
		return obj, nil
	}
	return apply(obj, c.toUpstream())
}

// view says how a CRD the backend holds is shown: renamed (c), hidden, or as it is (neither). Any other
// CRD of a mapped group, upstream (the platform's) or private (without a route), is hidden.
func (n *Names) view(name string) (c *crdNames, hide bool) {
	if c, ok := n.byPrivate[name]; ok {
		return c, false
	}
	return nil, mappedGroup(groupOf(name))
}

// decodeIdentity decodes the kind and name of an object as kube-apiserver's JSON decoder does (exact
// member names, the last of repeated members winning).
func decodeIdentity(obj []byte) (identity, error) {
	var id identity
	err := kjson.UnmarshalCaseSensitivePreserveInts(obj, &id)
	return id, err
}

// table translates a meta.k8s.io Table of CRDs (kubectl get crd): rows of hidden CRDs are dropped, and
// rows of private CRDs get the upstream name in their name column and their object translated.
func (n *Names) table(data []byte) ([]byte, error) {
	nameColumn := -1
	return jsonx.Members(data, func(key string, raw json.RawMessage) (json.RawMessage, error) {
		switch key {
		case "columnDefinitions":
			var columns []struct {
				Format string `json:"format"`
			}
			if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &columns); err != nil {
				return nil, fmt.Errorf("decoding Table columns: %w", err)
			}
			for i, c := range columns {
				if c.Format == "name" {
					nameColumn = i
					break
				}
			}
		case "rows":
			if string(raw) == "null" {
				return raw, nil
			}
			return jsonx.Elements(raw, func(i int, row json.RawMessage) (json.RawMessage, error) {
				out, err := n.row(row, nameColumn)
				if err != nil {
					return nil, fmt.Errorf("table row %d: %w", i, err)
				}
				return out, nil
			})
		}
		return raw, nil
	})
}

func (n *Names) row(row json.RawMessage, nameColumn int) (json.RawMessage, error) {
	var r struct {
		Cells  []json.RawMessage `json:"cells"`
		Object *identity         `json:"object"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(row, &r); err != nil {
		return nil, err
	}
	name := ""
	if r.Object != nil {
		name = r.Object.Metadata.Name
	} else if nameColumn >= 0 && nameColumn < len(r.Cells) {
		_ = json.Unmarshal(r.Cells[nameColumn], &name)
	}
	c, hide := n.view(name)
	switch {
	case hide:
		return nil, nil
	case c == nil:
		return row, nil
	}
	return jsonx.Members(row, func(key string, raw json.RawMessage) (json.RawMessage, error) {
		switch key {
		case "cells":
			return jsonx.Elements(raw, func(i int, cell json.RawMessage) (json.RawMessage, error) {
				if i != nameColumn {
					return cell, nil
				}
				return setString(c.private, c.upstream)(cell)
			})
		case "object":
			if string(raw) == "null" {
				return raw, nil
			}
			return apply(raw, c.toUpstream())
		}
		return raw, nil
	})
}

// Private translates the body of an update of the CRD named upstreamName (a whole CRD, also of its
// status subresource) to the private CRD: name, group, shortNames and categories.
func (n *Names) Private(upstreamName string, body []byte) ([]byte, error) {
	c, ok := n.byUpstream[upstreamName]
	if !ok {
		return body, nil
	}
	out, err := apply(body, c.toPrivate())
	if err != nil {
		return nil, fmt.Errorf("decoding the CustomResourceDefinition: %w", err)
	}
	return out, nil
}
