package server_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/backendtesting"
)

const protobufType = "application/vnd.kubernetes.protobuf"

// pbEncode encodes obj as kube-apiserver does in protobuf.
func pbEncode(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	gvks, _, err := clientscheme.Scheme.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(clientscheme.Scheme, clientscheme.Scheme).Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func pbFrame(t *testing.T, eventType string, obj runtime.Object) []byte {
	t.Helper()
	e := metav1.WatchEvent{Type: eventType, Object: runtime.RawExtension{Raw: pbEncode(t, obj)}}
	data, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(data))), data...)
}

func ownedSecret(apiVersion string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kubeconfig", Namespace: "ns", ResourceVersion: "5",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: apiVersion, Kind: "Cluster", Name: "c", UID: "u"}}},
		Data: map[string][]byte{"value": []byte("x")}}
}

// TestProtobufAnswers: a client asking for protobuf of a built-in kind gets protobuf, translated where it
// names a private group (an object, a list, a watch, an error's Status) and the backend's bytes where it
// does not.
func TestProtobufAnswers(t *testing.T) {
	const (
		private  = "cluster.hypershift.openshift.io/v1beta2"
		upstream = "cluster.x-k8s.io/v1beta2"
	)
	list := func(v string) *corev1.SecretList {
		return &corev1.SecretList{ListMeta: metav1.ListMeta{ResourceVersion: "9"}, Items: []corev1.Secret{*ownedSecret("v1"), *ownedSecret(v)}}
	}
	notFound := func(g string) *metav1.Status {
		s := apierrors.NewNotFound(schema.GroupResource{Group: g, Resource: "machines"}, "m").ErrStatus
		return &s
	}
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") != protobufType+","+"application/json" {
			t.Errorf("the backend got Accept %q", r.Header.Get("Accept"))
		}
		w.Header().Set("Content-Type", protobufType)
		switch {
		case r.URL.Query().Get("watch") == "true":
			w.Header().Set("Content-Type", protobufType+";stream=watch")
			w.Write(pbFrame(t, "ADDED", ownedSecret(private)))
			w.Write(pbFrame(t, "MODIFIED", ownedSecret("v1")))
		case r.URL.Path == "/api/v1/namespaces/ns/secrets":
			w.Write(pbEncode(t, list(private)))
		case r.URL.Path == "/api/v1/namespaces/ns/secrets/plain":
			w.Write(pbEncode(t, ownedSecret("v1")))
		case r.URL.Path == "/api/v1/namespaces/ns/secrets/missing":
			w.WriteHeader(http.StatusNotFound)
			w.Write(pbEncode(t, notFound("cluster.hypershift.openshift.io")))
		default:
			w.Write(pbEncode(t, ownedSecret(private)))
		}
	})
	p := newProxy(t, b.URL)
	accept := http.Header{"Accept": {protobufType + ", application/json"}}
	var watch []byte
	watch = append(watch, pbFrame(t, "ADDED", ownedSecret(upstream))...)
	watch = append(watch, pbFrame(t, "MODIFIED", ownedSecret("v1"))...)
	for _, tc := range []struct {
		path string
		code int
		want []byte
	}{
		{"/api/v1/namespaces/ns/secrets/kubeconfig", http.StatusOK, pbEncode(t, ownedSecret(upstream))},
		{"/api/v1/namespaces/ns/secrets/plain", http.StatusOK, pbEncode(t, ownedSecret("v1"))},
		{"/api/v1/namespaces/ns/secrets", http.StatusOK, pbEncode(t, list(upstream))},
		{"/api/v1/namespaces/ns/secrets/missing", http.StatusNotFound, pbEncode(t, notFound("cluster.x-k8s.io"))},
		{"/api/v1/namespaces/ns/secrets?watch=true", http.StatusOK, watch},
	} {
		resp, data := backendtesting.Do(t, http.MethodGet, p.URL+tc.path, "", accept)
		if resp.StatusCode != tc.code || !bytes.HasPrefix([]byte(resp.Header.Get("Content-Type")), []byte(protobufType)) {
			t.Errorf("GET %s: %d %s", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if !bytes.Equal(data, tc.want) {
			t.Errorf("GET %s:\n got %q\nwant %q", tc.path, data, tc.want)
		}
		if cl := resp.Header.Get("Content-Length"); cl != "" && cl != fmt.Sprint(len(data)) {
			t.Errorf("GET %s: Content-Length %s for %d bytes", tc.path, cl, len(data))
		}
	}
}

// TestProtobufUnroutedStatus: what no route serves in a mapped group gets the backend's own error, whose
// Status the proxy translates in protobuf too.
func TestProtobufUnroutedStatus(t *testing.T) {
	notFound := func(g string) *metav1.Status {
		s := apierrors.NewNotFound(schema.GroupResource{Group: g, Resource: "widgets"}, "w").ErrStatus
		return &s
	}
	b := backendtesting.New(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", protobufType)
		w.WriteHeader(http.StatusNotFound)
		w.Write(pbEncode(t, notFound("cluster.hypershift.openshift.io")))
	})
	p := newProxy(t, b.URL)
	resp, data := backendtesting.Do(t, http.MethodGet, p.URL+"/apis/cluster.x-k8s.io/v1beta2/namespaces/ns/widgets/w", "", http.Header{"Accept": {protobufType}})
	if want := pbEncode(t, notFound("cluster.x-k8s.io")); resp.StatusCode != http.StatusNotFound || !bytes.Equal(data, want) {
		t.Errorf("%d %q, want %q", resp.StatusCode, data, want)
	}
}
