package negotiate

import (
	"net/http"
	"testing"

	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
)

// Media type parameters and types the Accept tests combine.
const (
	pom      = "as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
	table    = "as=Table;g=meta.k8s.io;v=v1"
	protobuf = "application/vnd.kubernetes.protobuf"
)

func TestAccept(t *testing.T) {
	for _, tc := range []struct {
		name     string
		endpoint Endpoint
		in       []string
		want     string
	}{
		{"no Accept stays none: kube-apiserver answers JSON", CustomResource, nil, ""},
		{"text/plain is kept: kube-apiserver answers 406", CustomResource, []string{"text/plain"}, "text/plain"},
		{"JSON is kept", CustomResource, []string{"application/json"}, "application/json"},
		{"*/* is kept", CustomResource, []string{"*/*"}, "*/*"},
		{"application/* is kept", CustomResource, []string{"application/*"}, "application/*"},
		{"wildcard after protobuf: protobuf becomes JSON", Resource, []string{protobuf + ", */*"}, "application/json,*/*"},
		{"wildcard after protobuf of a custom resource: protobuf is refused", CustomResource, []string{protobuf + ", */*"}, "*/*"},
		{"q-values are kept, ranges kube-apiserver refuses are dropped", Resource, []string{protobuf + ";q=0.9, text/plain;q=1"}, "application/json;q=0.9"},
		{"text/plain and JSON", CustomResource, []string{"text/plain, application/json;q=0.5"}, "application/json;q=0.5"},
		{"nothing acceptable: kept for the 406", Resource, []string{"text/plain", "text/html"}, "text/plain,text/html"},
		{"several header values, repeats dropped", Resource, []string{"application/cbor", "application/json"}, "application/json"},
		{"YAML becomes JSON", CustomResource, []string{"application/yaml"}, "application/json"},
		{"metadata shapes keep their parameters", CustomResource, []string{protobuf + ";" + pom + ",application/json;" + pom + ",application/json"},
			"application/json;" + pom + ",application/json"},
		{"protobuf of a custom resource is refused by kube-apiserver, in JSON", CustomResource, []string{protobuf}, notAcceptable},
		{"protobuf of a built-in resource becomes JSON", Resource, []string{protobuf}, "application/json"},
		{"protobuf watch streams", Resource, []string{protobuf + ";stream=watch"}, "application/json;stream=watch"},
		{"a Table is never protobuf: the JSON after it wins", CustomResource, []string{protobuf + ";" + table + ", application/json"}, "application/json"},
		{"a Table alone in protobuf stays refused", Resource, []string{protobuf + ";" + table}, notAcceptable},
		{"refused binary ranges are dropped beside others", Resource, []string{protobuf + ";" + table + ",text/plain"}, "text/plain"},
		{"a Table in YAML becomes a JSON Table", CustomResource, []string{"application/yaml;" + table}, "application/json;" + table},
		{"kubectl's Table", CustomResource, []string{"application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"},
			"application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"},
		{"an unknown shape is refused", Resource, []string{protobuf + ";as=Foo;g=example.com;v=v1"}, notAcceptable},
		{"an unknown shape is refused, JSON included", Resource, []string{"application/json;as=Foo;g=example.com;v=v1,application/json"}, "application/json"},
		{"aggregated discovery in protobuf", Discovery, []string{protobuf + ";g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"},
			"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"},
		{"legacy discovery in protobuf", Discovery, []string{protobuf}, "application/json"},
		{"discovery refuses a Table", Discovery, []string{protobuf + ";" + table}, notAcceptable},
	} {
		if got := Accept(tc.in, tc.endpoint); got != tc.want {
			t.Errorf("%s: Accept(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestNarrow(t *testing.T) {
	h := http.Header{}
	Narrow(h, CustomResource)
	if _, ok := h["Accept"]; ok {
		t.Errorf("a request without Accept got one: %v", h)
	}
	h.Add("Accept", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
	h.Add("Accept", "text/plain")
	Narrow(h, CustomResource)
	if got := h.Values("Accept"); len(got) != 1 || got[0] != "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1" {
		t.Errorf("Accept: %q", got)
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
		// q order: the plain list wins.
		"application/json;as=Table;v=v1;g=meta.k8s.io;q=0.5,application/json": false,
		"application/json;q=0.5,application/json;as=Table;v=v1;g=meta.k8s.io": true,
		// A range the backend refused (protobuf Table) is skipped.
		"application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json": false,
		"text/plain,application/json;as=Table;v=v1;g=meta.k8s.io":                          true,
		"": false,
	} {
		if got := AsksTable(accept); got != want {
			t.Errorf("AsksTable(%q) = %v, want %v", accept, got, want)
		}
	}
}

// TestNotAcceptableIsRefusedEverywhere: the stand-in for refused binary ranges is refused by every
// endpoint, and by the negotiation of error Statuses (negotiation.DefaultEndpointRestrictions), so that
// kube-apiserver answers 406 and writes its errors in JSON.
func TestNotAcceptableIsRefusedEverywhere(t *testing.T) {
	for _, e := range []Endpoint{CustomResource, Resource, Discovery} {
		if _, ok := negotiation.NegotiateMediaTypeOptions(notAcceptable, serializers, restrictions(e)); ok {
			t.Errorf("endpoint %d accepts %s", e, notAcceptable)
		}
	}
	if _, ok := negotiation.NegotiateMediaTypeOptions(notAcceptable, serializers, negotiation.DefaultEndpointRestrictions); ok {
		t.Errorf("errors can be written as %s", notAcceptable)
	}
}

func TestAcceptProtobuf(t *testing.T) {
	for _, tc := range []struct {
		name     string
		endpoint Endpoint
		objects  bool
		in       []string
		want     string
	}{
		{"no Accept stays none", CustomResource, false, nil, ""},
		{"protobuf of a built-in kind is kept", Resource, true, []string{protobuf + ", application/json"}, protobuf + ",application/json"},
		{"protobuf watch of a built-in kind is kept", Resource, true, []string{protobuf + ";stream=watch"}, protobuf + ";stream=watch"},
		{"protobuf of kinds the proxy cannot decode becomes JSON", Resource, false, []string{protobuf + ", application/json"}, "application/json"},
		{"metadata shapes stay protobuf for a custom resource", CustomResource, false, []string{protobuf + ";" + pom + ",application/json;" + pom + ",application/json"},
			protobuf + ";" + pom + ",application/json;" + pom + ",application/json"},
		{"metadata shapes stay protobuf for any resource", Resource, false, []string{protobuf + ";" + pom}, protobuf + ";" + pom},
		{"plain protobuf of a custom resource is refused: the JSON after it wins", CustomResource, false, []string{protobuf + ", application/json"}, "application/json"},
		{"plain protobuf alone of a custom resource: kube-apiserver's own 406, in protobuf", CustomResource, false, []string{protobuf}, protobuf},
		{"a Table is never protobuf", CustomResource, false, []string{protobuf + ";" + table + ", application/json"}, "application/json"},
		{"a Table alone in protobuf: kube-apiserver's 406", Resource, true, []string{protobuf + ";" + table}, protobuf + ";" + table},
		{"CBOR alone is refused in JSON", Resource, true, []string{"application/cbor"}, notAcceptable},
		{"YAML becomes JSON", Resource, true, []string{"application/yaml"}, "application/json"},
	} {
		if got := AcceptProtobuf(tc.in, tc.endpoint, tc.objects); got != tc.want {
			t.Errorf("%s: AcceptProtobuf(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestIsProtobuf(t *testing.T) {
	for in, want := range map[string]bool{
		"application/vnd.kubernetes.protobuf":              true,
		"application/vnd.kubernetes.protobuf;stream=watch": true,
		"application/json":                                 false,
		"":                                                 false,
	} {
		if got := IsProtobuf(in); got != want {
			t.Errorf("IsProtobuf(%q) = %v, want %v", in, got, want)
		}
	}
}
