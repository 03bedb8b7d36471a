package groupnamed

import (
	"fmt"
)

// DeleteCollection decides a deletecollection of the resource from the backend's list of the objects it
// selects (a list of the resource's kind, a PartialObjectMetadataList or a Table, in JSON). The rule is
// that of an apiserver holding only the objects the proxy's clients see, with the private objects'
// deletion refused as a delete by name refuses it:
//
//   - a hidden object (the platform's, or one of a private group without a route) is not selected: it is
//     left out of the result, as it is left out of a list;
//   - a private object with a route is selected under its upstream name, and deleting it is refused: the
//     whole request is a 403 Forbidden naming it (the caller deletes nothing);
//   - every other object is deleted.
//
// It returns the names of the objects to delete, in the list's order. A list that does not decode is an
// error.
func (n *Names) DeleteCollection(list []byte) ([]string, error) {
	var l struct {
		Kind  string     `json:"kind"`
		Items []identity `json:"items"`
		// A Table's.
		ColumnDefinitions []columnDefinition `json:"columnDefinitions"`
		Rows              []tableRow         `json:"rows"`
	}
	if err := decodeStrict(list, &l); err != nil {
		return nil, fmt.Errorf("decoding the list of %s: %w", n.resource.Objects, err)
	}
	var selected []string
	if l.Kind == "Table" {
		column := nameColumn(l.ColumnDefinitions)
		for i, r := range l.Rows {
			name := r.name(column)
			if name == "" {
				return nil, fmt.Errorf("table row %d names no %s", i, n.resource.Kind)
			}
			selected = append(selected, name)
		}
	} else {
		for i, item := range l.Items {
			if item.Metadata.Name == "" {
				return nil, fmt.Errorf("item %d names no %s", i, n.resource.Kind)
			}
			selected = append(selected, item.Metadata.Name)
		}
	}

	var names []string
	for _, name := range selected {
		switch upstream, renamed, hide := n.view(name); {
		case renamed:
			return nil, n.Forbidden("deletecollection", upstream, GroupOf(upstream))
		case !hide:
			names = append(names, name)
		}
	}
	return names, nil
}
