package groupnamed_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/openshift/hypershift-capi-proxy/proxy/apiservice"
	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/crd"
	"github.com/openshift/hypershift-capi-proxy/proxy/groupnamed"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/routestesting"
)

// The two resources whose objects are named after a group, over the fake route table: machines in
// cluster.x-k8s.io v1beta1 and v1beta2, awsmachines in infrastructure.cluster.x-k8s.io v1beta2.
var (
	crds        = crd.New(routestesting.Table()).Names
	apiServices = apiservice.New(routestesting.Table())
)

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		names   *groupnamed.Names
		name    string
		target  groupnamed.Target
		private string
	}{
		{crds, "machines.cluster.x-k8s.io", groupnamed.Mapped, "machines.cluster.hypershift.openshift.io"},
		{crds, "awsmachines.infrastructure.cluster.x-k8s.io", groupnamed.Mapped, "awsmachines.infrastructure.cluster.hypershift.openshift.io"},
		{crds, "widgets.cluster.x-k8s.io", groupnamed.Hidden, ""},
		{crds, "machines.cluster.hypershift.openshift.io", groupnamed.Private, ""},
		{crds, "machines.example.com", groupnamed.Unmapped, ""},
		{crds, "nodot", groupnamed.Unmapped, ""},
		{apiServices, "v1beta2.cluster.x-k8s.io", groupnamed.Mapped, "v1beta2.cluster.hypershift.openshift.io"},
		{apiServices, "v1beta1.cluster.x-k8s.io", groupnamed.Mapped, "v1beta1.cluster.hypershift.openshift.io"},
		{apiServices, "v1beta2.infrastructure.cluster.x-k8s.io", groupnamed.Mapped, "v1beta2.infrastructure.cluster.hypershift.openshift.io"},
		// No route serves infrastructure.cluster.x-k8s.io/v1beta1: the platform's APIService is hidden.
		{apiServices, "v1beta1.infrastructure.cluster.x-k8s.io", groupnamed.Hidden, ""},
		{apiServices, "v1alpha9.cluster.x-k8s.io", groupnamed.Hidden, ""},
		{apiServices, "v1beta2.cluster.hypershift.openshift.io", groupnamed.Private, ""},
		{apiServices, "v1alpha9.infrastructure.cluster.hypershift.openshift.io", groupnamed.Private, ""},
		{apiServices, "v1.apps", groupnamed.Unmapped, ""},
		// The legacy core group's APIService.
		{apiServices, "v1.", groupnamed.Unmapped, ""},
		// Another group, whose name ends in a mapped one.
		{apiServices, "v1.example.cluster.x-k8s.io", groupnamed.Unmapped, ""},
	} {
		if target, private := tc.names.Lookup(tc.name); target != tc.target || private != tc.private {
			t.Errorf("%s Lookup(%q) = %v %q, want %v %q", tc.names.GroupResource(), tc.name, target, private, tc.target, tc.private)
		}
	}
}

// fake is a resource over the CRD types whose Rename marks what it renamed.
var fake = groupnamed.New(groupnamed.Resource{
	GroupResource: crd.Resource, Version: "v1", Kind: "CustomResourceDefinition", Scheme: crdScheme(),
	Objects: "fakes", ServedFrom: func(private string) string { return "the private " + private },
}, map[string]string{"machines.cluster.x-k8s.io": "machines.cluster.hypershift.openshift.io"},
	func(obj []byte, private, upstream string) ([]byte, error) {
		return groupnamed.Apply(obj, groupnamed.Edits{
			"metadata": groupnamed.Edits{"name": groupnamed.SetString(private, upstream)},
			"renamed":  func(json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`true`), nil },
		})
	})

func crdScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

