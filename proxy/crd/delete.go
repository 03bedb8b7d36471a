package crd

import (
	"encoding/json"
	"fmt"

	kjson "sigs.k8s.io/json"
)

// DeleteCollection decides a deletecollection of CRDs from the backend's list of the CRDs it selects (a
// CustomResourceDefinitionList, a PartialObjectMetadataList or a Table, in JSON). The rule is that of an
// apiserver holding only the CRDs the proxy's clients see, with the private CRDs' deletion refused as a
// delete by name refuses it:
//
//   - a hidden CRD (the platform's, or one of a private group without a route) is not selected: it is
//     left out of the result, as it is left out of a list;
//   - a private CRD is selected under its upstream name, and deleting it is refused: the whole request is
//     a 403 Forbidden naming it (the caller deletes nothing);
//   - every other CRD is deleted.
//
// It returns the names of the CRDs to delete, in the list's order. A list that does not decode is an error.
func (n *Names) DeleteCollection(list []byte) ([]string, error) {
	var l struct {
		Kind  string     `json:"kind"`
		Items []identity `json:"items"`
		// A Table's.
		ColumnDefinitions []struct {
			Format string `json:"format"`
		} `json:"columnDefinitions"`
		Rows []struct {
			Cells  []json.RawMessage `json:"cells"`
			Object *identity         `json:"object"`
		} `json:"rows"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(list, &l); err != nil {
		return nil, fmt.Errorf("decoding the list of CustomResourceDefinitions: %w", err)
	}
	var selected []string
	if l.Kind == "Table" {
		nameColumn := -1
		for i, c := range l.ColumnDefinitions {
			if c.Format == "name" {
				nameColumn = i
				break
			}
		}
		for i, r := range l.Rows {
			name := ""
			if r.Object != nil {
				name = r.Object.Metadata.Name
			} else if nameColumn >= 0 && nameColumn < len(r.Cells) {
				_ = json.Unmarshal(r.Cells[nameColumn], &name)
			}
			if name == "" {
				return nil, fmt.Errorf("table row %d names no CustomResourceDefinition", i)
			}
			selected = append(selected, name)
		}
	} else {
		for i, item := range l.Items {
			if item.Metadata.Name == "" {
				return nil, fmt.Errorf("item %d names no CustomResourceDefinition", i)
			}
			selected = append(selected, item.Metadata.Name)
		}
	}

	var names []string
	for _, name := range selected {
		switch c, hide := n.view(name); {
		case c != nil:
			return nil, Forbidden("deletecollection", c.upstream, c.upstreamGroup)
		case !hide:
			names = append(names, name)
		}
	}
	return names, nil
}
