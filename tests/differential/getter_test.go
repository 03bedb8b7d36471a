package differential

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The apiVersion getter of conversions, against CAPI's. Converting a v1beta2 reference to v1beta1 asks
// the getter for the referenced kind's version; CAPI's reads the kind's CRD from its manager's cache
// (framework.CAPIAPIVersionGetter, behind this package's upstream conversion webhook), the proxy's from
// its cache of the backend's CRDs. Anyone who reaches a conversion webhook can name any kind in a
// reference and learn from the answer whether its CRD exists and its contract labels: the proxy must
// tell no more than CAPI's webhook tells, and no less, and a client reading through the proxy must get
// what it gets from the apiserver serving upstream's CRDs.

// widgetCRD is a CRD of a group no route maps, labelled with contract versions (or not).
func widgetCRD(kind string, labels map[string]string) *apiextensionsv1.CustomResourceDefinition {
	plural := strings.ToLower(kind) + "s"
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + ".internal.example.com", Labels: labels},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "internal.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha2", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
}

// machineReview is a ConversionReview of a v1beta2 Machine, in the core group core, whose
// infrastructureRef names kind in group, to v1beta1.
func machineReview(core, group, kind string) string {
	return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u1","desiredAPIVersion":"` + core + `/v1beta1",` +
		`"objects":[{"apiVersion":"` + core + `/v1beta2","kind":"Machine","metadata":{"name":"m1","namespace":"ns","uid":"7"},` +
		`"spec":{"clusterName":"c1","bootstrap":{"dataSecretName":"s"},"infrastructureRef":{"apiGroup":"` + group + `","kind":"` + kind + `","name":"m1"}}}]}}`
}

// webhookClient trusts the PEM certificates caPEM, and sends no credentials: a caller the webhooks do
// not authenticate.
func webhookClient(caPEM []byte) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// convertResult is the status code and, for a 200, the ConversionResponse of a webhook.
type convertResult struct {
	code int
	resp *apiextensionsv1.ConversionResponse
	body string
}

func postReview(t *testing.T, hc *http.Client, url, review string) convertResult {
	t.Helper()
	resp, err := hc.Post(url, "application/json", strings.NewReader(review))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	out := convertResult{code: resp.StatusCode, body: string(data)}
	var r apiextensionsv1.ConversionReview
	if json.Unmarshal(data, &r) == nil {
		out.resp = r.Response
	}
	return out
}

// TestConversionWebhookAnswersAsCAPI sends the same ConversionReviews, without credentials, to the proxy's
// /convert (in the private groups) and to a conversion webhook over CAPI's own getter (in the upstream
// groups), with references to kinds whose CRD exists with contract labels, without them, not at all, of
// a mapped group with and without a route: the answers are the same (result, message, converted
// objects once the proxy's private groups are named as upstream's). What the proxy tells a caller about
// the CRDs of the cluster is what CAPI's webhook tells.
func TestConversionWebhookAnswersAsCAPI(t *testing.T) {
	ctx := context.Background()
	widgets := []*apiextensionsv1.CustomResourceDefinition{
		widgetCRD("SecretWidget", map[string]string{"cluster.x-k8s.io/v1beta2": "v1alpha1_v1alpha2"}),
		widgetCRD("UnlabelledWidget", nil),
	}
	if err := env.InstallCRDObjects(ctx, widgets...); err != nil {
		t.Fatal(err)
	}
	c, err := env.AdminClient()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, crd := range widgets {
			_ = c.Delete(context.Background(), crd)
		}
	}()
	proxyCA, err := os.ReadFile(proxy.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	viaProxy, viaCAPI := webhookClient(proxyCA), webhookClient(webhook.CABundle)
	answers := func(group, kind string) (proxied, capi convertResult) {
		privateGroup := group
		if strings.HasSuffix(group, "cluster.x-k8s.io") {
			privateGroup = strings.Replace(group, "x-k8s.io", "hypershift.openshift.io", 1)
		}
		proxied = postReview(t, viaProxy, proxy.URL+"/convert", machineReview("cluster.hypershift.openshift.io", privateGroup, kind))
		capi = postReview(t, viaCAPI, webhook.URL, machineReview("cluster.x-k8s.io", group, kind))
		return proxied, capi
	}
	// Both caches see the new CRDs (and their labels) in a moment.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		p, c := answers("internal.example.com", "SecretWidget")
		u1, u2 := answers("internal.example.com", "UnlabelledWidget")
		ok := func(r convertResult) bool { return r.resp != nil && r.resp.Result.Status == metav1.StatusSuccess }
		labelless := func(r convertResult) bool {
			return r.resp != nil && strings.Contains(r.resp.Result.Message, "cannot find any versions matching contract versions")
		}
		return ok(p) && ok(c) && labelless(u1) && labelless(u2), nil
	}); err != nil {
		t.Fatalf("the webhooks do not see the widgets' CRDs: %v", err)
	}

	for _, ref := range []struct{ group, kind string }{
		{"internal.example.com", "SecretWidget"},                 // labelled: its version
		{"internal.example.com", "UnlabelledWidget"},             // no contract labels
		{"internal.example.com", "NoSuchWidget"},                 // no CRD
		{"infrastructure.cluster.x-k8s.io", "AWSMachine"},        // a routed kind
		{"infrastructure.cluster.x-k8s.io", "NoSuchMachine"},     // a mapped group, no route, no CRD
		{"cluster.x-k8s.io", "Machine"},                          // a routed kind whose CRD has no contract labels
		{"hypershift.openshift.io", "HostedControlPlane"},        // HyperShift's, not installed here
		{"controlplane.cluster.x-k8s.io", "KubeadmControlPlane"}, // labelled for both contracts
		{"bootstrap.cluster.x-k8s.io", "NoSuchConfig"},           // another mapped group
		{"infrastructure.cluster.x-k8s.io", "awsmachine"},        // a kind spelled otherwise
		{"INTERNAL.EXAMPLE.COM", "SecretWidget"},                 // a group spelled otherwise
	} {
		t.Run(ref.group+"/"+ref.kind, func(t *testing.T) {
			proxied, capi := answers(ref.group, ref.kind)
			if proxied.code != capi.code || (proxied.resp == nil) != (capi.resp == nil) {
				t.Fatalf("the proxy answers %d %.300s, CAPI's webhook %d %.300s", proxied.code, proxied.body, capi.code, capi.body)
			}
			if capi.resp == nil {
				return
			}
			if diff := cmp.Diff(capi.resp.Result, proxied.resp.Result); diff != "" {
				t.Errorf("result (-CAPI +proxy):\n%s", diff)
			}
			if len(proxied.resp.ConvertedObjects) != len(capi.resp.ConvertedObjects) {
				t.Fatalf("objects: the proxy converts %d, CAPI's webhook %d", len(proxied.resp.ConvertedObjects), len(capi.resp.ConvertedObjects))
			}
			for i := range capi.resp.ConvertedObjects {
				var want, got any
				upstreamTerms := strings.ReplaceAll(string(proxied.resp.ConvertedObjects[i].Raw), "cluster.hypershift.openshift.io", "cluster.x-k8s.io")
				if err := json.Unmarshal(capi.resp.ConvertedObjects[i].Raw, &want); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal([]byte(upstreamTerms), &got); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("object %d (-CAPI +proxy, the proxy's groups named as upstream's):\n%s", i, diff)
				}
			}
		})
	}
}