func TestUpstream(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"a private object with a route is renamed",
			`{"kind":"CustomResourceDefinition","metadata":{"name":"machines.cluster.hypershift.openshift.io"},"renamed":false}`,
			`{"kind":"CustomResourceDefinition","metadata":{"name":"machines.cluster.x-k8s.io"},"renamed":true}`},
		{"a list item without a kind", `{"metadata":{"name":"machines.cluster.hypershift.openshift.io"},"renamed":false}`,
			`{"metadata":{"name":"machines.cluster.x-k8s.io"},"renamed":true}`},
		{"the platform's own object is hidden", `{"kind":"CustomResourceDefinition","metadata":{"name":"machines.cluster.x-k8s.io"}}`, ""},
		{"a private object without a route is hidden", `{"metadata":{"name":"widgets.cluster.hypershift.openshift.io"}}`, ""},
		{"another group's object is kept as it is", `{"metadata":{"name":"widgets.example.com"} ,"renamed":false}`, `{"metadata":{"name":"widgets.example.com"} ,"renamed":false}`},
		{"Name is not name", `{"metadata":{"Name":"machines.cluster.hypershift.openshift.io","name":"widgets.example.com"}}`,
			`{"metadata":{"Name":"machines.cluster.hypershift.openshift.io","name":"widgets.example.com"}}`},
		{"the last of repeated names wins", `{"metadata":{"name":"widgets.example.com","name":"gadgets.cluster.x-k8s.io"}}`, ""},
		{"a Status",
			`{"kind":"Status","apiVersion":"v1","message":"customresourcedefinitions.apiextensions.k8s.io \"machines.cluster.hypershift.openshift.io\" not found","code":404}`,
			`{"kind":"Status","apiVersion":"v1","message":"customresourcedefinitions.apiextensions.k8s.io \"machines.cluster.x-k8s.io\" not found","code":404}`},
		{"a Status naming a private object by its name",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"customresourcedefinitions.apiextensions.k8s.io \"machines.cluster.hypershift.openshift.io\" is forbidden: User \"alice\" cannot get",` +
				`"reason":"Forbidden","details":{"name":"machines.cluster.hypershift.openshift.io","group":"apiextensions.k8s.io","kind":"customresourcedefinitions"},"code":403}`,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"customresourcedefinitions.apiextensions.k8s.io \"machines.cluster.x-k8s.io\" is forbidden: User \"alice\" cannot get",` +
				`"reason":"Forbidden","details":{"name":"machines.cluster.x-k8s.io","group":"apiextensions.k8s.io","kind":"customresourcedefinitions"},"code":403}`},
		{"a Status naming another object is kept as it is, spacing too",
			"{\"kind\":\"Status\", \"details\": {\"name\":\"widgets.cluster.hypershift.openshift.io\"}}", "{\"kind\":\"Status\", \"details\": {\"name\":\"widgets.cluster.hypershift.openshift.io\"}}"},
		{"a Table",
			`{"kind":"Table","apiVersion":"meta.k8s.io/v1","columnDefinitions":[{"name":"Name","format":"name"},{"name":"Created At","format":"date"}],"rows":[` +
				`{"cells":["machines.cluster.hypershift.openshift.io","2026"],"object":{"kind":"PartialObjectMetadata","metadata":{"name":"machines.cluster.hypershift.openshift.io"},"renamed":false}},` +
				`{"cells":["machines.cluster.x-k8s.io","2025"],"object":{"kind":"PartialObjectMetadata","metadata":{"name":"machines.cluster.x-k8s.io"}}},` +
				`{"cells":["pods.example.com","2025"]}]}`,
			`{"kind":"Table","apiVersion":"meta.k8s.io/v1","columnDefinitions":[{"name":"Name","format":"name"},{"name":"Created At","format":"date"}],"rows":[` +
				`{"cells":["machines.cluster.x-k8s.io","2026"],"object":{"kind":"PartialObjectMetadata","metadata":{"name":"machines.cluster.x-k8s.io"},"renamed":true}},` +
				`{"cells":["pods.example.com","2025"]}]}`},
		{"a Table without objects, its name column second",
			`{"kind":"Table","columnDefinitions":[{"name":"Age","format":"date"},{"name":"Name","format":"name"}],"rows":[` +
				`{"cells":["1d","machines.cluster.hypershift.openshift.io"]},{"cells":["1d","gadgets.cluster.x-k8s.io"]},{"cells":["1d","pods.example.com"],"object":null}]}`,
			`{"kind":"Table","columnDefinitions":[{"name":"Age","format":"date"},{"name":"Name","format":"name"}],"rows":[` +
				`{"cells":["1d","machines.cluster.x-k8s.io"]},{"cells":["1d","pods.example.com"],"object":null}]}`},
		{"a Table without rows", `{"kind":"Table","columnDefinitions":[],"rows":null}`, `{"kind":"Table","columnDefinitions":[],"rows":null}`},
	} {
		if out, err := fake.Upstream([]byte(tc.in)); err != nil || string(out) != tc.want {
			t.Errorf("%s: %v\n got %s\nwant %s", tc.name, err, out, tc.want)
		}
	}
	for _, in := range []string{`{"metadata":`, `{"kind":"Table","rows":[{"cells":1}]}`, `{"kind":"Table","columnDefinitions":{}}`} {
		if _, err := fake.Upstream([]byte(in)); err == nil {
			t.Errorf("Upstream(%s): want an error", in)
		}
	}
}

