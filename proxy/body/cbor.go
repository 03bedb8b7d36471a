package body

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured/unstructuredscheme"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
)

// CBOR is the media type of CBOR bodies (client-go sends them when its ClientsPreferCBOR feature is on).
const CBOR = "application/cbor"

var cborSerializer = cbor.NewSerializer(unstructuredscheme.NewUnstructuredCreator(), unstructuredscheme.NewUnstructuredObjectTyper())

// CBORToJSON transcodes a CBOR-encoded object into JSON with apimachinery's CBOR serializer, the one
// kube-apiserver decodes CBOR requests with, into an unstructured object (so any kind, built-in or custom,
// comes through). A body that is not one CBOR object is an error.
func CBORToJSON(data []byte) ([]byte, error) {
	u := &unstructured.Unstructured{}
	if _, _, err := cborSerializer.Decode(data, nil, u); err != nil {
		return nil, fmt.Errorf("decoding CBOR: %w", err)
	}
	return u.MarshalJSON()
}
