package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// listRV matches the resourceVersion of a list, which moves between two requests whenever anything in
// the cluster is written.
var listRV = regexp.MustCompile(`^(\{"kind":"[A-Za-z]+","apiVersion":"[^"]+","metadata":\{"resourceVersion":)"\d+"`)

func withoutListRV(data []byte) []byte { return listRV.ReplaceAll(data, []byte(`$1"-"`)) }

// withoutDates replaces the cells of a Table's date columns with "-": the apiserver prints them from its
// clock at the moment of each request (an Age of "0s", then "1s"), so two requests may differ there. The
// apiserver writes compact JSON, so each row's cells are found by their own text.
func withoutDates(data []byte) []byte {
	var table struct {
		ColumnDefinitions []struct {
			Type string `json:"type"`
		} `json:"columnDefinitions"`
		Rows []struct {
			Cells []json.RawMessage `json:"cells"`
		} `json:"rows"`
	}
	if json.Unmarshal(data, &table) != nil {
		return data
	}
	for _, row := range table.Rows {
		cells := make([]string, len(row.Cells))
		dated := make([]string, len(row.Cells))
		for i, c := range row.Cells {
			cells[i], dated[i] = string(c), string(c)
			if i < len(table.ColumnDefinitions) && table.ColumnDefinitions[i].Type == "date" {
				dated[i] = `"-"`
			}
		}
		data = bytes.Replace(data, []byte(`"cells":[`+strings.Join(cells, ",")+`]`), []byte(`"cells":[`+strings.Join(dated, ",")+`]`), 1)
	}
	return data
}

// TestTableAndMetadataOnly covers what kubectl get asks for (Table, with and without objects) and what
// controller-runtime's metadata-only informers ask for (PartialObjectMetadata(List), protobuf first):
// the answers are the apiserver's but for the group, and a metadata-only watch and a cached client work
// through the proxy.
func TestTableAndMetadataOnly(t *testing.T) {
	ctx := context.Background()
	c, _ := clients(t)
	ns := namespace(t, c)
	cluster := mustCreateCluster(t, c, ns)
	m := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: "m0", Namespace: ns, Labels: map[string]string{clusterNameLabel: "c1"},
			OwnerReferences: []metav1.OwnerReference{owner(cluster, "Cluster")}},
		Spec: machineSpec("c1", "m0"),
	}
	mustCreate(t, c, m)
	rp, rd := viaProxy(t), direct(t)

	for _, tc := range []struct{ name, path, accept string }{
		{"table list", "/machines", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"},
		{"table get", "/machines/m0", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"},
		{"table list with objects", "/machines?includeObject=Object", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"},
		{"table get with objects", "/machines/m0?includeObject=Object", "application/json;as=Table;v=v1;g=meta.k8s.io"},
		{"table without objects", "/machines?includeObject=None", "application/json;as=Table;v=v1;g=meta.k8s.io"},
		{"table asked in protobuf first", "/machines", "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io,application/json"},
		{"partial object metadata", "/machines/m0", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"},
		{"partial object metadata list", "/machines", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			viaProxyBody := rp.mustDo(t, http.StatusOK, http.MethodGet, "/apis/cluster.x-k8s.io/v1beta2/namespaces/"+ns+tc.path, "", "Accept: "+tc.accept)
			// The apiserver itself, asked the same (protobuf answers compared in their JSON form).
			directBody := rd.mustDo(t, http.StatusOK, http.MethodGet, "/apis/"+privateCore+"/v1beta2/namespaces/"+ns+tc.path, "", "Accept: "+tc.accept)
			viaProxyBody, directBody = protobufAsJSON(t, viaProxyBody), protobufAsJSON(t, directBody)
			sameButGroups(t, tc.name, withoutDates(withoutListRV(viaProxyBody)), withoutDates(withoutListRV(directBody)))
		})
	}

	t.Run("metadata client", func(t *testing.T) {
		mc, err := metadata.NewForConfig(proxy.Config(env.AdminToken))
		if err != nil {
			t.Fatal(err)
		}
		machines := mc.Resource(schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machines"}).Namespace(ns)
		got, err := machines.Get(ctx, "m0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.OwnerReferences[0].APIVersion != "cluster.x-k8s.io/v1beta2" {
			t.Errorf("metadata Get: %+v", got.OwnerReferences)
		}
		list, err := machines.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 1 || list.Items[0].OwnerReferences[0].APIVersion != "cluster.x-k8s.io/v1beta2" {
			t.Errorf("metadata List: %+v", list.Items)
		}
	})

	t.Run("controller-runtime cache: metadata-only and full informers", func(t *testing.T) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		informers, err := cache.New(proxy.Config(env.AdminToken), cache.Options{Scheme: upstreamScheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = informers.Start(ctx) }()
		partial := &metav1.PartialObjectMetadata{}
		partial.SetGroupVersionKind(clusterv1.GroupVersion.WithKind("Machine"))
		full := &clusterv1.Machine{}
		getBoth := func(name string) (ok bool, err error) {
			key := client.ObjectKey{Namespace: ns, Name: name}
			if err := informers.Get(ctx, key, partial); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			if err := informers.Get(ctx, key, full); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			return true, nil
		}
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) { return getBoth("m0") }); err != nil {
			t.Fatalf("the caches never held m0: %v", err)
		}
		if partial.OwnerReferences[0].APIVersion != "cluster.x-k8s.io/v1beta2" || full.Spec.InfrastructureRef.APIGroup != upstreamInfra {
			t.Errorf("cached: %+v %+v", partial.OwnerReferences, full.Spec.InfrastructureRef)
		}
		// Later events reach both caches through the watches.
		m1 := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: ns, Labels: map[string]string{clusterNameLabel: "c1"},
			OwnerReferences: m.OwnerReferences}, Spec: machineSpec("c1", "m1")}
		mustCreate(t, c, m1)
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) { return getBoth("m1") }); err != nil {
			t.Fatalf("the caches never saw m1 created: %v", err)
		}
		if partial.OwnerReferences[0].APIVersion != "cluster.x-k8s.io/v1beta2" || full.Spec.Bootstrap.ConfigRef.APIGroup != upstreamBoot {
			t.Errorf("cached from a watch event: %+v %+v", partial.OwnerReferences, full.Spec.Bootstrap)
		}
	})
}
