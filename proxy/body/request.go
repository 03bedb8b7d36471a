package body

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/proxy/body/jsonpatch"
	"github.com/openshift/hypershift-capi-proxy/proxy/groupnames"
	"github.com/openshift/hypershift-capi-proxy/proxy/negotiate"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// maxPresize bounds the buffer ReadAll allocates up front from a declared length: 64 KiB, more than
// nearly every CAPI object, so that a client declaring a large body it does not send (before the
// apiserver has authenticated it) holds no more than a copy buffer's worth; a longer body grows the
// buffer as it is read, as with io.ReadAll.
const maxPresize = 64 << 10

// ReadAll reads r to its end, as io.ReadAll does, into a buffer sized up front for the size bytes a
// request's or response's Content-Length declares (ContentLength; -1 or 0 when unknown, up to
// maxPresize): one allocation for a body of the declared length instead of io.ReadAll's doubling from
// 512 bytes (a 6 KB Machine: 8 allocations and 24 KB copied). A declared length is not trusted beyond
// the allocation: r is read until it ends, however long.
func ReadAll(r io.Reader, size int64) ([]byte, error) {
	var buf bytes.Buffer
	if size > 0 {
		// bytes.Buffer.ReadFrom reads into free space of at least bytes.MinRead, so the read that finds
		// the end also fits.
		buf.Grow(int(min(size, maxPresize)) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

// ReadRequest reads a request body of at most limit bytes and closes it, in one allocation where it
// declares its length (ReadAll). The error is an API status: 413 for a body too large, 400 for one that
// could not be read.
func ReadRequest(r *http.Request, limit int64) ([]byte, error) {
	data, err := ReadAll(http.MaxBytesReader(nil, r.Body, limit), min(r.ContentLength, limit))
	_ = r.Body.Close()
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", limit))
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading the request body: %v", err))
	}
	return data, nil
}

// SetRequest replaces a request's body with data of the given Content-Type, with its length (and a
// GetBody, so that the request can be sent again).
func SetRequest(r *http.Request, contentType string, data []byte) {
	r.Body = io.NopCloser(bytes.NewReader(data))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	r.ContentLength = int64(len(data))
	r.Header.Set("Content-Length", strconv.Itoa(len(data)))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
}

// ApplyPatchCBOR is the media type of server-side apply patches in CBOR.
const ApplyPatchCBOR = "application/apply-patch+cbor"

// PathsOf returns the group-carrying paths of an object of the given apiVersion and kind (as the body
// says them, empty where it does not), or an API status error for an object the proxy must refuse.
type PathsOf func(apiVersion, kind string) (*translate.Node, error)

// ObjectToPrivate translates the body of a create or an update (of an object or its status) to the
// private groups, decoding it as kube-apiserver decodes the media type of contentType (JSON when it is
// empty), and rewriting it along the tree pathsOf returns for the object's apiVersion and kind:
//
//   - JSON: rewritten in place, every other byte kept (translate.Direction.Rewrite);
//   - YAML: converted to JSON as the apiserver converts it, then as JSON;
//   - CBOR: decoded and encoded again in CBOR with the apiserver's own CBOR library, translated between
//     (so that a backend that does not take CBOR still answers 415);
//   - protobuf (built-in kinds only): transcoded to JSON when it names a mapped group.
//
// It returns the body to forward and its Content-Type: data and contentType themselves when nothing
// needed translating, or when the body cannot be parsed or has a media type that carries no object the
// proxy knows (the backend then answers with its own error: 400, 415, ...); else the translation. The
// error is an API status: pathsOf's, or 415 for protobuf naming a mapped group that the proxy cannot
// decode.
func ObjectToPrivate(contentType string, data []byte, pathsOf PathsOf) ([]byte, string, error) {
	mediaType, _ := negotiate.MediaType(contentType)
	var j []byte
	switch mediaType {
	case "", JSON:
		j = data
	case YAML:
		var err error
		if j, err = yaml.YAMLToJSON(data); err != nil {
			return data, contentType, nil
		}
	case CBOR:
		return cborToPrivate(contentType, data, func(v map[string]any) (*translate.Node, error) {
			apiVersion, _ := v["apiVersion"].(string)
			kind, _ := v["kind"].(string)
			return pathsOf(apiVersion, kind)
		})
	case Protobuf:
		if !groupnames.Mentions(translate.ToPrivate, data) {
			return data, contentType, nil
		}
		var err error
		if j, err = ProtobufToJSON(data); err != nil {
			return nil, "", untranslatable(mediaType, err)
		}
	default:
		return data, contentType, nil
	}
	upstreamNames := groupnames.Mentions(translate.ToPrivate, j)
	privateNames := groupnames.Mentions(translate.ToUpstream, j)
	if !upstreamNames && !privateNames {
		// Names no group, upstream or private: nothing to translate, nor to refuse (pathsOf judges the
		// apiVersion, which can then name neither), without reading the body.
		return data, contentType, nil
	}
	if translate.Valid(j) != nil {
		return data, contentType, nil
	}
	paths, err := pathsOf(validTypeMeta(j))
	if err != nil {
		return nil, "", err
	}
	out := j
	if privateNames {
		if out, err = translate.ToUnserved.RewriteValid(apiVersionPaths, out); err != nil {
			return data, contentType, nil
		}
	}
	if upstreamNames {
		if out, err = translate.ToPrivate.RewriteValid(paths, out); err != nil {
			return data, contentType, nil
		}
	}
	if bytes.Equal(out, j) {
		return data, contentType, nil
	}
	return out, JSON, nil
}

// apiVersionPaths is the tree of an object's own apiVersion. Where it names a private group, the proxy
// sends translate.ToUnserved's group instead: through the proxy the private groups do not exist, and the
// backend, which serves them, must answer such an object as kube-apiserver answers one of a group it does
// not serve (a create or update of a custom resource: 400 "the API version in the data (...) does not
// match the expected API version (...)"; of a built-in kind: 400 "no kind ... is registered for version
// ..."). Quotes puts the client's group back into the backend's message. Elsewhere in a body a private
// group is data, which the backend stores as the client sent it.
var apiVersionPaths = translate.Paths("apiVersion=apiVersion")

// markUnserved rewrites a JSON document's own apiVersion where it names a private group (apiVersionPaths);
// a document that names none is returned as it is. Malformed JSON is an error.
func markUnserved(data []byte) ([]byte, error) {
	if !groupnames.Mentions(translate.ToUpstream, data) {
		return data, nil
	}
	return translate.ToUnserved.Rewrite(apiVersionPaths, data)
}

// typeMeta returns a JSON object's apiVersion and kind as kube-apiserver decodes them (keys matched
// exactly, the last of duplicate keys winning); empty where the body has none, is not an object, or is
// malformed.
func typeMeta(object []byte) (apiVersion, kind string) {
	if translate.Valid(object) != nil {
		return "", ""
	}
	return validTypeMeta(object)
}

// validTypeMeta is typeMeta of a document translate.Valid accepted (translate.TopLevelStrings).
func validTypeMeta(object []byte) (apiVersion, kind string) {
	tm := translate.TopLevelStrings(object, "apiVersion", "kind")
	return tm[0], tm[1]
}

// cborToPrivate translates a CBOR body along the tree pathsOf returns for its decoded value: decoded and
// encoded again with apimachinery's CBOR library (the apiserver's), so that it stays CBOR. A body that does
// not decode to one map, or in which nothing changes, is returned as it is.
func cborToPrivate(contentType string, data []byte, pathsOf func(map[string]any) (*translate.Node, error)) ([]byte, string, error) {
	var v any
	if err := cbordirect.Unmarshal(data, &v); err != nil {
		return data, contentType, nil
	}
	object, ok := v.(map[string]any)
	if !ok {
		return data, contentType, nil
	}
	before, err := cbordirect.Marshal(object)
	if err != nil {
		return data, contentType, nil
	}
	paths, err := pathsOf(object)
	if err != nil {
		return nil, "", err
	}
	translate.ToUnserved.JSON(apiVersionPaths, object)
	translate.ToPrivate.JSON(paths, object)
	out, err := cbordirect.Marshal(object)
	if err != nil || bytes.Equal(out, before) {
		return data, contentType, nil
	}
	return out, contentType, nil
}

// PatchToPrivate translates the body of a patch to the private groups along the tree n (a route's Paths
// for a mapped kind, RequestPaths otherwise), decoding it as kube-apiserver decodes the patch type of
// contentType: merge and strategic merge patches as partial objects, JSON patches by operation (see
// jsonpatch.Translate), apply patches in YAML or CBOR converted to JSON. It returns the body to forward and its
// Content-Type, as ObjectToPrivate does: the body as it is when nothing needed translating or it cannot be
// parsed, else its translation (a YAML apply patch as JSON, which is YAML too; CBOR stays CBOR).
// A private group the client names at an object's apiVersion (in a merge or apply patch, or a JSON patch's
// value there) or in a JSON patch's test where a group is (jsonpatch.ToPrivate) is sent as
// translate.ToUnserved's group, before the upstream groups are translated. A JSON patch that copies or moves
// a value between fields that name groups differently is jsonpatch.ErrObjectNeeded (see jsonpatch.Resolve).
func PatchToPrivate(contentType string, data []byte, n *translate.Node) ([]byte, string, error) {
	mediaType, _ := negotiate.MediaType(contentType)
	var (
		out     []byte
		outType = contentType
		err     error
	)
	switch mediaType {
	case MergePatch, StrategicMergePatch:
		if out, err = markUnserved(data); err == nil {
			out, err = Paths(translate.ToPrivate, out, n)
		}
	case JSONPatch:
		// The client's private groups are marked before its upstream groups are translated to private
		// ones, as for a merge patch: the other way round, a test of the apiVersion the object has would
		// fail.
		if out, err = jsonpatch.ToPrivate(data, n); errors.Is(err, jsonpatch.ErrObjectNeeded) {
			return nil, "", err
		}
	case ApplyPatchYAML:
		var j []byte
		if j, err = yaml.YAMLToJSON(data); err == nil {
			if out, err = markUnserved(j); err == nil {
				out, err = Paths(translate.ToPrivate, out, n)
			}
			if err == nil && bytes.Equal(out, j) {
				out = data
			} else {
				outType = ApplyPatchYAML // the JSON form of the YAML
			}
		}
	case ApplyPatchCBOR:
		return cborToPrivate(contentType, data, func(map[string]any) (*translate.Node, error) { return n, nil })
	default:
		return data, contentType, nil
	}
	if err != nil || bytes.Equal(out, data) {
		return data, contentType, nil
	}
	return out, outType, nil
}

// untranslatable is the 415 for a body that names a mapped group in a form the proxy cannot decode:
// forwarding it would store the upstream group.
func untranslatable(mediaType string, err error) error {
	return apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "", schema.GroupResource{}, "",
		fmt.Sprintf("the %s body names a Cluster API group and cannot be translated: %v", mediaType, err), 0, false)
}

// Quotes pairs the texts of a request body that kube-apiserver quotes in its errors as the proxy sent them
// (sent, of Content-Type sentType) with the same texts as the client sent them (client, clientType), for
// status.TranslateQuoting, so that the client reads its own body where the backend quotes the one it got:
//
//   - the whole body, as the JSON the apiserver decoded (YAML converted to JSON as it converts it), which
//     decoding errors quote ("Object 'Kind' is missing in '<body>'", runtime.NewMissingKindErr);
//   - the summary of the body that the handlers of create and update add to a decoding error ("the object
//     provided is unrecognized (must be of type Cluster): ... (<summary>)", summary);
//   - each group of translate.ToUnserved in the body as sent, with the private group the client named.
//
// Pairs whose texts are equal are left out; nil when the proxy forwarded the body as it came.
func Quotes(clientType string, client []byte, sentType string, sent []byte) []status.Quote {
	if bytes.Equal(client, sent) {
		return nil
	}
	var quotes []status.Quote
	add := func(sent, client string) {
		if sent != "" && sent != client {
			quotes = append(quotes, status.Quote{Sent: sent, Client: client})
		}
	}
	if s, ok := decodedJSON(sentType, sent); ok {
		if c, ok := decodedJSON(clientType, client); ok {
			add(string(s), string(c))
		}
	}
	add(summary(sent), summary(client))
	for _, g := range upstream.Groups {
		unserved := translate.UnservedGroup(g.Private)
		if bytes.Contains(sent, []byte(unserved)) && !bytes.Contains(client, []byte(unserved)) {
			add(unserved, g.Private)
		}
	}
	return quotes
}

// decodedJSON returns the JSON kube-apiserver decodes a body of Content-Type contentType as: JSON bodies
// (objects and patches) as they are, YAML (and YAML apply patches) converted with sigs.k8s.io/yaml, as the
// apiserver's YAML serializer converts it; false for other media types and YAML that does not convert.
func decodedJSON(contentType string, data []byte) ([]byte, bool) {
	mediaType, _ := negotiate.MediaType(contentType)
	switch mediaType {
	case "", JSON, MergePatch, JSONPatch, StrategicMergePatch:
		return data, true
	case YAML, ApplyPatchYAML:
		j, err := yaml.YAMLToJSON(data)
		return j, err == nil
	}
	return nil, false
}

// summaryLength is how much of a body kube-apiserver's summary holds.
const summaryLength = 30

// summary is kube-apiserver's summary of a request body in a decoding error of a create or update
// (summarizeData in k8s.io/apiserver/pkg/endpoints/handlers/rest.go, called with summaryLength): a body
// that starts with '{' as text, any other in hex, cut after summaryLength bytes with " ...".
func summary(data []byte) string {
	cut := ""
	if len(data) > summaryLength {
		data, cut = data[:summaryLength], " ..."
	}
	switch {
	case len(data) == 0:
		return "<empty>"
	case data[0] == '{':
		return string(data) + cut
	default:
		return hex.EncodeToString(data) + cut
	}
}