func TestFieldSelector(t *testing.T) {
	for _, tc := range []struct {
		names          *groupnamed.Names
		name, in, want string
	}{
		{crds, "upstream name of a private CRD", "metadata.name=machines.cluster.x-k8s.io", "metadata.name=machines.cluster.hypershift.openshift.io"},
		{crds, "double equals", "metadata.name==machines.cluster.x-k8s.io", "metadata.name=machines.cluster.hypershift.openshift.io"},
		{crds, "another group's CRD is kept as it is", "metadata.name==widgets.example.com", "metadata.name==widgets.example.com"},
		{crds, "not equal, with another term", "metadata.name!=machines.cluster.x-k8s.io,a=b", "a=b,metadata.name!=machines.cluster.hypershift.openshift.io"},
		{crds, "a private name selects nothing", "metadata.name=machines.cluster.hypershift.openshift.io", "metadata.name="},
		{crds, "a private group's name without a route selects nothing", "metadata.name=widgets.cluster.hypershift.openshift.io", "metadata.name="},
		{crds, "a hidden name selects nothing", "metadata.name=widgets.cluster.x-k8s.io", "metadata.name="},
		{crds, "not equal to a private name is always true", "metadata.name!=machines.cluster.hypershift.openshift.io", ""},
		{crds, "not equal to a hidden name is always true", "a=b,metadata.name!=widgets.cluster.x-k8s.io", "a=b"},
		{crds, "several name terms", "metadata.name=machines.cluster.x-k8s.io,metadata.name!=machines.cluster.hypershift.openshift.io,metadata.name!=awsmachines.infrastructure.cluster.x-k8s.io",
			"metadata.name!=awsmachines.infrastructure.cluster.hypershift.openshift.io,metadata.name=machines.cluster.hypershift.openshift.io"},
		{crds, "escaped values stay escaped", `a=b\,c\=d\\,metadata.name=machines.cluster.hypershift.openshift.io`, `a=b\,c\=d\\,metadata.name=`},
		{crds, "an escaped comma is part of the value", `metadata.name=machines.cluster.x-k8s.io\,x`, `metadata.name=machines.cluster.x-k8s.io\,x`},
		{crds, "other fields are kept", "metadata.namespace=machines.cluster.hypershift.openshift.io", "metadata.namespace=machines.cluster.hypershift.openshift.io"},
		{crds, "empty", "", ""},
		{apiServices, "upstream name of a private APIService", "metadata.name=v1beta2.cluster.x-k8s.io", "metadata.name=v1beta2.cluster.hypershift.openshift.io"},
		{apiServices, "the platform's APIService selects nothing", "metadata.name=v1beta1.infrastructure.cluster.x-k8s.io", "metadata.name="},
		{apiServices, "a private name selects nothing", "metadata.name==v1beta2.cluster.hypershift.openshift.io", "metadata.name="},
		{apiServices, "not equal to a private name is always true", "metadata.name!=v1beta2.cluster.hypershift.openshift.io", ""},
		{apiServices, "another group's APIService", "metadata.name=v1.apps", "metadata.name=v1.apps"},
	} {
		if got, err := tc.names.FieldSelector(tc.in); err != nil || got != tc.want {
			t.Errorf("%s: FieldSelector(%q) = %q, %v; want %q", tc.name, tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"a=b=c", `metadata.name=a\x`} {
		if _, err := crds.FieldSelector(in); !apierrors.IsBadRequest(err) {
			t.Errorf("malformed selector %q: %v, want BadRequest", in, err)
		}
	}
	for _, tc := range []struct{ selector, name, want string }{
		{"", "widgets.example.com", "metadata.name=widgets.example.com"},
		{"a=b", "", "a=b,metadata.name="},
		{"metadata.name!=x", `a,b`, `metadata.name!=x,metadata.name=a\,b`},
	} {
		if got, err := groupnamed.WithName(tc.selector, tc.name); err != nil || got != tc.want {
			t.Errorf("WithName(%q, %q) = %q, %v; want %q", tc.selector, tc.name, got, err, tc.want)
		}
	}
	if _, err := groupnamed.WithName("a=b=c", "x"); !apierrors.IsBadRequest(err) {
		t.Errorf("WithName of a malformed selector: %v, want BadRequest", err)
	}
}

func TestAbsent(t *testing.T) {
	if err := crds.Absent("get", "machines.cluster.hypershift.openshift.io", ""); !apierrors.IsNotFound(err) ||
		err.Error() != `customresourcedefinitions.apiextensions.k8s.io "machines.cluster.hypershift.openshift.io" not found` {
		t.Errorf("get: %v", err)
	}
	if err := apiServices.Absent("get", "v1beta2.cluster.hypershift.openshift.io", ""); !apierrors.IsNotFound(err) ||
		err.Error() != `apiservices.apiregistration.k8s.io "v1beta2.cluster.hypershift.openshift.io" not found` {
		t.Errorf("get of an APIService: %v", err)
	}
	if err := crds.Absent("patch", "widgets.cluster.x-k8s.io", body.MergePatch); !apierrors.IsNotFound(err) {
		t.Errorf("merge patch: %v, want NotFound", err)
	}
	for _, names := range []*groupnamed.Names{crds, apiServices} {
		if err := names.Absent("patch", "v1alpha9.cluster.x-k8s.io", "application/apply-patch+yaml; charset=utf-8"); !apierrors.IsForbidden(err) {
			t.Errorf("%s apply patch: %v, want Forbidden", names.GroupResource(), err)
		}
	}
}

func TestForbidden(t *testing.T) {
	for _, tc := range []struct {
		names                *groupnamed.Names
		verb, name, group    string
		want                 string
		wantResource, reason string
	}{
		{apiServices, "patch", "v1beta2.cluster.x-k8s.io", "cluster.x-k8s.io",
			`apiservices.apiregistration.k8s.io "v1beta2.cluster.x-k8s.io" is forbidden: the proxy serves the APIServices of cluster.x-k8s.io from ` +
				`the APIServices kube-apiserver's autoregistration controller keeps (automanaged) for the versions of HyperShift's private CRDs ` +
				`(group cluster.hypershift.openshift.io): they cannot be patched through the proxy`, "apiservices", ""},
		{apiServices, "create", "v1alpha9.cluster.hypershift.openshift.io", "cluster.hypershift.openshift.io",
			`apiservices.apiregistration.k8s.io "v1alpha9.cluster.hypershift.openshift.io" is forbidden: APIServices of group ` +
				`cluster.hypershift.openshift.io cannot be created through the proxy`, "apiservices", ""},
		{crds, "deletecollection", "machines.cluster.x-k8s.io", "cluster.x-k8s.io",
			`customresourcedefinitions.apiextensions.k8s.io "machines.cluster.x-k8s.io" is forbidden: the proxy serves the CustomResourceDefinitions ` +
				`of cluster.x-k8s.io from HyperShift's private CRDs (group cluster.hypershift.openshift.io), which are installed from the ` +
				`generator's output: they cannot be deleted through the proxy`, "customresourcedefinitions", ""},
		{crds, "update", "widgets.example.com", "infrastructure.cluster.x-k8s.io", "they cannot be updated through the proxy", "customresourcedefinitions", ""},
	} {
		err := tc.names.Forbidden(tc.verb, tc.name, tc.group)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Forbidden(%s, %s, %s) = %v\nwant %s", tc.verb, tc.name, tc.group, err, tc.want)
		}
		if d := err.(apierrors.APIStatus).Status().Details; d == nil || d.Kind != tc.wantResource || d.Name != tc.name {
			t.Errorf("Forbidden(%s, %s, %s): details %+v", tc.verb, tc.name, tc.group, d)
		}
	}
}

// encode encodes obj as client-go sends it in protobuf, with the types of scheme.
func encode(t *testing.T, scheme *runtime.Scheme, obj runtime.Object) []byte {
	t.Helper()
	info, _ := runtime.SerializerInfoForMediaType(serializer.NewCodecFactory(scheme).SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	var buf bytes.Buffer
	if err := info.Serializer.Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func protobufCRD(t *testing.T, name, group string) string {
	return string(encode(t, crdScheme(), &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       apiextensionsv1.CustomResourceDefinitionSpec{Group: group},
	}))
}

func protobufAPIService(t *testing.T, name, group string) string {
	s := runtime.NewScheme()
	if err := apiregistrationv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return string(encode(t, s, &apiregistrationv1.APIService{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       apiregistrationv1.APIServiceSpec{Group: group, Version: "v1alpha9", GroupPriorityMinimum: 1000, VersionPriority: 100},
	}))
}

func cbor(t *testing.T, apiVersion, kind, name, group string) string {
	t.Helper()
	data, err := cbordirect.Marshal(map[string]any{"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name}, "spec": map[string]any{"group": group}})
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestCheckCreate(t *testing.T) {
	const (
		forbidden   = http.StatusForbidden
		badRequest  = http.StatusBadRequest
		unsupported = http.StatusUnsupportedMediaType
	)
	jsonCRD := func(name, group string) string {
		return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"` + name + `"},"spec":{"group":"` + group + `"}}`
	}
	jsonAPIService := func(name, group string) string {
		return `{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"` + name + `"},"spec":{"group":"` + group +
			`","version":"v1alpha9","service":{"namespace":"default","name":"any"},"groupPriorityMinimum":1000,"versionPriority":100}}`
	}
	for _, tc := range []struct {
		names                   *groupnamed.Names
		name, contentType, body string
		code                    int // 0: accepted
	}{
		{crds, "another group", body.JSON, jsonCRD("widgets.example.com", "example.com"), 0},
		{crds, "no Content-Type is JSON", "", jsonCRD("widgets.example.com", "example.com"), 0},
		{crds, "no Content-Type is JSON, refused", "", jsonCRD("widgets.cluster.x-k8s.io", "cluster.x-k8s.io"), forbidden},
		{crds, "a routed upstream name", body.JSON, jsonCRD("machines.cluster.x-k8s.io", "cluster.x-k8s.io"), forbidden},
		{crds, "an upstream group without a route", body.JSON, jsonCRD("widgets.cluster.x-k8s.io", "cluster.x-k8s.io"), forbidden},
		{crds, "a private name", body.JSON, jsonCRD("machines.cluster.hypershift.openshift.io", "cluster.hypershift.openshift.io"), forbidden},
		{crds, "a private group", body.JSON, jsonCRD("widgets.infrastructure.cluster.hypershift.openshift.io", "infrastructure.cluster.hypershift.openshift.io"), forbidden},
		{crds, "a mapped group under another name", body.JSON, jsonCRD("widgets.example.com", "cluster.x-k8s.io"), forbidden},
		{crds, "a private group under another name", body.JSON, jsonCRD("widgets.example.com", "cluster.hypershift.openshift.io"), forbidden},
		{crds, "a mapped name with another group", body.JSON, jsonCRD("widgets.cluster.x-k8s.io", "example.com"), forbidden},
		// The apiserver's decoder matches member names exactly: "Metadata" is not metadata.
		{crds, "a differently cased member is not the name", body.JSON,
			`{"metadata":{"name":"widgets.cluster.x-k8s.io"},"Metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com"}}`, forbidden},
		{crds, "a differently cased member is not the group", body.JSON,
			`{"metadata":{"name":"widgets.example.com"},"spec":{"group":"cluster.x-k8s.io","Group":"example.com"}}`, forbidden},
		// A repeated member is decoded over the earlier one: the last name wins, objects merge.
		{crds, "the last of repeated names wins", body.JSON,
			`{"metadata":{"name":"widgets.example.com","name":"widgets.cluster.x-k8s.io"},"spec":{"group":"example.com"}}`, forbidden},
		{crds, "repeated objects merge", body.JSON,
			`{"spec":{"group":"cluster.x-k8s.io"},"metadata":{"name":"widgets.example.com"},"spec":{"scope":"Cluster"}}`, forbidden},
		{crds, "the last of repeated groups wins, accepted", body.JSON,
			`{"metadata":{"name":"widgets.example.com"},"spec":{"group":"cluster.x-k8s.io"},"spec":{"group":"example.com"}}`, 0},
		{crds, "an escaped group", body.JSON,
			`{"metadata":{"name":"widgets.example.com"},"spec":{"group":"cluster.x\u002dk8s.io"}}`, forbidden},
		{crds, "YAML", body.YAML, "metadata:\n  name: widgets.example.com\nspec:\n  group: cluster.x-k8s.io\n", forbidden},
		{crds, "YAML of another group", "application/yaml; charset=utf-8", "metadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n", 0},
		{crds, "protobuf", body.Protobuf, protobufCRD(t, "widgets.cluster.x-k8s.io", "cluster.x-k8s.io"), forbidden},
		{crds, "protobuf of a private name", body.Protobuf, protobufCRD(t, "machines.cluster.hypershift.openshift.io", "example.com"), forbidden},
		{crds, "protobuf of another group", body.Protobuf, protobufCRD(t, "widgets.example.com", "example.com"), 0},
		{crds, "CBOR", body.CBOR, cbor(t, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets.example.com", "infrastructure.cluster.x-k8s.io"), forbidden},
		{crds, "CBOR of another group", body.CBOR, cbor(t, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets.example.com", "example.com"), 0},
		{crds, "malformed JSON", body.JSON, `{"metadata":`, badRequest},
		{crds, "a name that is not a string", body.JSON, `{"metadata":{"name":1}}`, badRequest},
		{crds, "malformed protobuf", body.Protobuf, "k8s\x00garbage", badRequest},
		{crds, "malformed CBOR", body.CBOR, "\xff", badRequest},
		{crds, "a kind the apiserver does not take", body.Protobuf, "k8s\x00\x0a\x0c\x0a\x02v1\x12\x06Secret", badRequest},
		{crds, "an APIService in protobuf", body.Protobuf, protobufAPIService(t, "v1.example.com", "example.com"), badRequest},
		{crds, "another media type", "text/plain", jsonCRD("widgets.cluster.x-k8s.io", "cluster.x-k8s.io"), unsupported},
		{crds, "a Content-Type that does not parse", "application/json;;", jsonCRD("widgets.example.com", "example.com"), unsupported},

		{apiServices, "an APIService of another group", body.JSON, jsonAPIService("v1alpha9.example.com", "example.com"), 0},
		{apiServices, "an APIService of a routed upstream group version", body.JSON, jsonAPIService("v1beta2.cluster.x-k8s.io", "cluster.x-k8s.io"), forbidden},
		{apiServices, "an APIService of an upstream group", body.JSON, jsonAPIService("v1alpha9.cluster.x-k8s.io", "cluster.x-k8s.io"), forbidden},
		{apiServices, "an APIService of a private group", body.JSON, jsonAPIService("v1alpha9.cluster.hypershift.openshift.io", "cluster.hypershift.openshift.io"), forbidden},
		{apiServices, "an APIService naming a mapped group under another name", body.JSON, jsonAPIService("v1alpha9.example.com", "infrastructure.cluster.x-k8s.io"), forbidden},
		{apiServices, "an APIService of a mapped name with another group", body.JSON, jsonAPIService("v1alpha9.cluster.x-k8s.io", "example.com"), forbidden},
		{apiServices, "an APIService of a group ending in a mapped one", body.JSON, jsonAPIService("v1alpha9.example.cluster.x-k8s.io", "example.cluster.x-k8s.io"), 0},
		{apiServices, "an APIService in YAML", body.YAML, "metadata:\n  name: v1alpha9.example.com\nspec:\n  group: cluster.hypershift.openshift.io\n", forbidden},
		{apiServices, "an APIService in protobuf", body.Protobuf, protobufAPIService(t, "v1alpha9.cluster.x-k8s.io", "cluster.x-k8s.io"), forbidden},
		{apiServices, "an APIService in protobuf, a mapped group under another name", body.Protobuf, protobufAPIService(t, "v1alpha9.example.com", "cluster.x-k8s.io"), forbidden},
		{apiServices, "an APIService of another group in protobuf", body.Protobuf, protobufAPIService(t, "v1alpha9.example.com", "example.com"), 0},
		{apiServices, "an APIService in CBOR", body.CBOR, cbor(t, "apiregistration.k8s.io/v1", "APIService", "v1alpha9.example.com", "cluster.x-k8s.io"), forbidden},
		{apiServices, "a CRD in protobuf", body.Protobuf, protobufCRD(t, "widgets.example.com", "example.com"), badRequest},
		{apiServices, "Metadata is not metadata", body.JSON,
			`{"metadata":{"name":"v1alpha9.cluster.x-k8s.io"},"Metadata":{"name":"v1alpha9.example.com"},"spec":{"group":"example.com"}}`, forbidden},
	} {
		t.Run(tc.names.GroupResource().Resource+"/"+tc.name, func(t *testing.T) {
			err := tc.names.CheckCreate(tc.contentType, []byte(tc.body))
			if tc.code == 0 {
				if err != nil {
					t.Errorf("CheckCreate: %v, want it accepted", err)
				}
				return
			}
			if code := apierrors.ReasonForError(err); err == nil || errCode(err) != tc.code {
				t.Errorf("CheckCreate: %v (%s), want %d", err, code, tc.code)
			}
		})
	}
}

func errCode(err error) int {
	if s, ok := err.(apierrors.APIStatus); ok {
		return int(s.Status().Code)
	}
	return 0
}

func TestDeleteCollection(t *testing.T) {
	for _, tc := range []struct {
		names      *groupnamed.Names
		name, list string
		want       []string
		forbidden  string
	}{
		{crds, "hidden CRDs are left out",
			`{"kind":"CustomResourceDefinitionList","items":[{"metadata":{"name":"widgets.example.com"}},{"metadata":{"name":"machines.cluster.x-k8s.io"}},` +
				`{"metadata":{"name":"gadgets.infrastructure.cluster.x-k8s.io"}},{"metadata":{"name":"widgets.cluster.hypershift.openshift.io"}},{"metadata":{"name":"pods.example.org"}}]}`,
			[]string{"widgets.example.com", "pods.example.org"}, ""},
		{crds, "a private CRD is refused",
			`{"kind":"CustomResourceDefinitionList","items":[{"metadata":{"name":"widgets.example.com"}},{"metadata":{"name":"awsmachines.infrastructure.cluster.hypershift.openshift.io"}}]}`,
			nil, "awsmachines.infrastructure.cluster.x-k8s.io"},
		{crds, "a metadata list", `{"kind":"PartialObjectMetadataList","items":[{"metadata":{"name":"widgets.example.com"}}]}`, []string{"widgets.example.com"}, ""},
		{crds, "an empty list", `{"kind":"CustomResourceDefinitionList","items":[]}`, nil, ""},
		{crds, "a Table with objects",
			`{"kind":"Table","columnDefinitions":[{"name":"Name","format":"name"}],"rows":[{"cells":["x"],"object":{"metadata":{"name":"widgets.example.com"}}},{"cells":["machines.cluster.x-k8s.io"],"object":{"metadata":{"name":"machines.cluster.x-k8s.io"}}}]}`,
			[]string{"widgets.example.com"}, ""},
		{crds, "a Table without objects",
			`{"kind":"Table","columnDefinitions":[{"name":"Created","format":"date"},{"name":"Name","format":"name"}],"rows":[{"cells":["2026","machines.cluster.hypershift.openshift.io"]}]}`,
			nil, "machines.cluster.x-k8s.io"},
		{crds, "Items is not items", `{"kind":"CustomResourceDefinitionList","Items":[{"metadata":{"name":"widgets.example.com"}}],"items":[]}`, nil, ""},
		{apiServices, "the platform's APIServices and private ones without a route are left out",
			`{"kind":"APIServiceList","items":[{"metadata":{"name":"v1.example.com"}},{"metadata":{"name":"v1beta1.cluster.x-k8s.io"}},` +
				`{"metadata":{"name":"v1alpha9.cluster.hypershift.openshift.io"}},{"metadata":{"name":"v1."}}]}`,
			[]string{"v1.example.com", "v1."}, ""},
		{apiServices, "a private APIService is refused",
			`{"kind":"APIServiceList","items":[{"metadata":{"name":"v1.example.com"}},{"metadata":{"name":"v1beta2.cluster.hypershift.openshift.io"}}]}`,
			nil, "v1beta2.cluster.x-k8s.io"},
	} {
		t.Run(tc.names.GroupResource().Resource+"/"+tc.name, func(t *testing.T) {
			got, err := tc.names.DeleteCollection([]byte(tc.list))
			if tc.forbidden != "" {
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `"`+tc.forbidden+`" is forbidden`) {
					t.Errorf("DeleteCollection = %v, %v; want Forbidden naming %s", got, err, tc.forbidden)
				}
				return
			}
			if err != nil || strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("DeleteCollection = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	for _, list := range []string{`{"items":[{}]}`, `{"items":`, `{"kind":"Table","columnDefinitions":[{"format":"name"}],"rows":[{"cells":[1]}]}`} {
		if _, err := crds.DeleteCollection([]byte(list)); err == nil {
			t.Errorf("DeleteCollection(%s): want an error", list)
		}
	}
}
