package migration

import (
	"encoding/json"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

var table = translate.NewTable(routes.Routes)

// kindOf returns the kind of an upstream resource at a version, moving in dir.
func kindOf(t *testing.T, dir translate.Direction, group, version, resource string) *kind {
	t.Helper()
	r, ok := table.ByUpstream(schema.GroupVersionResource{Group: group, Version: version, Resource: resource})
	if !ok {
		t.Fatalf("no route for %s/%s %s", group, version, resource)
	}
	k := &kind{upstream: r.UpstreamGVK().GroupKind(), route: r, src: r.Upstream, dst: r.Private, dstServed: true}
	if !toPrivate(dir) {
		k.src, k.dst = r.Private, r.Upstream
	}
	return k
}

func obj(t *testing.T, k *kind, doc string) *object {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return &object{kind: k, u: u}
}

func TestDesiredCopyTranslatesAndCleans(t *testing.T) {
	k := kindOf(t, translate.ToPrivate, "cluster.x-k8s.io", "v1beta2", "machines")
	src := obj(t, k, `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{
		"name":"m1","namespace":"ns","uid":"src-m1","resourceVersion":"42","generation":3,"creationTimestamp":"2026-01-01T00:00:00Z",
		"managedFields":[{"manager":"x","apiVersion":"cluster.x-k8s.io/v1beta2"}],
		"labels":{"cluster.x-k8s.io/cluster-name":"c1"},
		"annotations":{"cluster.x-k8s.io/cloned-from-groupkind":"AWSMachineTemplate.infrastructure.cluster.x-k8s.io","cluster.x-k8s.io/conversion-data":"{\"apiVersion\":\"cluster.x-k8s.io/v1beta2\"}"},
		"finalizers":["machine.cluster.x-k8s.io"],
		"ownerReferences":[
			{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineSet","name":"ms1","uid":"src-ms1","controller":true,"blockOwnerDeletion":true},
			{"apiVersion":"hypershift.openshift.io/v1beta1","kind":"HostedControlPlane","name":"hcp","uid":"hcp-uid"}]},
		"spec":{"clusterName":"c1","bootstrap":{"dataSecretName":"s"},"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"AWSMachine","name":"m1"},"minReadySeconds":0},
		"status":{"phase":"Running","nodeRef":{"name":"n1"}}}`)
	got, status, complete := desiredCopy(src, translate.ToPrivate,
		map[types.UID]types.UID{"src-ms1": "dst-ms1"}, map[types.UID]bool{"src-ms1": true, "src-m1": true})
	if !complete {
		t.Fatal("incomplete")
	}
	want := obj(t, k, `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{
		"name":"m1","namespace":"ns",
		"labels":{"cluster.x-k8s.io/cluster-name":"c1"},
		"annotations":{"cluster.x-k8s.io/cloned-from-groupkind":"AWSMachineTemplate.infrastructure.cluster.hypershift.openshift.io","cluster.x-k8s.io/conversion-data":"{\"apiVersion\":\"cluster.x-k8s.io/v1beta2\"}",
			"migration.capi.hypershift.openshift.io/source-uid":"src-m1","migration.capi.hypershift.openshift.io/source-resource-version":"42"},
		"finalizers":["machine.cluster.x-k8s.io"],
		"ownerReferences":[
			{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineSet","name":"ms1","uid":"dst-ms1","controller":true,"blockOwnerDeletion":true},
			{"apiVersion":"hypershift.openshift.io/v1beta1","kind":"HostedControlPlane","name":"hcp","uid":"hcp-uid"}]},
		"spec":{"clusterName":"c1","bootstrap":{"dataSecretName":"s"},"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"AWSMachine","name":"m1"},"minReadySeconds":0}}`)
	if !reflect.DeepEqual(normalize(t, got.Object), normalize(t, want.u.Object)) {
		g, _ := json.MarshalIndent(got.Object, "", " ")
		t.Errorf("copy:\n%s", g)
	}
	if !reflect.DeepEqual(status, map[string]any{"phase": "Running", "nodeRef": map[string]any{"name": "n1"}}) {
		t.Errorf("status %v", status)
	}
	// The source is left as it was.
	if src.u.GetUID() != "src-m1" || src.u.GetAPIVersion() != "cluster.x-k8s.io/v1beta2" {
		t.Errorf("source changed: %v", src.u.Object["metadata"])
	}

	// Without the owner's copy, the reference is left out.
	got, _, complete = desiredCopy(src, translate.ToPrivate, nil, map[types.UID]bool{"src-ms1": true})
	if complete || len(got.GetOwnerReferences()) != 1 || got.GetOwnerReferences()[0].Kind != "HostedControlPlane" {
		t.Errorf("complete=%v refs=%v", complete, got.GetOwnerReferences())
	}
}

func TestDesiredCopyBack(t *testing.T) {
	k := kindOf(t, translate.ToUpstream, "cluster.x-k8s.io", "v1beta2", "clusters")
	src := obj(t, k, `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Cluster","metadata":{"name":"c1","uid":"p1","resourceVersion":"7"},
		"spec":{"paused":false,"infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"AWSCluster","name":"c1"},
		"controlPlaneRef":{"apiGroup":"hypershift.openshift.io","kind":"HostedControlPlane","name":"c1"}}}`)
	got, status, _ := desiredCopy(src, translate.ToUpstream, nil, nil)
	if got.GetAPIVersion() != "cluster.x-k8s.io/v1beta2" || status != nil {
		t.Fatalf("apiVersion %s status %v", got.GetAPIVersion(), status)
	}
	spec := got.Object["spec"].(map[string]any)
	if g := spec["infrastructureRef"].(map[string]any)["apiGroup"]; g != "infrastructure.cluster.x-k8s.io" {
		t.Errorf("infrastructureRef.apiGroup %v", g)
	}
	if g := spec["controlPlaneRef"].(map[string]any)["apiGroup"]; g != "hypershift.openshift.io" {
		t.Errorf("controlPlaneRef.apiGroup %v", g)
	}
	if p, ok := spec["paused"]; !ok || p != false {
		t.Errorf("an explicit false is kept: %v", spec)
	}
}

func TestRepointOwners(t *testing.T) {
	refs := []metav1.OwnerReference{
		{APIVersion: "cluster.x-k8s.io/v1beta1", Kind: "Cluster", Name: "c1", UID: "old", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)},
		{APIVersion: "cluster.x-k8s.io/v1beta2", Kind: "Machine", Name: "gone", UID: "dangling"},
		{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm"},
	}
	got, complete := repointOwners(refs, translate.ToPrivate, map[types.UID]types.UID{"old": "new"}, map[types.UID]bool{"old": true}, false)
	want := []metav1.OwnerReference{
		{APIVersion: "cluster.hypershift.openshift.io/v1beta1", Kind: "Cluster", Name: "c1", UID: "new", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)},
		refs[1], refs[2],
	}
	if !complete || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v (complete %v)", got, complete)
	}
	if refs[0].UID != "old" {
		t.Error("input changed")
	}
	if _, complete := repointOwners(refs, translate.ToPrivate, nil, map[types.UID]bool{"old": true}, false); complete {
		t.Error("complete without the copy")
	}
}

