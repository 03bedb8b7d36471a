package adapt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/klog/v2"
	"sigs.k8s.io/cluster-api/util/conversion"
	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/inprocess"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/jsonx"
	"github.com/openshift/hypershift-capi-proxy/proxy/loglevel"
	"github.com/openshift/hypershift-capi-proxy/proxy/negotiate"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Writes in process, and the conversion data they keep.
//
// When the backend's version is a spoke, it stores upstream's conversion-data annotation with the object:
// the hub as the client's write made it, from which reads restore what the spoke cannot hold (a *bool set
// to false, Machine's phase). kube-apiserver keeps the stored status on a write of the main resource and
// everything but the status on a write of /status, annotations included. So that the annotation always
// describes what is stored, never a status or spec the backend dropped:
//
//   - a create converts the object without its status (which the backend drops);
//   - an update or patch of the main resource converts the object with the stored status;
//   - a write of the status converts the stored object with the client's status, and then sets the
//     annotation that write could not store with a second write (a merge patch of the main resource, at the
//     resourceVersion the first returned). Should another writer come between the two, the second fails
//     with a conflict and the status fields only the hub holds are left as that writer's annotation says.

// keepsConversionData reports whether the backend's version stores conversion data and the kind's status is
// a subresource (written apart from the rest).
func (x *exchange) keepsConversionData() bool {
	return x.backend.Conversion == translate.Spoke && x.client.HasSubresource("status")
}

// createOrUpdate serves a create or an update (of the main resource or of status). out is the request,
// addressed to the backend's version. The error is inprocess.ErrBrokenOff: an answer of the proxy it
// needs was broken off, and nothing was written.
func (x *exchange) createOrUpdate(w http.ResponseWriter, out *http.Request) error {
	obj, err := x.readObject(out)
	if err != nil {
		return writeError(w, err)
	}
	var current []byte
	if x.req.Verb == "update" && x.keepsConversionData() {
		rec, err := record(x.a.next, x.readRequest(out))
		if err != nil {
			return err
		}
		if rec.Code() != http.StatusOK {
			writeBody(w, rec.Header(), rec.Code(), rec.Body.Bytes())
			return nil
		}
		if current, err = x.toClient(rec.Body.Bytes()); err != nil {
			return writeError(w, err)
		}
	}
	rec, warnings, err := x.store(out, obj, current)
	if err != nil {
		return writeError(w, err)
	}
	x.answer(w, rec, warnings)
	return nil
}

// readObject reads the JSON (or YAML) object of a create or update.
func (x *exchange) readObject(r *http.Request) ([]byte, error) {
	mediaType, _ := negotiate.MediaType(r.Header.Get("Content-Type"))
	if mediaType != body.JSON && mediaType != body.YAML {
		return nil, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "", schema.GroupResource{}, "",
			fmt.Sprintf("the body of type %q cannot be converted, supported types: %s, %s", mediaType, body.JSON, body.YAML), 0, false)
	}
	data, err := body.ReadRequest(r, x.a.maxBody)
	if err != nil {
		return nil, err
	}
	if mediaType == body.YAML {
		if data, err = yaml.YAMLToJSON(data); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("decoding YAML: %v", err))
		}
	}
	return data, nil
}

// toClient converts a stored object (JSON, in the backend's version) to the client's version.
func (x *exchange) toClient(data []byte) ([]byte, error) {
	out, _, err := x.a.converter.Upstream(x.ctx, data, x.client.Upstream.GroupVersion().String())
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("converting the stored object to %s: %w", x.client.Upstream.GroupVersion(), err))
	}
	return out, nil
}

// store writes obj (JSON in the client's version) with req (its method and path are the write's), and
// returns the backend's answer and the warnings for fields the client's Go type lacks. current is the
// stored object in the client's version, for an update or patch where keepsConversionData (see above).
// The error is an API status, or inprocess.ErrBrokenOff when the backend's answer was broken off.
func (x *exchange) store(req *http.Request, obj, current []byte) (*inprocess.Recorder, []string, error) {
	keep := x.keepsConversionData()
	statusWrite := x.req.Subresource == "status"
	var err error
	switch {
	case !keep:
	case x.req.Verb == "create":
		obj, err = withMember(obj, nil, "status")
	case statusWrite:
		obj, err = statusOnto(current, obj)
	default:
		obj, err = withMember(obj, current, "status")
	}
	if err != nil {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("decoding the object: %v", err))
	}
	converted, unknown, err := x.a.converter.Upstream(x.ctx, obj, x.backend.Upstream.GroupVersion().String())
	if err != nil {
		return nil, nil, x.conversionError(err)
	}
	warnings, err := body.UnknownFields(req.URL.Query().Get("fieldValidation"), unknown)
	if err != nil {
		return nil, nil, err
	}
	setBody(req, converted)
	rec, err := record(x.a.next, req)
	if err != nil {
		return nil, nil, err
	}
	if keep && statusWrite && rec.Code() == http.StatusOK && !req.URL.Query().Has("dryRun") {
		rec = x.storeConversionData(req, converted, rec)
	}
	return rec, warnings, nil
}

