package negotiate

import "testing"

func TestJSONAccept(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, "application/json"},
		{[]string{"application/vnd.kubernetes.protobuf"}, "application/json"},
		{[]string{"application/vnd.kubernetes.protobuf, */*"}, "*/*"},
		{[]string{"application/cbor", "application/json"}, "application/json"},
		{[]string{"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"},
			"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"},
		{[]string{"application/json;as=Table;v=v1;g=meta.k8s.io, application/json"}, "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"},
		{[]string{"application/yaml"}, "application/json"},
		{[]string{"Application/JSON"}, "Application/JSON"},
	} {
		if got := JSONAccept(tc.in); got != tc.want {
			t.Errorf("JSONAccept(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestIsJSON(t *testing.T) {
	for in, want := range map[string]bool{
		"application/json": true,
		"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList": true,
		"application/json; charset=utf-8":                                      true,
		"application/json;stream=watch":                                        true,
		"application/vnd.kubernetes.protobuf":                                  false,
		"application/vnd.kubernetes.protobuf;stream=watch":                     false,
		"application/cbor":                                                     false,
		"text/plain":                                                           false,
		"":                                                                     false,
	} {
		if got := IsJSON(in); got != want {
			t.Errorf("IsJSON(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestAsksTable(t *testing.T) {
	for accept, want := range map[string]bool{
		"application/json;as=Table;v=v1;g=meta.k8s.io,application/json":    true,
		"application/json;g=meta.k8s.io;v=v1; as=Table":                    true,
		"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1": false,
		"application/json": false,
		"application/vnd.kubernetes.protobuf;as=Tables,application/json;v=Table;as=List": false,
	} {
		if got := AsksTable(accept); got != want {
			t.Errorf("AsksTable(%q) = %v, want %v", accept, got, want)
		}
	}
}
