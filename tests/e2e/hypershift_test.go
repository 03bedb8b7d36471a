package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openshift/hypershift-capi-proxy/install/crds"
	"github.com/openshift/hypershift-capi-proxy/tests/framework"
)

const (
	hypershiftGroup = "hypershift.openshift.io"
	agentGroup      = "capi-provider.agent-install.openshift.io"
)

// TestHyperShiftCluster reads and writes HyperShift's CAPI Cluster through the proxy in v1beta1 and
// v1beta2: its controlPlaneRef names HostedControlPlane.hypershift.openshift.io, a kind no route knows,
// whose version the proxy resolves from the contract label of its CRD on the backend (as CAPI's
// contract.GetAPIVersion does), and its infrastructureRef an AWSCluster, an AgentCluster or an
// ExternalInfraCluster (hypershift.openshift.io again). Every round trip is lossless, with the conversion
// in the apiserver's webhook (the private CRD as installed) and in the proxy (a private CRD that serves
// one version only). A reference to a kind whose CRD has no contract label fails with upstream's error.
func TestHyperShiftCluster(t *testing.T) {
	crdClient := directCRDClient(t)
	installHyperShiftCRDs(t, crdClient)

	clusterFile := filepath.Join(env.Root, "apis", "private", "crds", "cluster.hypershift.openshift.io_clusters.yaml")
	for _, mode := range []struct {
		name string
		// served is the one version the private Cluster CRD serves; "" leaves it as installed.
		served string
	}{
		{name: "webhook"},
		{name: "in-process, the backend serves v1beta1", served: "v1beta1"},
		{name: "in-process, the backend serves v1beta2", served: "v1beta2"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			if mode.served != "" {
				serveOneVersion(t, crdClient, clusterFile, mode.served)
			}
			testHyperShiftCluster(t)
		})
	}
}

func testHyperShiftCluster(t *testing.T) {
	ctx := context.Background()
	c, _ := versionsClient(t)
	ns := namespace(t, c)
	hcp := ref(hypershiftGroup, "HostedControlPlane", "hc1")
	for _, infra := range []struct {
		ref        clusterv1.ContractVersionedObjectReference
		apiVersion string
	}{
		{ref(upstreamInfra, "AWSCluster", "hc1"), upstreamInfra + "/v1beta2"},
		{ref(agentGroup, "AgentCluster", "hc1"), agentGroup + "/v1beta1"},
		{ref(hypershiftGroup, "ExternalInfraCluster", "hc1"), hypershiftGroup + "/v1beta1"},
	} {
		t.Run(infra.ref.Kind, func(t *testing.T) {
			name := strings.ToLower(infra.ref.Kind)
			written := &clusterv1.Cluster{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
					Annotations: map[string]string{"hypershift.openshift.io/cluster": ns + "/hc1"}},
				Spec: clusterv1.ClusterSpec{ControlPlaneRef: hcp, InfrastructureRef: infra.ref},
			}
			createEventually(t, c, written)

			// v1beta2 -> v1beta1: the references carry the versions the contract labels give.
			old := &clusterv1beta1.Cluster{}
			readEventually(t, c, written, old)
			want := []corev1.ObjectReference{
				{APIVersion: hypershiftGroup + "/v1beta1", Kind: "HostedControlPlane", Namespace: ns, Name: "hc1"},
				{APIVersion: infra.apiVersion, Kind: infra.ref.Kind, Namespace: ns, Name: "hc1"},
			}
			if diff := cmp.Diff(want, []corev1.ObjectReference{deref(old.Spec.ControlPlaneRef), deref(old.Spec.InfrastructureRef)}); diff != "" {
				t.Errorf("v1beta1 references (-want +got):\n%s", diff)
			}

			// A v1beta1 writer (HyperShift's code) updates it; the v1beta2 object keeps everything.
			old.Labels = merge(old.Labels, "written-by", "v1beta1")
			if err := c.Update(ctx, old); err != nil {
				t.Fatalf("updating in v1beta1: %v", err)
			}
			hub := read(t, c, written, &clusterv1.Cluster{}).(*clusterv1.Cluster)
			if diff := cmp.Diff(written.Spec, hub.Spec); diff != "" {
				t.Errorf("v1beta2 spec after a v1beta1 update (-written +read):\n%s", diff)
			}
			if hub.Labels["written-by"] != "v1beta1" {
				t.Errorf("labels %v", hub.Labels)
			}

			// Created in v1beta1, read in v1beta2 and in v1beta1 again.
			created := &clusterv1beta1.Cluster{
				ObjectMeta: metav1.ObjectMeta{Name: name + "-v1beta1", Namespace: ns},
				Spec: clusterv1beta1.ClusterSpec{
					ControlPlaneRef:   &corev1.ObjectReference{APIVersion: hypershiftGroup + "/v1beta1", Kind: "HostedControlPlane", Name: "hc1", Namespace: ns},
					InfrastructureRef: &corev1.ObjectReference{APIVersion: infra.apiVersion, Kind: infra.ref.Kind, Name: "hc1", Namespace: ns},
				},
			}
			createEventually(t, c, created)
			hub = read(t, c, created, &clusterv1.Cluster{}).(*clusterv1.Cluster)
			if diff := cmp.Diff(clusterv1.ClusterSpec{ControlPlaneRef: hcp, InfrastructureRef: infra.ref}, hub.Spec); diff != "" {
				t.Errorf("v1beta2 spec of a v1beta1 Cluster (-want +got):\n%s", diff)
			}
			again := read(t, c, created, &clusterv1beta1.Cluster{}).(*clusterv1beta1.Cluster)
			if diff := cmp.Diff(created.Spec, again.Spec); diff != "" {
				t.Errorf("v1beta1 spec read back (-written +read):\n%s", diff)
			}
		})
	}

	t.Run("unlabelled kind", func(t *testing.T) {
		written := &clusterv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: "unlabelled", Namespace: ns},
			Spec:       clusterv1.ClusterSpec{ControlPlaneRef: ref("e2e.example.com", "UnlabelledControlPlane", "cp"), InfrastructureRef: ref(upstreamInfra, "AWSCluster", "c")},
		}
		// Stored in v1beta1 (in-process conversion to an older backend), the create itself converts it and
		// fails; stored in v1beta2, reading it in v1beta1 does.
		err := c.Create(ctx, written)
		if err == nil {
			err = c.Get(ctx, client.ObjectKeyFromObject(written), &clusterv1beta1.Cluster{})
		}
		// Upstream's getter (contract.GetAPIVersion) in upstream's conversion says so.
		want := `failed to get apiVersion for kind UnlabelledControlPlane: cannot find any versions matching contract versions ["v1beta2" "v1beta1"] ` +
			`for CRD unlabelledcontrolplanes.e2e.example.com as contract version label(s) are either missing or empty`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("reading in v1beta1: %v\nwant an error with %s", err, want)
		}
	})
}

