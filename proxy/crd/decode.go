package crd

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
)

// The media types of CustomResourceDefinition bodies kube-apiserver decodes (apiextensions-apiserver's
// codecs; CBOR when its feature gate is on).
const (
	mediaJSON     = "application/json"
	mediaYAML     = "application/yaml"
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
)

// scheme holds the apiextensions.k8s.io/v1 types with their defaults: the only version kube-apiserver
// serves CustomResourceDefinitions in, and the only one it accepts in a body sent to that version.
var (
	scheme   = runtime.NewScheme()
	protobuf runtime.Decoder
	jsonInfo runtime.SerializerInfo
)

func init() {
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	codecs := serializer.NewCodecFactory(scheme)
	pb, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		panic("no protobuf serializer for apiextensions.k8s.io")
	}
	protobuf = pb.Serializer
	if jsonInfo, ok = runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON); !ok {
		panic("no JSON serializer for apiextensions.k8s.io")
	}
}

var crdGVK = apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition")

// BodyJSON returns the JSON form of a CustomResourceDefinition request body whose Content-Type is
// contentType, decoded as kube-apiserver decodes it (k8s.io/apiserver's NegotiateInputSerializer): an
// empty Content-Type is JSON; JSON is returned as it is; YAML is converted with sigs.k8s.io/yaml, as the
// apiserver's YAML serializer does; protobuf is decoded into the apiextensions.k8s.io/v1 types (the
// envelope's kind defaulting to CustomResourceDefinition) and encoded as JSON; CBOR is transcoded with
// apimachinery's CBOR serializer. The error is an API status: 415 UnsupportedMediaType for a
// Content-Type that does not parse or that the apiserver does not decode, 400 BadRequest for a body that
// does not decode.
func BodyJSON(contentType string, data []byte) ([]byte, error) {
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
		obj, _, err := protobuf.Decode(data, &crdGVK, nil)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("decoding the protobuf body: %v", err))
		}
		var buf bytes.Buffer
		if err := jsonInfo.Serializer.Encode(obj, &buf); err != nil {
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

// decodeJSON decodes a CustomResourceDefinition from JSON as kube-apiserver's JSON serializer does when
// it is not strict (sigs.k8s.io/json's UnmarshalCaseSensitivePreserveInts): member names match exactly,
// and a repeated member is decoded again over the earlier one (the last value wins, objects merge), then
// sets the defaults the apiserver sets.
func decodeJSON(data []byte) (*apiextensionsv1.CustomResourceDefinition, error) {
	c := &apiextensionsv1.CustomResourceDefinition{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, c); err != nil {
		return nil, err
	}
	scheme.Default(c)
	return c, nil
}