// TestReferenceToUninstalledRoutedKind: a v1beta2 MachinePool whose infrastructureRef names
// AWSManagedMachinePool, a kind the route table serves, where its CRD is not installed (the upstream
// one directly, the private one behind the proxy), read as v1beta1: the apiserver answers with CAPI's
// conversion failure (500, "failed to get apiVersion for kind AWSManagedMachinePool: ... not found"), and
// the proxy answers the same. (It used to take the version from its route table and answer 200.)
func TestReferenceToUninstalledRoutedKind(t *testing.T) {
	ctx := context.Background()
	theSides(t)
	c, err := env.AdminClient()
	if err != nil {
		t.Fatal(err)
	}
	var removed []*apiextensionsv1.CustomResourceDefinition
	for _, group := range []string{"infrastructure.cluster.x-k8s.io", "infrastructure.cluster.hypershift.openshift.io"} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: "awsmanagedmachinepools." + group}, crd); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, crd); err != nil {
			t.Fatal(err)
		}
		removed = append(removed, crd)
	}
	defer func() {
		// Installed again as they were, for whatever runs next.
		for _, crd := range removed {
			crd.ObjectMeta = metav1.ObjectMeta{Name: crd.Name, Labels: crd.Labels, Annotations: crd.Annotations}
			crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
		}
		if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			for _, crd := range removed {
				if err := c.Get(ctx, client.ObjectKeyFromObject(crd), &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
					return false, nil
				}
			}
			return true, nil
		}); err != nil {
			t.Errorf("the AWSManagedMachinePool CRDs are not gone: %v", err)
			return
		}
		if err := env.InstallCRDObjects(context.Background(), removed...); err != nil {
			t.Errorf("installing the AWSManagedMachinePool CRDs again: %v", err)
		}
	}()

	st := newState()
	const pools = "/apis/cluster.x-k8s.io/v1beta2/namespaces/" + nsPlaceholder + "/machinepools"
	body := `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachinePool","metadata":{"name":"managed","namespace":"` + nsPlaceholder + `"},` +
		`"spec":{"clusterName":"c1","template":{"spec":{"clusterName":"c1","bootstrap":{"dataSecretName":"s"},` +
		`"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"AWSManagedMachinePool","name":"managed"}}}}}`
	ex := pair(t, st, "getter/machinepool-awsmanagedmachinepool-create", "", request{method: http.MethodPost, path: pools, body: body, header: []string{jsonCT}})
	if ex[0].status != http.StatusCreated {
		t.Fatalf("creating the MachinePool directly: %d %s", ex[0].status, ex[0].body)
	}
	get := request{method: http.MethodGet, path: strings.Replace(pools, "v1beta2", "v1beta1", 1) + "/managed"}
	// Each side's getter sees the CRD gone once its cache has: wait for both to fail, or the proxy to
	// keep answering.
	s := theSides(t)
	var codes [2]int
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		for i := range s {
			codes[i] = send(t, st, i, s[i], get).status
		}
		return codes[0] != http.StatusOK && codes[1] != http.StatusOK, nil
	}); err != nil {
		t.Fatalf("reading the MachinePool as v1beta1 answers %d directly and %d through the proxy, want CAPI's conversion failure on both: %v",
			codes[0], codes[1], err)
	}
	ex = pair(t, st, "getter/machinepool-awsmanagedmachinepool-get-v1beta1", "", get)
	if ex[0].status != http.StatusInternalServerError || !strings.Contains(string(ex[0].body), "failed to get apiVersion for kind AWSManagedMachinePool") {
		t.Errorf("directly: %d %s, want CAPI's conversion failure", ex[0].status, ex[0].body)
	}
}