// installHyperShiftCRDs installs HyperShift's HostedControlPlane and ExternalInfraCluster CRDs
// (tests/testdata/hypershift-crds, contract-labelled) and a CRD without contract labels,
// UnlabelledControlPlane.e2e.example.com.
func installHyperShiftCRDs(t *testing.T, crdClient client.Client) {
	t.Helper()
	ctx := context.Background()
	list, err := crds.Read(filepath.Join(env.Root, "tests", "testdata", "hypershift-crds"))
	if err != nil {
		t.Fatal(err)
	}
	unlabelled := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "unlabelledcontrolplanes.e2e.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "e2e.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "UnlabelledControlPlane", ListKind: "UnlabelledControlPlaneList",
				Plural: "unlabelledcontrolplanes", Singular: "unlabelledcontrolplane"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
	if err := crds.Apply(ctx, crdClient, append(list, unlabelled), time.Minute); err != nil {
		t.Fatal(err)
	}
	// Later tests look for any "hypershift" in discovery, OpenAPI and kubectl's output, where only a
	// private group could put it.
	t.Cleanup(func() {
		for _, crd := range append(list, unlabelled) {
			deleteCRD(t, crdClient, crd.Name)
		}
	})
}

// serveOneVersion replaces the private Cluster CRD with one that serves and stores only version (no
// conversion webhook), so that the proxy converts the other version in process, and reinstalls the CRD
// from file at cleanup.
func serveOneVersion(t *testing.T, c client.Client, file, version string) {
	t.Helper()
	list, err := crds.Read(file)
	if err != nil {
		t.Fatal(err)
	}
	one := list[0].DeepCopy()
	for _, v := range one.Spec.Versions {
		if v.Name == version {
			v.Served, v.Storage, v.Deprecated, v.DeprecationWarning = true, true, false, nil
			one.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{v}
		}
	}
	one.Spec.Conversion = nil
	replaceCRD(t, c, one)
	t.Cleanup(func() {
		deleteCRD(t, c, one.Name)
		if err := proxy.InstallCRDs(context.Background(), file); err != nil {
			t.Errorf("reinstalling the Cluster CRD: %v", err)
		}
	})
}

