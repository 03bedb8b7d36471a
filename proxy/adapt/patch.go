package adapt

import (
	"encoding/json"
	"fmt"
	"net/http"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/negotiate"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
)

// maxJSONPatchOperations is kube-apiserver's bound on the operations of one JSON patch.
const maxJSONPatchOperations = 10000

// patch serves a patch of an object the backend holds in another version: it reads the object, converts
// it to the client's version, applies the patch there as kube-apiserver would (the same JSON patch and
// merge patch library), converts the result back and writes it with an update that bears the resourceVersion
// it read. On a conflict it starts over, up to maxPatchAttempts times, unless the patch set
// metadata.resourceVersion itself (the client's own precondition, whose conflict is the client's). out is
// the request, already addressed to the backend's version. The update records the change in
// managedFields as an Update by the client's manager, as a patch does. The error is
// inprocess.ErrBrokenOff: an answer of the proxy it needs was broken off, and nothing was written.
func (x *exchange) patch(w http.ResponseWriter, out *http.Request) error {
	mediaType, _ := negotiate.MediaType(out.Header.Get("Content-Type"))
	switch mediaType {
	case body.JSONPatch, body.MergePatch:
	case body.ApplyPatchYAML, "application/apply-patch+cbor":
		status.Write(w, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", x.groupResource(), x.req.Name,
			fmt.Sprintf("server-side apply of %s %s is not supported: the backend serves only %s, which the proxy converts to and from "+
				"in process, and it records field ownership (metadata.managedFields) against the fields of %s, which an apply in %s "+
				"would corrupt; use %s, an update or a JSON or merge patch, or install the current private CRDs",
				x.client.Upstream.GroupVersion(), x.client.Upstream.Resource, x.backend.Upstream.Version, x.backend.Upstream.Version,
				x.client.Upstream.Version, x.backend.Upstream.GroupVersion()), 0, false))
		return nil
	default:
		// Custom resources take no strategic merge patch; answer as kube-apiserver does.
		status.Write(w, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", x.groupResource(), x.req.Name,
			fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s",
				body.JSONPatch, body.MergePatch, body.ApplyPatchYAML), 0, false))
		return nil
	}
	patch, err := body.ReadRequest(out, x.a.maxBody)
	if err != nil {
		status.Write(w, err)
		return nil
	}
	apply, err := patcher(mediaType, patch)
	if err != nil {
		status.Write(w, err)
		return nil
	}
	for attempt := 1; ; attempt++ {
		current, err := record(x.a.next, x.readRequest(out))
		if err != nil {
			return err
		}
		if current.Code() != http.StatusOK {
			// The object is missing, or the client may not read it: kube-apiserver's patch would fail so.
			writeBody(w, current.Header(), current.Code(), current.Body.Bytes())
			return nil
		}
		cur, err := x.toClient(current.Body.Bytes())
		if err != nil {
			status.Write(w, err)
			return nil
		}
		patched, err := apply(cur)
		if err != nil {
			status.Write(w, err)
			return nil
		}
		precondition := resourceVersion(patched) != resourceVersion(cur)
		update := out.Clone(out.Context())
		update.Method = http.MethodPut
		q := update.URL.Query()
		q.Del("force")
		retarget(update, update.URL.Path, q.Encode())
		result, warnings, err := x.store(update, patched, cur)
		if err != nil {
			return writeError(w, err)
		}
		if result.Code() == http.StatusConflict && !precondition && attempt < maxPatchAttempts {
			continue
		}
		x.answer(w, result, warnings)
		return nil
	}
}

func (x *exchange) groupResource() schema.GroupResource {
	return schema.GroupResource{Group: x.client.Upstream.Group, Resource: x.client.Upstream.Resource}
}

// readRequest is a GET of the object (or its status) a patch addresses, with the patch's credentials.
func (x *exchange) readRequest(out *http.Request) *http.Request {
	get := out.Clone(out.Context())
	get.Method = http.MethodGet
	retarget(get, get.URL.Path, "")
	get.Body, get.GetBody, get.ContentLength = http.NoBody, nil, 0
	for _, h := range []string{"Content-Type", "Content-Length", "Content-Encoding"} {
		get.Header.Del(h)
	}
	get.Header.Set("Accept", body.JSON)
	return get
}

// patcher decodes a patch once and returns the function that applies it, with kube-apiserver's errors:
// 400 for a malformed patch, 413 for too many operations, 422 for one that does not apply.
func patcher(mediaType string, patch []byte) (func([]byte) ([]byte, error), error) {
	if mediaType == body.MergePatch {
		var v map[string]any
		if err := json.Unmarshal(patch, &v); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
		}
		return func(doc []byte) ([]byte, error) {
			out, err := jsonpatch.MergePatch(doc, patch)
			if err != nil {
				return nil, apierrors.NewBadRequest(err.Error())
			}
			return out, nil
		}, nil
	}
	ops, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if len(ops) > maxJSONPatchOperations {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d",
			maxJSONPatchOperations, len(ops)))
	}
	return func(doc []byte) ([]byte, error) {
		out, err := ops.Apply(doc)
		if err != nil {
			return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
		}
		return out, nil
	}, nil
}

// resourceVersion returns metadata.resourceVersion of a JSON object, or "".
func resourceVersion(obj []byte) string {
	var o struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(obj, &o)
	return o.Metadata.ResourceVersion
}
