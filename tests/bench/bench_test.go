// Package bench measures the translations the proxy does per object (the path-directed rewrite of request
// bodies and of the objects the backend sends, and the typed conversion), beside a bare JSON decode and
// encode of the same bytes into the same Go type, so the conversion's own cost is visible, and the
// conversion webhook on a 1,000-object ConversionReview (objects/s), beside controller-runtime's webhook
// over the upstream types:
//
//	go test -run '^$' -bench . -benchmem ./tests/bench/
package bench

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	kjson "sigs.k8s.io/json"

	privclusterv1 "github.com/openshift/hypershift-capi-proxy/apis/private/core/v1beta2"
	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"

	// Every route with its typed codecs (Object, List), also of the kinds that convert by apiVersion alone.
	_ "github.com/openshift/hypershift-capi-proxy/zz_generated/routes/codecs"
)

func machine(i int) privclusterv1.Machine {
	gv := privclusterv1.GroupVersion.String()
	return privclusterv1.Machine{
		TypeMeta: metav1.TypeMeta{APIVersion: gv, Kind: "Machine"},
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("machine-%d", i), Namespace: "clusters-hc1", UID: "5f1b2c3d-0000-4000-8000-000000000001",
			ResourceVersion: "123456", Generation: 3,
			Labels:          map[string]string{"cluster.x-k8s.io/cluster-name": "hc1", "cluster.x-k8s.io/set-name": "ms-1"},
			Annotations:     map[string]string{"cluster.x-k8s.io/cloned-from-groupkind": "AWSMachineTemplate.infrastructure.cluster.hypershift.openshift.io"},
			Finalizers:      []string{"machine.cluster.x-k8s.io"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: gv, Kind: "MachineSet", Name: "ms-1", UID: "5f1b2c3d-0000-4000-8000-000000000002"}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "capi-machineset", Operation: metav1.ManagedFieldsOperationApply, APIVersion: gv}},
		},
		Spec: privclusterv1.MachineSpec{
			ClusterName:       "hc1",
			Bootstrap:         privclusterv1.Bootstrap{ConfigRef: privclusterv1.ContractVersionedObjectReference{APIGroup: "bootstrap.cluster.hypershift.openshift.io", Kind: "KubeadmConfig", Name: "m"}},
			InfrastructureRef: privclusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.hypershift.openshift.io", Kind: "AWSMachine", Name: "m"},
			Version:           "v1.34.2", ProviderID: "aws:///us-east-1a/i-0123456789abcdef0",
		},
		Status: privclusterv1.MachineStatus{Phase: "Running", Conditions: []metav1.Condition{
			{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()},
			{Type: "InfrastructureReady", Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()},
		}},
	}
}

func route(b *testing.B) *translate.Route {
	r, ok := translate.NewTable(routes.Routes).ByPrivate(schema.GroupVersionResource{Group: "cluster.hypershift.openshift.io", Version: "v1beta2", Resource: "machines"})
	if !ok {
		b.Fatal("no route for machines")
	}
	return r
}

func machineJSON(b *testing.B) []byte {
	data, err := json.Marshal(machine(0))
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func machineListJSON(b *testing.B, n int) []byte {
	list := privclusterv1.MachineList{TypeMeta: metav1.TypeMeta{APIVersion: privclusterv1.GroupVersion.String(), Kind: "MachineList"}}
	for i := 0; i < n; i++ {
		list.Items = append(list.Items, machine(i))
	}
	data, err := json.Marshal(list)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkMachineTranslate: private JSON -> typed private -> converter -> typed upstream -> JSON.
func BenchmarkMachineTranslate(b *testing.B) {
	r, data := route(b), machineJSON(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := r.Object.ToUpstream(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMachineRewrite: what the proxy does to each object the backend sends: the path-directed
// rewrite of the route's group-carrying values, every other byte copied.
func BenchmarkMachineRewrite(b *testing.B) {
	r, data := route(b), machineJSON(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := translate.ToUpstream.Rewrite(r.Paths, data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMachineDecodeEncode: the same bytes decoded into the Go type and encoded again, no conversion.
func BenchmarkMachineDecodeEncode(b *testing.B) {
	data := machineJSON(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var m privclusterv1.Machine
		if _, err := kjson.UnmarshalStrict(data, &m); err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(&m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMachineList1000Translate: a 1,000-item MachineList through the typed list codec.
func BenchmarkMachineList1000Translate(b *testing.B) {
	r, data := route(b), machineListJSON(b, 1000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := r.List.ToUpstream(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMachineList1000DecodeEncode: the same list decoded and encoded, no conversion.
func BenchmarkMachineList1000DecodeEncode(b *testing.B) {
	data := machineListJSON(b, 1000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var l privclusterv1.MachineList
		if _, err := kjson.UnmarshalStrict(data, &l); err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(&l); err != nil {
			b.Fatal(err)
		}
	}
}

// upstreamMachineJSON is machine(0) as a client sends it (upstream groups), with an annotation of pad
// bytes (0 for none) to make a large body.
func upstreamMachineJSON(b *testing.B, pad int) []byte {
	m := machine(0)
	if pad > 0 {
		m.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = strings.Repeat("x", pad)
	}
	data, err := json.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	if data, err = translate.ToUpstream.Rewrite(route(b).Paths, data); err != nil {
		b.Fatal(err)
	}
	return data
}

// benchmarkRequestRewrite: what the proxy does to the body of a create or update of a mapped kind: the
// path-directed rewrite of the route's group-carrying values to the private groups, every other byte kept.
func benchmarkRequestRewrite(b *testing.B, pad int) {
	r, data := route(b), upstreamMachineJSON(b, pad)
	pathsOf := func(_, _ string) (*translate.Node, error) { return r.Paths, nil }
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := body.ObjectToPrivate(body.JSON, data, pathsOf); err != nil {
			b.Fatal(err)
		}
	}
}

// benchmarkRequestDecodeEncode: the same body decoded into the upstream Go type and encoded again, the
// least a typed translation would cost.
func benchmarkRequestDecodeEncode(b *testing.B, pad int) {
	data := upstreamMachineJSON(b, pad)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var m clusterv1.Machine
		if _, err := kjson.UnmarshalStrict(data, &m); err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(&m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRequestMachineRewrite and BenchmarkRequestMachineDecodeEncode: one Machine (about 1.5 KB).
func BenchmarkRequestMachineRewrite(b *testing.B)      { benchmarkRequestRewrite(b, 0) }
func BenchmarkRequestMachineDecodeEncode(b *testing.B) { benchmarkRequestDecodeEncode(b, 0) }

// BenchmarkRequest1MBRewrite and BenchmarkRequest1MBDecodeEncode: a Machine carrying a 1 MiB annotation.
func BenchmarkRequest1MBRewrite(b *testing.B)      { benchmarkRequestRewrite(b, 1<<20) }
func BenchmarkRequest1MBDecodeEncode(b *testing.B) { benchmarkRequestDecodeEncode(b, 1<<20) }