// storeConversionData sets, after a write of status, the conversion-data annotation that write could not
// store, with a merge patch of the main resource at the resourceVersion the status write returned. It
// returns the patch's answer, or written when nothing needs storing or the patch fails (logged).
func (x *exchange) storeConversionData(req *http.Request, converted []byte, written *inprocess.Recorder) *inprocess.Recorder {
	want, got := annotation(converted, conversion.DataAnnotation), annotation(written.Body.Bytes(), conversion.DataAnnotation)
	if want == got {
		return written
	}
	var value any // nil removes the annotation
	if want != "" {
		value = want
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": resourceVersion(written.Body.Bytes()),
		"annotations":     map[string]any{conversion.DataAnnotation: value},
	}})
	if err != nil {
		return written
	}
	p := req.Clone(req.Context())
	p.Method = http.MethodPatch
	q := p.URL.Query()
	q.Del("fieldValidation")
	retarget(p, strings.TrimSuffix(p.URL.Path, "/status"), q.Encode())
	setBody(p, patch)
	p.Header.Set("Content-Type", body.MergePatch)
	rec, err := record(x.a.next, p)
	if err != nil || rec.Code() != http.StatusOK {
		klog.V(loglevel.Unusual).InfoS("Storing the conversion data of a status write failed; the hub-only status fields are not kept",
			"path", req.URL.Path, "code", rec.Code(), "err", err)
		return written
	}
	return rec
}

// answer writes the backend's answer to a write, converted to the client's version, with warnings.
func (x *exchange) answer(w http.ResponseWriter, rec *inprocess.Recorder, warnings []string) {
	for _, text := range warnings {
		if h, err := utilnet.NewWarningHeader(299, "-", text); err == nil {
			w.Header().Add("Warning", h)
		}
	}
	data := rec.Body.Bytes()
	if rec.Code() < http.StatusMultipleChoices && negotiate.IsJSON(rec.Header().Get("Content-Type")) && len(bytes.TrimSpace(data)) > 0 {
		var err error
		if data, err = x.objects().Object(data); err != nil {
			status.Write(w, apierrors.NewInternalError(fmt.Errorf("converting the backend's answer to %s: %w", x.client.Upstream.GroupVersion(), err)))
			return
		}
	}
	writeBody(w, rec.Header(), rec.Code(), data)
}

// withMember returns obj with its top-level member name taken from from (removed if from lacks it or is
// nil).
func withMember(obj, from []byte, name string) ([]byte, error) {
	o, err := decodeObject(obj)
	if err != nil {
		return nil, err
	}
	delete(o, name)
	if from != nil {
		f, err := decodeObject(from)
		if err != nil {
			return nil, err
		}
		if v, ok := f[name]; ok {
			o[name] = v
		}
	}
	return jsonx.Encode(o)
}

// statusOnto returns current with the status and resourceVersion of obj: what a write of status stores.
func statusOnto(current, obj []byte) ([]byte, error) {
	out, err := withMember(current, obj, "status")
	if err != nil {
		return nil, err
	}
	o, err := decodeObject(out)
	if err != nil {
		return nil, err
	}
	meta, _ := o["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		o["metadata"] = meta
	}
	delete(meta, "resourceVersion")
	if rv := resourceVersion(obj); rv != "" {
		meta["resourceVersion"] = rv
	}
	return jsonx.Encode(o)
}

func decodeObject(data []byte) (map[string]any, error) {
	v, err := jsonx.Decode(data)
	if err != nil {
		return nil, err
	}
	o, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a JSON object")
	}
	return o, nil
}

// annotation returns the value of one annotation of a JSON object, or "".
func annotation(obj []byte, key string) string {
	var o struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(obj, &o)
	return o.Metadata.Annotations[key]
}
