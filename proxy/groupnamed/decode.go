package groupnamed

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
)

// The media types of request bodies kube-apiserver decodes for these resources (apiextensions-apiserver's
// and kube-aggregator's codecs; CBOR when its feature gate is on).
const (
	mediaJSON     = "application/json"
	mediaYAML     = "application/yaml"
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
)

// decoder decodes the protobuf bodies of a Resource and encodes them as JSON.
type decoder struct {
	gvk      schema.GroupVersionKind
	protobuf runtime.Decoder
	json     runtime.Encoder
}

func newDecoder(r Resource) decoder {
	codecs := serializer.NewCodecFactory(r.Scheme)
	pb, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		panic(fmt.Sprintf("no protobuf serializer for %s", r.GroupResource))
	}
	js, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		panic(fmt.Sprintf("no JSON serializer for %s", r.GroupResource))
	}
	return decoder{gvk: schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}, protobuf: pb.Serializer, json: js.Serializer}
}

// BodyJSON returns the JSON form of a request body of the resource whose Content-Type is contentType,
// decoded as kube-apiserver decodes it (k8s.io/apiserver's NegotiateInputSerializer): an empty
// Content-Type is JSON; JSON is returned as it is; YAML is converted with sigs.k8s.io/yaml, as the
// apiserver's YAML serializer does; protobuf is decoded into the Resource's Scheme (the envelope's kind
// defaulting to the Resource's Kind; a kind of another group fails) and encoded as JSON; CBOR is
// transcoded with apimachinery's CBOR serializer. The error is an API status: 415 UnsupportedMediaType
// for a Content-Type that does not parse or that the apiserver does not decode, 400 BadRequest for a body
// that does not decode.
func (n *Names) BodyJSON(contentType string, data []byte) ([]byte, error) {
	mediaType := mediaJSON
	if contentType != "" {
		var err error
		if mediaType, _, err = mime.ParseMediaType(contentType); err != nil {
			return nil, unsupported(contentType)
		}
	}
	switch mediaType {
	case mediaJSON:
		return data, nil
	case mediaYAML:
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("decoding the YAML body: %v", err))
		}
		return j, nil
	case mediaProtobuf:
		obj, _, err := n.decoder.protobuf.Decode(data, &n.decoder.gvk, nil)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("decoding the protobuf body: %v", err))
		}
		var buf bytes.Buffer
		if err := n.decoder.json.Encode(obj, &buf); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("encoding the protobuf body as JSON: %v", err))
		}
		return buf.Bytes(), nil
	case body.CBOR:
		j, err := body.CBORToJSON(data)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		return j, nil
	}
	return nil, unsupported(contentType)
}

// unsupported is the 415 kube-apiserver answers for a body it has no decoder for.
func unsupported(contentType string) error {
	return apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "", schema.GroupResource{}, "",
		fmt.Sprintf("the body of type %q is not supported, supported media types: %s, %s, %s, %s",
			contentType, mediaJSON, mediaYAML, mediaProtobuf, body.CBOR), 0, false)
}

// CheckCreate checks the body of a create, of Content-Type contentType (see BodyJSON): it is refused with
// 403 Forbidden when the object's name (metadata.name) or its spec.group is in a mapped group, upstream
// or private, whichever the other says (kube-apiserver requires the name to end in .<spec.group>, the
// proxy does not rely on it). The body is read as kube-apiserver reads it; one that does not decode is
// refused too (415 or 400, see BodyJSON), since what the proxy cannot read it cannot check.
func (n *Names) CheckCreate(contentType string, data []byte) error {
	j, err := n.BodyJSON(contentType, data)
	if err != nil {
		return err
	}
	var obj struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Group string `json:"group"`
		} `json:"spec"`
	}
	if err := decodeStrict(j, &obj); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("decoding the %s: %v", n.resource.Kind, err))
	}
	name := obj.Metadata.Name
	for _, group := range []string{GroupOf(name), obj.Spec.Group} {
		if MappedGroup(group) {
			return n.Forbidden("create", name, group)
		}
	}
	return nil
}
