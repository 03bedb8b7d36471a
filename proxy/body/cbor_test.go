package body

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/backendtesting"
)

func TestCBORToJSON(t *testing.T) {
	in, err := direct.Marshal(map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
		"metadata": map[string]any{"name": "m", "generation": int64(2)}, "spec": map[string]any{"replicas": 1.5}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := CBORToJSON(in)
	if err != nil {
		t.Fatal(err)
	}
	backendtesting.EqualJSON(t, out, `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"m","generation":2},"spec":{"replicas":1.5}}`)
	if _, err := CBORToJSON([]byte("not cbor")); err == nil {
		t.Error("malformed CBOR: want an error")
	}
}