// deleteCRD deletes the CRD named name and waits until it is gone.
func deleteCRD(t *testing.T, c client.Client, name string) {
	t.Helper()
	ctx := context.Background()
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Delete(ctx, crd); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(crd), crd)), nil
	}); err != nil {
		t.Fatalf("CRD %s not deleted: %v", name, err)
	}
}

// createEventually creates obj through the proxy, retrying while the proxy's view of what the backend
// serves, or of the backend's CRDs, catches up with a CRD just changed.
func createEventually(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	orig := obj.DeepCopyObject().(client.Object)
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		err := c.Create(ctx, obj)
		if err == nil {
			return true, nil
		}
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) || strings.Contains(err.Error(), "failed to get CustomResourceDefinition metadata") {
			t.Logf("create, while the proxy catches up: %v", err)
			obj = copyInto(obj, orig)
			return false, nil
		}
		return false, err
	})
	if err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// readEventually reads key's object into into, retrying while the proxy's cache of the backend's CRDs
// has not seen the CRDs just installed.
func readEventually(t *testing.T, c client.Client, key, into client.Object) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		last = c.Get(ctx, client.ObjectKeyFromObject(key), into)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("reading %T %s: %v", into, key.GetName(), last)
	}
}

// copyInto resets dst to src's content (dst and src of one type) and returns dst.
func copyInto(dst, src client.Object) client.Object {
	switch d := dst.(type) {
	case *clusterv1.Cluster:
		*d = *src.(*clusterv1.Cluster).DeepCopy()
	case *clusterv1beta1.Cluster:
		*d = *src.(*clusterv1beta1.Cluster).DeepCopy()
	}
	return dst
}

func deref(r *corev1.ObjectReference) corev1.ObjectReference {
	if r == nil {
		return corev1.ObjectReference{}
	}
	return *r
}

// TestForeignKindErrorsAsCAPI: converting a Cluster that references a kind without a route whose CRD has no
// contract label, or no CRD at all, fails through the proxy with the error CAPI's own conversion webhook
// (the real manager's, hack/build-capi.sh, resolving through the proxy with contract.GetAPIVersion) gives for the
// same object.
func TestForeignKindErrorsAsCAPI(t *testing.T) {
	ctx := context.Background()
	installHyperShiftCRDs(t, directCRDClient(t))
	c, _ := versionsClient(t)
	ns := namespace(t, c)
	m, err := env.StartManager(ctx, proxy, framework.CAPIManager, ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	hc, err := m.WebhookClient()
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"UnlabelledControlPlane", "MissingControlPlane"} {
		t.Run(kind, func(t *testing.T) {
			cluster := &clusterv1.Cluster{
				TypeMeta:   metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster"},
				ObjectMeta: metav1.ObjectMeta{Name: strings.ToLower(kind), Namespace: ns},
				Spec: clusterv1.ClusterSpec{ControlPlaneRef: ref("e2e.example.com", kind, "cp"),
					InfrastructureRef: ref(upstreamInfra, "AWSCluster", "c")},
			}
			raw, err := json.Marshal(cluster)
			if err != nil {
				t.Fatal(err)
			}
			review, _ := json.Marshal(apiextensionsv1.ConversionReview{
				TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
				Request: &apiextensionsv1.ConversionRequest{UID: "u", DesiredAPIVersion: clusterv1beta1.GroupVersion.String(),
					Objects: []runtime.RawExtension{{Raw: raw}}},
			})
			resp, err := hc.Post(m.WebhookURL+"/convert", "application/json", bytes.NewReader(review))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			answer := apiextensionsv1.ConversionReview{}
			if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || answer.Response == nil {
				t.Fatalf("CAPI's conversion webhook: %d, %v", resp.StatusCode, err)
			}
			capi := answer.Response.Result.Message
			if answer.Response.Result.Status != metav1.StatusFailure || !strings.Contains(capi, "failed to get apiVersion for kind") {
				t.Fatalf("CAPI's conversion webhook answered %+v", answer.Response.Result)
			}
			// The apiserver quotes the webhook's message; the proxy's webhook answers CAPI's.
			want := "conversion webhook for " + clusterv1.GroupVersion.WithKind("Cluster").String() + " failed: " + capi

			if err := c.Create(ctx, cluster); err != nil {
				t.Fatal(err)
			}
			err = c.Get(ctx, client.ObjectKeyFromObject(cluster), &clusterv1beta1.Cluster{})
			if err == nil || err.Error() != want {
				t.Errorf("reading in v1beta1 through the proxy: %v\nwant CAPI's own error, as the apiserver quotes it: %s", err, want)
			}
		})
	}
}
