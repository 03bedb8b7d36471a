package accessreview

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
)

func TestReviewNamespace(t *testing.T) {
	ssar := `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"namespace":"ns1","verb":"list","group":"cluster.x-k8s.io","resource":"machines"}}}`
	for _, tc := range []struct {
		name, contentType, body, want string
	}{
		{"json", body.JSON, ssar, "ns1"},
		{"json with parameters", "application/json; charset=utf-8", ssar, "ns1"},
		{"yaml", body.YAML, "apiVersion: authorization.k8s.io/v1\nkind: SubjectAccessReview\nspec:\n  user: alice\n  resourceAttributes:\n    namespace: ns2\n", "ns2"},
		{"rules review", body.JSON, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{"namespace":"ns3"}}`, "ns3"},
		{"cluster-wide", body.JSON, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"list"}}}`, ""},
		{"non-resource", body.JSON, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"nonResourceAttributes":{"path":"/healthz","verb":"get"}}}`, ""},
		// Member names are matched exactly, as the apiserver's decoder matches them.
		{"case differs", body.JSON, `{"spec":{"resourceAttributes":{"Namespace":"ns1"}}}`, ""},
		{"last duplicate wins", body.JSON, `{"spec":{"resourceAttributes":{"namespace":"a","namespace":"b"}}}`, "b"},
		{"malformed", body.JSON, `{"spec":`, ""},
		{"protobuf", body.Protobuf, string(mustProtobuf(t, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "ns4"}}})), "ns4"},
		{"cbor", body.CBOR, string(mustCBOR(t, ssar)), "ns1"},
		{"other media type", "text/plain", ssar, ""},
	} {
		if got := ReviewNamespace(tc.contentType, []byte(tc.body)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func mustCBOR(t *testing.T, j string) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(j), &v); err != nil {
		t.Fatal(err)
	}
	out, err := cbordirect.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustProtobuf(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	info, _ := runtime.SerializerInfoForMediaType(clientgoscheme.Codecs.SupportedMediaTypes(), body.Protobuf)
	var buf bytes.Buffer
	enc := clientgoscheme.Codecs.EncoderForVersion(info.Serializer, authorizationv1.SchemeGroupVersion)
	if err := enc.Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRulesReviewServed(t *testing.T) {
	rule := func(groups, resources, names []string) authorizationv1.ResourceRule {
		return authorizationv1.ResourceRule{Verbs: []string{"get"}, APIGroups: groups, Resources: resources, ResourceNames: names}
	}
	in := []authorizationv1.ResourceRule{
		rule([]string{"cluster.hypershift.openshift.io"}, []string{"machines"}, nil),
		rule([]string{"cluster.x-k8s.io"}, []string{"machines"}, nil),
		rule([]string{"cluster.x-k8s.io", "apps"}, []string{"machines", "deployments"}, nil),
		rule([]string{"*"}, []string{"*"}, nil),
		rule([]string{"apiextensions.k8s.io"}, []string{"customresourcedefinitions"}, []string{"machines.cluster.x-k8s.io", "machines.cluster.hypershift.openshift.io", "widgets.example.com"}),
		rule([]string{"apiextensions.k8s.io"}, []string{"customresourcedefinitions"}, []string{"machines.cluster.x-k8s.io"}),
		rule([]string{""}, []string{"configmaps"}, []string{"machines.cluster.x-k8s.io"}),
	}
	for _, tc := range []struct {
		name     string
		upstream bool
		want     []authorizationv1.ResourceRule
	}{
		{"served from the private groups", false, []authorizationv1.ResourceRule{
			in[0],
			rule([]string{"apps"}, []string{"machines", "deployments"}, nil),
			in[3],
			rule([]string{"apiextensions.k8s.io"}, []string{"customresourcedefinitions"}, []string{"machines.cluster.hypershift.openshift.io", "widgets.example.com"}),
			// in[5] granted only the platform's CRD: gone, not widened to every name.
			in[6], // a ConfigMap's name is no CRD's
		}},
		{"served from the upstream groups", true, []authorizationv1.ResourceRule{
			in[1], in[2], in[3],
			rule([]string{"apiextensions.k8s.io"}, []string{"customresourcedefinitions"}, []string{"machines.cluster.x-k8s.io", "widgets.example.com"}),
			in[5], in[6],
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			review := &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "ns"},
				Status: authorizationv1.SubjectRulesReviewStatus{ResourceRules: in}}
			for _, mediaType := range []string{body.JSON, body.Protobuf} {
				info, _ := runtime.SerializerInfoForMediaType(clientgoscheme.Codecs.SupportedMediaTypes(), mediaType)
				var buf bytes.Buffer
				if err := clientgoscheme.Codecs.EncoderForVersion(info.Serializer, authorizationv1.SchemeGroupVersion).Encode(review, &buf); err != nil {
					t.Fatal(err)
				}
				out, err := RulesReviewServed(mediaType, buf.Bytes(), tc.upstream)
				if err != nil {
					t.Fatal(err)
				}
				obj, _, err := clientgoscheme.Codecs.UniversalDeserializer().Decode(out, nil, nil)
				if err != nil {
					t.Fatalf("%s: %v", mediaType, err)
				}
				if diff := cmp.Diff(tc.want, obj.(*authorizationv1.SelfSubjectRulesReview).Status.ResourceRules); diff != "" {
					t.Errorf("%s: (-want +got)\n%s", mediaType, diff)
				}
			}
		})
	}
	// Nothing to drop: the answer as it came, byte for byte.
	keepAll := []byte(`{"kind":"SelfSubjectRulesReview","apiVersion":"authorization.k8s.io/v1","spec":{},"status":{"resourceRules":[{"verbs":["get"],"apiGroups":["apps"],"resources":["deployments"]}],"incomplete":false}}` + "\n")
	if out, err := RulesReviewServed(body.JSON, keepAll, false); err != nil || !bytes.Equal(out, keepAll) {
		t.Errorf("unchanged review: %s %v", out, err)
	}
}
