package crd

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/groupnamed"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Patch checks and translates a patch of the CRD named upstreamName (Mapped) whose body is of media type
// mediaType. A patch of the status subresource may change anything (the apiserver keeps spec). A patch of
// the CRD itself may change its metadata but not its name, and not its spec: that is a 403 Forbidden,
// so is a media type the proxy cannot inspect. The name in a merge or apply patch is translated; an apply
// patch comes back as JSON. A malformed body is a 400 BadRequest.
func (n *Names) Patch(upstreamName, subresource, mediaType string, data []byte) ([]byte, error) {
	if mediaType == body.JSONPatch {
		if subresource == "" {
			if err := checkJSONPatch(upstreamName, data); err != nil {
				return nil, err
			}
		}
		return data, nil
	}
	switch mediaType {
	case body.MergePatch, body.StrategicMergePatch:
	case body.ApplyPatchYAML:
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("decoding apply patch: %v", err))
		}
		data = j
	default:
		return nil, forbidden(upstreamName, "a patch of type %q cannot be checked by the proxy", mediaType)
	}
	if subresource == "" {
		// Member names as the apiserver's patchers read them: exactly.
		var patch map[string]json.RawMessage
		if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &patch); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("decoding the patch: %v", err))
		}
		if _, ok := patch["spec"]; ok {
			return nil, specForbidden(upstreamName)
		}
	}
	out, err := n.Private(upstreamName, data)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return out, nil
}

// checkJSONPatch refuses operations that write to or move out of spec, the name or the whole document.
// The operations are read as the apiserver's JSON patch implementation (gopkg.in/evanphx/json-patch.v4,
// a map per operation) reads them: member names match exactly, and the last of repeated members wins;
// pointers as translate.PointerTokens says ("x/spec/group" is "/spec/group" there).
func checkJSONPatch(upstreamName string, data []byte) error {
	var ops []struct {
		Op   string  `json:"op"`
		Path *string `json:"path"`
		From *string `json:"from"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &ops); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("decoding JSON patch: %v", err))
	}
	for _, op := range ops {
		if op.Op == "test" {
			continue
		}
		for _, p := range []*string{op.Path, op.From} {
			if p == nil {
				continue
			}
			tokens, ok := translate.PointerTokens(*p)
			if !ok {
				continue // addresses nothing: the operation fails
			}
			switch {
			case len(tokens) == 0, tokens[0] == "spec",
				tokens[0] == "metadata" && (len(tokens) == 1 || len(tokens) == 2 && tokens[1] == "name"):
				return specForbidden(upstreamName)
			}
		}
	}
	return nil
}

// Update checks and translates the body of an update of the CRD named upstreamName (Mapped), in JSON,
// against the private CRD current (as the backend holds it): its spec, translated, must be the stored
// one; that is the view the proxy gave the client, so a read-modify-write that changes only metadata goes
// through. Both are decoded and defaulted as kube-apiserver decodes and defaults an update (decodeJSON)
// and compared with apimachinery's semantic equality. subresource "status" skips the check (the
// apiserver keeps spec). The result is the translated body.
func (n *Names) Update(upstreamName, subresource string, current, data []byte) ([]byte, error) {
	out, err := n.Private(upstreamName, data)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if subresource != "" {
		return out, nil
	}
	want, err := decodeJSON(current)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("decoding the stored CustomResourceDefinition: %w", err))
	}
	got, err := decodeJSON(out)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("decoding the CustomResourceDefinition: %v", err))
	}
	if !equality.Semantic.DeepEqual(want.Spec, got.Spec) {
		return nil, specForbidden(upstreamName)
	}
	return out, nil
}

func specForbidden(name string) error {
	group := groupnamed.GroupOf(name)
	return forbidden(name, "the proxy serves this CRD from HyperShift's private CRD in group %s, whose group, names and "+
		"schema come from the generator: only its metadata (but its name) and status may change through the proxy",
		translate.ToPrivate.Group(group))
}