func TestOwnersFirst(t *testing.T) {
	md := kindOf(t, translate.ToPrivate, "cluster.x-k8s.io", "v1beta2", "machinedeployments")
	ms := kindOf(t, translate.ToPrivate, "cluster.x-k8s.io", "v1beta2", "machinesets")
	m := kindOf(t, translate.ToPrivate, "cluster.x-k8s.io", "v1beta2", "machines")
	c := kindOf(t, translate.ToPrivate, "cluster.x-k8s.io", "v1beta2", "clusters")
	objs := []*object{
		obj(t, m, `{"metadata":{"name":"m1","uid":"m1","ownerReferences":[{"uid":"ms1"}]}}`),
		obj(t, ms, `{"metadata":{"name":"ms1","uid":"ms1","ownerReferences":[{"uid":"md1"}]}}`),
		obj(t, md, `{"metadata":{"name":"md1","uid":"md1","ownerReferences":[{"uid":"c1"}]}}`),
		obj(t, c, `{"metadata":{"name":"c1","uid":"c1"}}`),
		obj(t, m, `{"metadata":{"name":"a","uid":"a","ownerReferences":[{"uid":"b"}]}}`),
		obj(t, m, `{"metadata":{"name":"b","uid":"b","ownerReferences":[{"uid":"a"}]}}`),
	}
	var names []string
	for _, o := range ownersFirst(objs) {
		names = append(names, o.u.GetName())
	}
	if want := []string{"c1", "md1", "ms1", "m1", "a", "b"}; !reflect.DeepEqual(names, want) {
		t.Errorf("got %v, want %v", names, want)
	}
}

