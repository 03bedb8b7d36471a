package body

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/openshift/hypershift-capi-proxy/proxy/groupnames"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/routestesting"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// encodeProtobuf encodes obj as kube-apiserver does (its protobuf serializer, apiVersion and kind in the
// envelope).
func encodeProtobuf(t testing.TB, obj runtime.Object) []byte {
	t.Helper()
	gvks, _, err := protobufScheme.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(protobufScheme, protobufScheme).Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func ownedConfigMap(name, apiVersion string) *corev1.ConfigMap {
	group, _, _ := strings.Cut(apiVersion, "/")
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"cluster.x-k8s.io/cluster-name": "c"},
			Annotations:     map[string]string{"cluster.x-k8s.io/cloned-from-groupkind": "MachineTemplate." + group},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: apiVersion, Kind: "Machine", Name: "m", UID: "u"}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{}}`)}}},
		Data:       map[string]string{"z": "1", "a": "2"},
		BinaryData: map[string][]byte{"b": {0, 1, 2}},
	}
}

// TestProtobufUpstream: protobuf answers are translated at their group paths into the bytes
// kube-apiserver would have sent with the upstream values, and passed through untouched when they name no
// private group.
func TestProtobufUpstream(t *testing.T) {
	tr := New(routestesting.Table())
	private := routestesting.PrivateCluster + "/v1beta2"
	upstream := routestesting.Cluster + "/v1beta2"
	configMaps := tr.ProtobufUpstreamOf(schema.GroupResource{Resource: "configmaps"})

	t.Run("object", func(t *testing.T) {
		in := encodeProtobuf(t, ownedConfigMap("a", private))
		got, err := configMaps(in)
		if err != nil {
			t.Fatal(err)
		}
		if want := encodeProtobuf(t, ownedConfigMap("a", upstream)); !bytes.Equal(got, want) {
			t.Errorf("got\n%q\nwant\n%q", got, want)
		}
	})
	t.Run("untouched", func(t *testing.T) {
		in := encodeProtobuf(t, ownedConfigMap("a", "apps/v1"))
		got, err := configMaps(in)
		if err != nil {
			t.Fatal(err)
		}
		if &got[0] != &in[0] {
			t.Error("an object naming no private group was copied")
		}
	})
	t.Run("list item by item", func(t *testing.T) {
		list := func(v string) *corev1.ConfigMapList {
			return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "7", Continue: "x"},
				Items: []corev1.ConfigMap{*ownedConfigMap("a", "apps/v1"), *ownedConfigMap("b", v), *ownedConfigMap("c", "v1")}}
		}
		got, err := configMaps(encodeProtobuf(t, list(private)))
		if err != nil {
			t.Fatal(err)
		}
		if want := encodeProtobuf(t, list(upstream)); !bytes.Equal(got, want) {
			t.Errorf("got\n%q\nwant\n%q", got, want)
		}
	})
	t.Run("metadata list", func(t *testing.T) {
		list := func(v string) *metav1.PartialObjectMetadataList {
			return &metav1.PartialObjectMetadataList{Items: []metav1.PartialObjectMetadata{{ObjectMeta: ownedConfigMap("a", v).ObjectMeta}}}
		}
		machines := tr.ProtobufUpstreamOf(schema.GroupResource{Group: routestesting.PrivateCluster, Resource: "machines"})
		got, err := machines(encodeProtobuf(t, list(private)))
		if err != nil {
			t.Fatal(err)
		}
		if want := encodeProtobuf(t, list(upstream)); !bytes.Equal(got, want) {
			t.Errorf("got\n%q\nwant\n%q", got, want)
		}
	})
	t.Run("built-in paths", func(t *testing.T) {
		role := func(g string) *rbacv1.Role {
			return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r"},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{g}, Resources: []string{"machines"}, Verbs: []string{"get"}}}}
		}
		got, err := tr.ProtobufUpstreamOf(schema.GroupResource{Group: rbacv1.GroupName, Resource: "roles"})(encodeProtobuf(t, role(routestesting.PrivateCluster)))
		if err != nil {
			t.Fatal(err)
		}
		if want := encodeProtobuf(t, role(routestesting.Cluster)); !bytes.Equal(got, want) {
			t.Errorf("got\n%q\nwant\n%q", got, want)
		}
	})
	t.Run("status", func(t *testing.T) {
		status := func(g string) *metav1.Status {
			s := apierrors.NewNotFound(schema.GroupResource{Group: g, Resource: "machines"}, "m").ErrStatus
			return &s
		}
		got, err := configMaps(encodeProtobuf(t, status(routestesting.PrivateCluster)))
		if err != nil {
			t.Fatal(err)
		}
		if want := encodeProtobuf(t, status(routestesting.Cluster)); !bytes.Equal(got, want) {
			t.Errorf("got\n%q\nwant\n%q", got, want)
		}
		if s := status(routestesting.Cluster); s.Code != http.StatusNotFound {
			t.Fatal(s)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		if _, err := configMaps([]byte("k8s\x00\x0a\x04" + routestesting.PrivateCluster)); err == nil {
			t.Error("malformed protobuf naming a private group was accepted")
		}
	})
}

func TestDecodesProtobuf(t *testing.T) {
	for gvr, want := range map[schema.GroupVersionResource]bool{
		{Version: "v1", Resource: "pods"}:                                                               true,
		{Version: "v1", Resource: "endpoints"}:                                                          true,
		{Group: "apps", Version: "v1", Resource: "deployments"}:                                         true,
		{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}:                              true,
		{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}:                        true,
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}:                   true,
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}: true,
		// A version or resource of a known group that the scheme lacks.
		{Group: "apps", Version: "v9", Resource: "deployments"}:                               false,
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "gadgetpolicies"}:    false,
		{Version: "v1", Resource: "podlists"}:                                                 false,
		{Group: routestesting.PrivateCluster, Version: "v1beta2", Resource: "clusters"}:       false,
		{Group: "metrics.k8s.io", Version: "v1beta1", Resource: "pods"}:                       false,
		{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}: false,
	} {
		if got := DecodesProtobuf(gvr); got != want {
			t.Errorf("DecodesProtobuf(%v) = %v, want %v", gvr, got, want)
		}
	}
}

// FuzzProtobufUpstream: any bytes the backend sends as protobuf are translated or refused cleanly, never
// with a panic; what names no private group is returned as it is, and the translation of an object that
// decodes decodes.
func FuzzProtobufUpstream(f *testing.F) {
	private := routestesting.PrivateCluster + "/v1beta2"
	f.Add(encodeProtobuf(f, ownedConfigMap("a", private)))
	f.Add(encodeProtobuf(f, &corev1.ConfigMapList{Items: []corev1.ConfigMap{*ownedConfigMap("a", private), *ownedConfigMap("b", "v1")}}))
	f.Add(encodeProtobuf(f, &metav1.PartialObjectMetadataList{Items: []metav1.PartialObjectMetadata{{ObjectMeta: ownedConfigMap("a", private).ObjectMeta}}}))
	f.Add(encodeProtobuf(f, &rbacv1.Role{Rules: []rbacv1.PolicyRule{{APIGroups: []string{routestesting.PrivateCluster}}}}))
	f.Add([]byte("k8s\x00\x0a\x04" + routestesting.PrivateCluster))
	tr := New(routestesting.Table())
	upstream := tr.ProtobufUpstreamOf(schema.GroupResource{Resource: "configmaps"})
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := upstream(data)
		if err != nil {
			return
		}
		if !groupnames.Mentions(translate.ToUpstream, data) && !bytes.Equal(out, data) {
			t.Fatalf("changed what names no private group: %q -> %q", data, out)
		}
		// What is not translated keeps its bytes, malformed or not (a list's items naming no group are not
		// decoded): a translation of what decodes decodes.
		pb := protobuf.NewSerializer(protobufScheme, protobufScheme)
		if _, _, err := pb.Decode(data, nil, nil); err == nil && !bytes.Equal(out, data) {
			if _, _, err := pb.Decode(out, nil, nil); err != nil {
				t.Fatalf("translation %q does not decode: %v", out, err)
			}
		}
	})
}
