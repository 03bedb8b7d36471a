package openapi

import (
	"strings"
	"testing"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/backendtesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/routestesting"
)

func TestSpecV2(t *testing.T) {
	rw := New(routestesting.Table())
	in := `{"swagger":"2.0","paths":{
		"/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/{namespace}/machines/{name}":{"get":{"operationId":"readClusterHypershiftOpenshiftIoV1beta2NamespacedMachine",
			"tags":["clusterHypershiftOpenshiftIo_v1beta2"],"responses":{"200":{"schema":{"$ref":"#/definitions/io.openshift.hypershift.cluster.v1beta2.Machine"}}},
			"x-kubernetes-group-version-kind":{"group":"cluster.hypershift.openshift.io","kind":"Machine","version":"v1beta2"}}},
		"/apis/infrastructure.cluster.hypershift.openshift.io/v1beta2/awsmachines":{"get":{"operationId":"listInfrastructureClusterHypershiftOpenshiftIoV1beta2AWSMachineForAllNamespaces","tags":["infrastructureClusterHypershiftOpenshiftIo_v1beta2"]}},
		"/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/{namespace}/widgets":{"get":{}},
		"/apis/cluster.hypershift.openshift.io/v1alpha1/machines":{"get":{}},
		"/apis/cluster.x-k8s.io/v1beta1/machines":{"get":{"responses":{"200":{"schema":{"$ref":"#/definitions/io.x-k8s.cluster.v1beta1.MachineList"}}}}},
		"/api/v1/pods":{"get":{"operationId":"listCoreV1PodForAllNamespaces"}}},
	"definitions":{
		"io.openshift.hypershift.cluster.v1beta2.Machine":{"description":"cluster.x-k8s.io/cluster-name label","properties":{"tags":{"type":"array"},"spec":{"$ref":"#/definitions/io.openshift.hypershift.cluster.v1beta2.MachineSpec"}},
			"x-kubernetes-group-version-kind":[{"group":"cluster.hypershift.openshift.io","kind":"Machine","version":"v1beta2"}]},
		"io.openshift.hypershift.cluster.v1beta2.MachineList":{},
		"io.openshift.hypershift.cluster.v1beta2.MachineSpec":{},
		"io.x-k8s.cluster.v1beta1.Machine":{},
		"io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions":{"x-kubernetes-group-version-kind":[{"group":"","kind":"DeleteOptions","version":"v1"},
			{"group":"cluster.x-k8s.io","kind":"DeleteOptions","version":"v1beta2"},{"group":"cluster.hypershift.openshift.io","kind":"DeleteOptions","version":"v1beta2"}]}}}`
	out, err := rw.Spec([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	// MachineSpec is not a routed kind: a model of a mapped group without a route is dropped.
	backendtesting.EqualJSON(t, out, `{"swagger":"2.0","paths":{
		"/apis/cluster.x-k8s.io/v1beta2/namespaces/{namespace}/machines/{name}":{"get":{"operationId":"readClusterXK8sIoV1beta2NamespacedMachine",
			"tags":["clusterXK8sIo_v1beta2"],"responses":{"200":{"schema":{"$ref":"#/definitions/io.x-k8s.cluster.v1beta2.Machine"}}},
			"x-kubernetes-group-version-kind":{"group":"cluster.x-k8s.io","kind":"Machine","version":"v1beta2"}}},
		"/apis/infrastructure.cluster.x-k8s.io/v1beta2/awsmachines":{"get":{"operationId":"listInfrastructureClusterXK8sIoV1beta2AWSMachineForAllNamespaces","tags":["infrastructureClusterXK8sIo_v1beta2"]}},
		"/api/v1/pods":{"get":{"operationId":"listCoreV1PodForAllNamespaces"}}},
	"definitions":{
		"io.x-k8s.cluster.v1beta2.Machine":{"description":"cluster.x-k8s.io/cluster-name label","properties":{"tags":{"type":"array"},"spec":{"$ref":"#/definitions/io.openshift.hypershift.cluster.v1beta2.MachineSpec"}},
			"x-kubernetes-group-version-kind":[{"group":"cluster.x-k8s.io","kind":"Machine","version":"v1beta2"}]},
		"io.x-k8s.cluster.v1beta2.MachineList":{},
		"io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions":{"x-kubernetes-group-version-kind":[{"group":"","kind":"DeleteOptions","version":"v1"},
			{"group":"cluster.x-k8s.io","kind":"DeleteOptions","version":"v1beta2"}]}}}`)

}

func TestProtobuf(t *testing.T) {
	d := &Document{JSON: []byte(`{"swagger":"2.0","info":{"title":"Kubernetes","version":"v1.34.4"},"paths":{"/apis/cluster.x-k8s.io/v1beta2/machines":{"get":{"responses":{"200":{"description":"OK"}}}}}}`)}
	pb, err := d.Protobuf()
	if err != nil {
		t.Fatal(err)
	}
	var doc openapiv2.Document
	if err := proto.Unmarshal(pb, &doc); err != nil || doc.GetPaths().GetPath()[0].GetName() != "/apis/cluster.x-k8s.io/v1beta2/machines" {
		t.Errorf("protobuf: %v, %v", err, doc.GetPaths())
	}
	if _, err := (&Document{JSON: []byte(`{"swagger":"2.0"}`)}).Protobuf(); err == nil {
		t.Error("an invalid document: want an error")
	}
}

func TestSpecV3(t *testing.T) {
	rw := New(routestesting.Table())
	in := `{"openapi":"3.0.0","paths":{"/apis/cluster.hypershift.openshift.io/v1beta1/machines":{"get":{"responses":{"200":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/io.openshift.hypershift.cluster.v1beta1.MachineList"}}}}}}}},
		"components":{"schemas":{"io.openshift.hypershift.cluster.v1beta1.MachineList":{"x-kubernetes-group-version-kind":[{"group":"cluster.hypershift.openshift.io","kind":"MachineList","version":"v1beta1"}]}}}}`
	out, err := rw.Spec([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	backendtesting.EqualJSON(t, out, `{"openapi":"3.0.0","paths":{"/apis/cluster.x-k8s.io/v1beta1/machines":{"get":{"responses":{"200":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/io.x-k8s.cluster.v1beta1.MachineList"}}}}}}}},
		"components":{"schemas":{"io.x-k8s.cluster.v1beta1.MachineList":{"x-kubernetes-group-version-kind":[{"group":"cluster.x-k8s.io","kind":"MachineList","version":"v1beta1"}]}}}}`)
	for _, bad := range []string{`{"paths":`, `[]`} {
		if _, err := rw.Spec([]byte(bad)); err == nil {
			t.Errorf("Spec(%s): want an error", bad)
		}
	}
}

func TestIndexAndHash(t *testing.T) {
	rw := New(routestesting.Table())
	in := `{"paths":{
		"api/v1":{"serverRelativeURL":"/openapi/v3/api/v1?hash=AAA"},
		"apis/apps/v1":{"serverRelativeURL":"/openapi/v3/apis/apps/v1?hash=BBB"},
		"apis/cluster.hypershift.openshift.io/v1beta2":{"serverRelativeURL":"/openapi/v3/apis/cluster.hypershift.openshift.io/v1beta2?hash=CCC"},
		"apis/cluster.hypershift.openshift.io/v1alpha1":{"serverRelativeURL":"/openapi/v3/apis/cluster.hypershift.openshift.io/v1alpha1?hash=DDD"},
		"apis/cluster.x-k8s.io/v1beta1":{"serverRelativeURL":"/openapi/v3/apis/cluster.x-k8s.io/v1beta1?hash=EEE"}}}`
	out, err := rw.Index([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	hash := rw.Hash("CCC")
	if len(hash) != 128 || strings.ToUpper(hash) != hash || hash == rw.Hash("CCD") {
		t.Errorf("Hash = %q", hash)
	}
	backendtesting.EqualJSON(t, out, `{"paths":{
		"api/v1":{"serverRelativeURL":"/openapi/v3/api/v1?hash=AAA"},
		"apis/apps/v1":{"serverRelativeURL":"/openapi/v3/apis/apps/v1?hash=BBB"},
		"apis/cluster.x-k8s.io/v1beta2":{"serverRelativeURL":"/openapi/v3/apis/cluster.x-k8s.io/v1beta2?hash=`+hash+`"}}}`)
	if other := New(routestesting.Table()); other.Hash("CCC") != hash {
		t.Error("Hash is not stable for the same routes")
	}
}