func TestConflicts(t *testing.T) {
	k := kindOf(t, translate.ToPrivate, "cluster.x-k8s.io", "v1beta2", "machines")
	s := &snapshot{dir: translate.ToPrivate, copies: map[key]*object{}}
	s.sources = []*object{
		obj(t, k, `{"metadata":{"name":"ok","uid":"u1"}}`),
		obj(t, k, `{"metadata":{"name":"stray","uid":"u2"}}`),
		obj(t, k, `{"metadata":{"name":"recreated","uid":"u3"}}`),
	}
	for _, doc := range []string{
		`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","metadata":{"name":"ok","annotations":{"migration.capi.hypershift.openshift.io/source-uid":"u1"}}}`,
		`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","metadata":{"name":"stray"}}`,
		`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","metadata":{"name":"recreated","annotations":{"migration.capi.hypershift.openshift.io/source-uid":"old"}}}`,
		`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","metadata":{"name":"retired","annotations":{"migration.capi.hypershift.openshift.io/source-uid":"u9"}}}`,
	} {
		o := obj(t, k, doc)
		s.copies[key{k.upstream, o.u.GetName()}] = o
	}
	var got []string
	for _, c := range s.conflicts(false) {
		got = append(got, c.Object)
	}
	want := []string{"machines.cluster.hypershift.openshift.io/recreated", "machines.cluster.hypershift.openshift.io/retired", "machines.cluster.hypershift.openshift.io/stray"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("conflicts %v, want %v", got, want)
	}
	if got := s.conflicts(true); len(got) != 2 {
		t.Errorf("with retired sources: %v", got)
	}
	if s.copyOf(s.sources[0]) == nil || s.copyOf(s.sources[2]) != nil {
		t.Error("copyOf")
	}
}

// normalize round-trips a value through JSON so numbers compare alike.
func normalize(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLevels(t *testing.T) {
	m := kindOf(t, translate.ToPrivate, "cluster.x-k8s.io", "v1beta2", "machines")
	objs := ownersFirst([]*object{
		obj(t, m, `{"metadata":{"name":"m1","uid":"m1","ownerReferences":[{"uid":"ms1"},{"uid":"c1"}]}}`),
		obj(t, m, `{"metadata":{"name":"ms1","uid":"ms1","ownerReferences":[{"uid":"c1"}]}}`),
		obj(t, m, `{"metadata":{"name":"c1","uid":"c1","ownerReferences":[{"uid":"elsewhere"}]}}`),
		obj(t, m, `{"metadata":{"name":"c2","uid":"c2"}}`),
	})
	var got [][]string
	for _, l := range levels(objs) {
		var names []string
		for _, o := range l {
			names = append(names, o.u.GetName())
		}
		got = append(got, names)
	}
	if want := [][]string{{"c1", "c2"}, {"ms1"}, {"m1"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("levels %v, want %v", got, want)
	}
}

func TestSameContent(t *testing.T) {
	k := kindOf(t, translate.ToPrivate, "cluster.x-k8s.io", "v1beta2", "machines")
	src := obj(t, k, `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"m1","uid":"u1","resourceVersion":"5",
		"labels":{"a":"b"},"finalizers":["f"]},"spec":{"clusterName":"c1","infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"AWSMachine","name":"m1"}},
		"status":{"phase":"Running"}}`)
	want, status, _ := desiredCopy(src, translate.ToPrivate, nil, nil)
	copied := want.DeepCopy()
	copied.Object["status"] = status
	copied.SetUID("u2")
	copied.SetResourceVersion("9")
	copied.SetFinalizers(nil)
	if !sameContent(want, status, copied) {
		t.Error("a copy differing in metadata the apiserver owns, finalizers and the source annotations is the same content")
	}
	changed := copied.DeepCopy()
	changed.Object["spec"].(map[string]any)["clusterName"] = "c2"
	if sameContent(want, status, changed) {
		t.Error("spec changed")
	}
	changed = copied.DeepCopy()
	changed.Object["status"] = map[string]any{"phase": "Failed"}
	if sameContent(want, status, changed) {
		t.Error("status changed")
	}
	changed = copied.DeepCopy()
	changed.SetLabels(map[string]string{"a": "c"})
	if sameContent(want, status, changed) {
		t.Error("labels changed")
	}
}
