package crd

import (
	"encoding/json"
	"fmt"

	"github.com/openshift/hypershift-capi-proxy/proxy/groupnamed"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/jsonx"
)

// setList returns a leaf that replaces a list of strings by list, or drops the member if list is empty.
func setList(list []string) groupnamed.Leaf {
	return func(json.RawMessage) (json.RawMessage, error) {
		if len(list) == 0 {
			return nil, nil
		}
		return jsonx.Encode(list)
	}
}

// mapList returns a leaf that maps every string of a list with fn.
func mapList(fn func([]string) []string) groupnamed.Leaf {
	return func(raw json.RawMessage) (json.RawMessage, error) {
		var list []string
		if json.Unmarshal(raw, &list) != nil || list == nil {
			return raw, nil
		}
		return jsonx.Encode(fn(list))
	}
}

// toUpstream are the edits that turn the private CRD c into its upstream view.
func (c *crdNames) toUpstream() groupnamed.Edits {
	names := groupnamed.Edits{"shortNames": setList(c.shortNames), "categories": setList(c.categories)}
	return groupnamed.Edits{
		"metadata": groupnamed.Edits{"name": groupnamed.SetString(c.private, c.upstream)},
		"spec":     groupnamed.Edits{"group": groupnamed.SetString(c.privateGroup, c.upstreamGroup), "names": names},
		"status":   groupnamed.Edits{"acceptedNames": names},
	}
}

// toPrivate are the edits that turn a client's upstream view of the CRD c back into the private CRD.
func (c *crdNames) toPrivate() groupnamed.Edits {
	names := groupnamed.Edits{"shortNames": mapList(privateShortNames), "categories": mapList(privateCategories)}
	return groupnamed.Edits{
		"metadata": groupnamed.Edits{"name": groupnamed.SetString(c.upstream, c.private)},
		"spec":     groupnamed.Edits{"group": groupnamed.SetString(c.upstreamGroup, c.privateGroup), "names": names},
		"status":   groupnamed.Edits{"acceptedNames": names},
	}
}

// Private translates the body of an update of the CRD named upstreamName (a whole CRD, also of its
// status subresource) to the private CRD: name, group, shortNames and categories.
func (n *Names) Private(upstreamName string, body []byte) ([]byte, error) {
	c, ok := n.byUpstream[upstreamName]
	if !ok {
		return body, nil
	}
	out, err := groupnamed.Apply(body, c.toPrivate())
	if err != nil {
		return nil, fmt.Errorf("decoding the CustomResourceDefinition: %w", err)
	}
	return out, nil
}
