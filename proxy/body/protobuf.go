package body

import (
	"bytes"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// ProtobufToJSON transcodes a protobuf-encoded built-in object (the Kubernetes protobuf envelope, as
// client-go sends Secrets, ConfigMaps, ... when asked to) into JSON, with client-go's scheme. It fails for
// a type the scheme does not know; the apiserver accepts the JSON form of every built-in type.
func ProtobufToJSON(data []byte) ([]byte, error) {
	codecs := scheme.Codecs.WithoutConversion()
	pb, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		return nil, fmt.Errorf("no protobuf serializer")
	}
	js, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		return nil, fmt.Errorf("no JSON serializer")
	}
	obj, _, err := codecs.DecoderToVersion(pb.Serializer, nil).Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := js.Serializer.Encode(obj, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
