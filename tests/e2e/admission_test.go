package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	controlplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/openshift/hypershift-capi-proxy/tests/framework"
	awsv1 "sigs.k8s.io/cluster-api-provider-aws/v2/api/v1beta2"
	capawebhooks "sigs.k8s.io/cluster-api-provider-aws/v2/webhooks"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// admissionEnv is a proxy serving the private groups' admission webhooks, forwarding them to the real CAPI
// managers hack/build-capi.sh builds at the version hack/capi pins (core and kubeadm control plane), whose webhook configurations (apis/private/webhooks)
// are installed pointed at it.
type admissionEnv struct {
	ns    string
	proxy *framework.Proxy
	// servers are the webhook servers, by apis/upstream.WebhookSource name.
	servers map[string]webhookServer
}

// webhookServer is a webhook server: a manager's, or one run in the test.
type webhookServer struct {
	url    string
	client *http.Client
	stop   func()
}

// startAdmission starts the managers through the suite's proxy (watching ns), a second proxy that
// serves their webhooks and those of the in-process servers, and installs the webhook configurations of
// both pointed at that proxy; everything is removed again at cleanup, the configurations first, and
// until the apiserver no longer calls them for the probes (objects in ns each configuration matches,
// created with dry run), so that no later test meets them.
func startAdmission(t *testing.T, ns string, managers map[string]string, inProcess map[string]*httptest.Server, probes ...client.Object) *admissionEnv {
	t.Helper()
	ctx := context.Background()
	a := &admissionEnv{ns: ns, servers: map[string]webhookServer{}}
	var bundle []byte
	args := []string{}
	names := []string{}
	for name, binary := range managers {
		m, err := env.StartManager(ctx, proxy, binary, ns)
		if err != nil {
			t.Fatalf("starting %s: %v", binary, err)
		}
		t.Cleanup(m.Stop)
		hc, err := m.WebhookClient()
		if err != nil {
			t.Fatal(err)
		}
		a.servers[name] = webhookServer{url: m.WebhookURL, client: hc, stop: m.Stop}
		ca, err := os.ReadFile(m.WebhookCAFile)
		if err != nil {
			t.Fatal(err)
		}
		bundle = append(bundle, ca...)
		args = append(args, "--admission-webhook="+name+"="+m.WebhookURL)
		names = append(names, name)
	}
	for name, srv := range inProcess {
		a.servers[name] = webhookServer{url: srv.URL, client: srv.Client(), stop: srv.Close}
		bundle = append(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})...)
		args = append(args, "--admission-webhook="+name+"="+srv.URL)
		names = append(names, name)
	}
	caFile := filepath.Join(t.TempDir(), "webhooks-ca.crt")
	if err := os.WriteFile(caFile, bundle, 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := env.StartProxy(ctx, append(args, "--admission-webhook-ca-file="+caFile)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	a.proxy = p

	install := []string{"install-crds", "--kubeconfig", filepath.Join(env.Dir, "admin.kubeconfig"),
		"--webhook-url", p.URL + "/convert", "--ca-bundle-file", p.CAFile}
	for _, name := range names {
		install = append(install, "--admission-webhooks", filepath.Join(env.Root, "apis", "private", "webhooks", name+".yaml"))
	}
	if out, err := exec.CommandContext(ctx, p.Bin, install...).CombinedOutput(); err != nil {
		t.Fatalf("capi-proxy install-crds --admission-webhooks: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		c := directAdmissionClient(t)
		for _, name := range names {
			for _, obj := range []client.Object{
				&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "hypershift-capi-" + name + "-mutating"}},
				&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "hypershift-capi-" + name + "-validating"}},
			} {
				if err := c.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("deleting %s: %v", obj.GetName(), err)
				}
			}
		}
		waitWebhooksGone(t, p, probes)
	})
	return a
}

// waitWebhooksGone waits until dry-run creates of the probes through the suite's proxy succeed without
// reaching p's admission webhooks (its request counter stands still): the apiserver has seen the
// configurations' deletion.
func waitWebhooksGone(t *testing.T, p *framework.Proxy, probes []client.Object) {
	t.Helper()
	c, err := client.New(proxy.Config(env.AdminToken), client.Options{Scheme: admissionScheme})
	if err != nil {
		t.Fatal(err)
	}
	reviews := func() float64 {
		_, body := get(t, p.MetricsURL+"/metrics")
		var n float64
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "capi_proxy_admission_webhook_requests_total{") {
				v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
				n += v
			}
		}
		return n
	}
	err = wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		before := reviews()
		for _, probe := range probes {
			if err := c.Create(ctx, probe.DeepCopyObject().(client.Object), client.DryRunAll); err != nil {
				t.Logf("dry-run create of a %T: %v", probe, err)
				return false, nil
			}
		}
		after := reviews()
		if after != before {
			t.Logf("the webhooks were called %v times", after-before)
		}
		return after == before, nil
	})
	if err != nil {
		t.Errorf("the apiserver still calls the deleted webhook configurations: %v", err)
	}
}

func directAdmissionClient(t *testing.T) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := admissionregistrationv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.DirectConfig(env.AdminToken), client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// webhookAnswer is what a manager's webhooks make of an object when called directly, in upstream terms:
// the object after the mutating webhook's patch, or the status of the first denial.
type webhookAnswer struct {
	patch   []jsonPatchOp
	denial  *metav1.Status
	webhook string // the upstream name of the denying webhook
}

type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// direct calls the mutating webhook at mutatePath, then the validating one at validatePath, of the
// manager's server with a review of obj (upstream terms) as the apiserver would for the upstream group: a
// CREATE, or with old an UPDATE.
func (a *admissionEnv) direct(t *testing.T, manager, resource, mutatePath, validatePath string, obj, old client.Object) webhookAnswer {
	t.Helper()
	srv := a.servers[manager]
	hc := srv.client
	gvk, err := apiutil.GVKForObject(obj, admissionScheme)
	if err != nil {
		t.Fatal(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	op, options, oldRaw := admissionv1.Create, `{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1"}`, []byte(nil)
	if old != nil {
		old.GetObjectKind().SetGroupVersionKind(gvk)
		if oldRaw, err = json.Marshal(old); err != nil {
			t.Fatal(err)
		}
		op, options = admissionv1.Update, `{"kind":"UpdateOptions","apiVersion":"meta.k8s.io/v1"}`
	}
	var answer webhookAnswer
	for i, path := range []string{mutatePath, validatePath} {
		gvr := gvk.GroupVersion().WithResource(resource)
		review := admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{
				UID: types.UID(fmt.Sprintf("direct-%d", i)), Kind: metav1.GroupVersionKind(gvk), Resource: metav1.GroupVersionResource(gvr),
				RequestKind: ptr.To(metav1.GroupVersionKind(gvk)), RequestResource: ptr.To(metav1.GroupVersionResource(gvr)),
				Name: obj.GetName(), Namespace: obj.GetNamespace(), Operation: op,
				UserInfo: authenticationv1.UserInfo{Username: "admin"}, Object: runtime.RawExtension{Raw: raw}, OldObject: runtime.RawExtension{Raw: oldRaw},
				DryRun: ptr.To(false), Options: runtime.RawExtension{Raw: []byte(options)},
			},
		}
		body, _ := json.Marshal(review)
		resp, err := hc.Post(srv.url+path+"?timeout=10s", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("calling %s directly: %v", path, err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		out := admissionv1.AdmissionReview{}
		if err := json.Unmarshal(data, &out); err != nil || out.Response == nil {
			t.Fatalf("%s answered %d %s", path, resp.StatusCode, data)
		}
		if !out.Response.Allowed {
			answer.denial = out.Response.Result
			answer.webhook = map[bool]string{true: "mutating", false: "validating"}[i == 0]
			return answer
		}
		if i == 0 && len(out.Response.Patch) > 0 {
			if err := json.Unmarshal(out.Response.Patch, &answer.patch); err != nil {
				t.Fatal(err)
			}
			// The validating webhook sees the mutated object, as the apiserver sends it.
			patch, err := jsonpatch.DecodePatch(out.Response.Patch)
			if err != nil {
				t.Fatal(err)
			}
			if raw, err = patch.Apply(raw); err != nil {
				t.Fatal(err)
			}
		}
	}
	return answer
}

// admissionScheme holds the upstream kinds the admission tests create.
var admissionScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, clusterv1.AddToScheme, controlplanev1.AddToScheme, awsv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// TestAdmissionWebhooks runs CAPI's own admission webhooks (the real managers' webhook servers, hack/build-capi.sh)
// on the private groups through the proxy: a MachineDeployment created without defaults gets exactly the
// values CAPI's defaulting webhook sets when called directly, and an invalid Cluster and an invalid
// KubeadmControlPlane are refused with CAPI's error (code, reason, message, causes and their field paths)
// in upstream terms.
func TestAdmissionWebhooks(t *testing.T) {
	ctx := context.Background()
	c, err := client.New(proxy.Config(env.AdminToken), client.Options{Scheme: admissionScheme})
	if err != nil {
		t.Fatal(err)
	}
	ns := namespace(t, c)
	a := startAdmission(t, ns, map[string]string{
		"cluster-api":           framework.CAPIManager,
		"kubeadm-control-plane": framework.KubeadmControlPlaneManager,
	}, nil,
		&clusterv1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns}, Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: "c1", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"probe": "md"}},
			Template: clusterv1.MachineTemplateSpec{ObjectMeta: clusterv1.ObjectMeta{Labels: map[string]string{"probe": "md"}}, Spec: clusterv1.MachineSpec{ClusterName: "c1",
				Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr.To("s")}, InfrastructureRef: ref(upstreamInfra, "AWSMachineTemplate", "t")}}}},
		&controlplanev1.KubeadmControlPlane{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns}, Spec: controlplanev1.KubeadmControlPlaneSpec{
			Replicas: ptr.To[int32](1), Version: "v1.34.2", MachineTemplate: controlplanev1.KubeadmControlPlaneMachineTemplate{
				Spec: controlplanev1.KubeadmControlPlaneMachineTemplateSpec{InfrastructureRef: ref(upstreamInfra, "AWSMachineTemplate", "t")}}}},
	)

	t.Run("invalid Cluster", func(t *testing.T) {
		cluster := &clusterv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: "bad-topology", Namespace: ns},
			Spec: clusterv1.ClusterSpec{Topology: clusterv1.Topology{Version: "v1.34.2",
				ClassRef: clusterv1.ClusterClassRef{Name: ""}}},
		}
		want := a.direct(t, "cluster-api", "clusters", "/mutate-cluster-x-k8s-io-v1beta2-cluster", "/validate-cluster-x-k8s-io-v1beta2-cluster", cluster.DeepCopy(), nil)
		assertDenied(t, c, cluster, want, map[string]string{"mutating": "default.cluster.cluster.x-k8s.io", "validating": "validation.cluster.cluster.x-k8s.io"})
	})

	t.Run("invalid KubeadmControlPlane", func(t *testing.T) {
		kcp := &controlplanev1.KubeadmControlPlane{
			ObjectMeta: metav1.ObjectMeta{Name: "even", Namespace: ns},
			Spec: controlplanev1.KubeadmControlPlaneSpec{Replicas: ptr.To[int32](2), Version: "v1.34.2",
				MachineTemplate: controlplanev1.KubeadmControlPlaneMachineTemplate{Spec: controlplanev1.KubeadmControlPlaneMachineTemplateSpec{
					InfrastructureRef: ref(upstreamInfra, "AWSMachineTemplate", "cp")}}},
		}
		want := a.direct(t, "kubeadm-control-plane", "kubeadmcontrolplanes", "/mutate-controlplane-cluster-x-k8s-io-v1beta2-kubeadmcontrolplane",
			"/validate-controlplane-cluster-x-k8s-io-v1beta2-kubeadmcontrolplane", kcp.DeepCopy(), nil)
		assertDenied(t, c, kcp, want, map[string]string{"mutating": "default.kubeadmcontrolplane.controlplane.cluster.x-k8s.io",
			"validating": "validation.kubeadmcontrolplane.controlplane.cluster.x-k8s.io"})
	})

	t.Run("MachineDeployment defaults", func(t *testing.T) {
		md := &clusterv1.MachineDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: "md1", Namespace: ns},
			Spec: clusterv1.MachineDeploymentSpec{ClusterName: "c1", Template: clusterv1.MachineTemplateSpec{Spec: clusterv1.MachineSpec{
				// Without the "v" the webhook adds.
				ClusterName: "c1", Version: "1.34.2",
				Bootstrap:         clusterv1.Bootstrap{DataSecretName: ptr.To("bootstrap")},
				InfrastructureRef: ref(upstreamInfra, "AWSMachineTemplate", "md1"),
			}}},
		}
		want := a.direct(t, "cluster-api", "machinedeployments", "/mutate-cluster-x-k8s-io-v1beta2-machinedeployment",
			"/validate-cluster-x-k8s-io-v1beta2-machinedeployment", md.DeepCopy(), nil)
		if want.denial != nil || len(want.patch) == 0 {
			t.Fatalf("CAPI's webhooks called directly: denial %v, patch %v", want.denial, want.patch)
		}
		// The invalid Cluster was denied by the same MutatingWebhookConfiguration: it is active.
		created := md.DeepCopy()
		if err := c.Create(ctx, created); err != nil {
			t.Fatalf("creating a MachineDeployment without defaults through the proxy: %v", err)
		}
		assertDefaulted(t, want, created)
	})

	t.Run("metrics", func(t *testing.T) {
		_, body := get(t, a.proxy.MetricsURL+"/metrics")
		for _, want := range []string{
			`capi_proxy_admission_webhook_requests_total{code="200",kind="MachineDeployment",manager="cluster-api",operation="CREATE"}`,
			`capi_proxy_admission_webhook_duration_seconds_count{kind="KubeadmControlPlane",manager="kubeadm-control-plane",operation="CREATE"}`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})
}

// assertDenied creates obj through the proxy (retrying until the webhook configurations are active) and
// fails unless it is refused as the apiserver refuses with the denial want (see assertRefused).
func assertDenied(t *testing.T, c client.Client, obj client.Object, want webhookAnswer, names map[string]string) {
	t.Helper()
	assertRefused(t, func(ctx context.Context) error {
		try := obj.DeepCopyObject().(client.Object)
		err := c.Create(ctx, try)
		if err == nil {
			// Not admitted by the webhooks yet.
			_ = c.Delete(ctx, try)
		}
		return err
	}, want, names)
}

// assertRefused runs do (a write through the proxy) until a webhook denies it, and fails unless the denial
// reads as the apiserver's with the denial want: the webhook's code, reason and details (causes with
// their field paths), and the message "admission webhook "<name>" denied the request: <the webhook's
// message>", all in upstream terms.
func assertRefused(t *testing.T, do func(context.Context) error, want webhookAnswer, names map[string]string) {
	t.Helper()
	if want.denial == nil {
		t.Fatal("the webhooks called directly admit the object")
	}
	var status *apierrors.StatusError
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		err := do(ctx)
		if errors.As(err, &status) && strings.Contains(err.Error(), "denied the request") {
			return true, nil
		}
		t.Logf("not denied yet: %v", err)
		return false, nil
	})
	if err != nil {
		t.Fatalf("the write through the proxy was never denied by a webhook: %v", err)
	}
	got := status.ErrStatus
	wantMessage := fmt.Sprintf("admission webhook %q denied the request: %s", names[want.webhook], want.denial.Message)
	if got.Message != wantMessage {
		t.Errorf("message through the proxy:\n%s\nwant\n%s", got.Message, wantMessage)
	}
	if got.Code != want.denial.Code || got.Reason != want.denial.Reason {
		t.Errorf("code %d reason %s, want %d %s", got.Code, got.Reason, want.denial.Code, want.denial.Reason)
	}
	if diff := cmp.Diff(want.denial.Details, got.Details); diff != "" {
		t.Errorf("details (-the webhook directly +through the proxy):\n%s", diff)
	}
	if strings.Contains(got.Message, "hypershift") {
		t.Errorf("the message names a private group: %s", got.Message)
	}
}

// assertDefaulted fails unless obj (as created through the proxy) holds every value the mutating
// webhook's patch, called directly, sets (and lacks what it removes).
func assertDefaulted(t *testing.T, want webhookAnswer, obj client.Object) {
	t.Helper()
	got := toMap(t, obj)
	for _, op := range want.patch {
		value, found := pointer(got, op.Path)
		switch op.Op {
		case "remove":
			if found {
				t.Errorf("%s: the webhook removes it, the proxy's object has %v", op.Path, value)
			}
		default:
			if diff := cmp.Diff(op.Value, value); !found || diff != "" {
				t.Errorf("%s: the webhook sets %v, the proxy's object has %v (found %v)", op.Path, op.Value, value, found)
			}
		}
	}
}

func toMap(t *testing.T, obj any) map[string]any {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// pointer returns the value at a JSON pointer (RFC 6901) in a decoded JSON document.
func pointer(doc any, p string) (any, bool) {
	if p == "" {
		return doc, true
	}
	for _, tok := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch v := doc.(type) {
		case map[string]any:
			next, ok := v[tok]
			if !ok {
				return nil, false
			}
			doc = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil, false
			}
			doc = v[i]
		default:
			return nil, false
		}
	}
	return doc, true
}

// TestAdmissionWebhooksCAPA runs CAPA's AWSMachine webhooks (sigs.k8s.io/cluster-api-provider-aws/v2/
// webhooks, the handlers CAPA's manager serves, here on controller-runtime's admission webhooks in the
// test) on the private groups through the proxy: a new AWSMachine gets CAPA's defaults, and changing its
// spec is refused with CAPA's immutability error.
func TestAdmissionWebhooksCAPA(t *testing.T) {
	ctx := context.Background()
	mux := http.NewServeMux()
	mux.Handle("/mutate-infrastructure-cluster-x-k8s-io-v1beta2-awsmachine",
		admission.WithCustomDefaulter(admissionScheme, &awsv1.AWSMachine{}, &capawebhooks.AWSMachine{}))
	mux.Handle("/validate-infrastructure-cluster-x-k8s-io-v1beta2-awsmachine",
		admission.WithCustomValidator(admissionScheme, &awsv1.AWSMachine{}, &capawebhooks.AWSMachine{})) //nolint:staticcheck // CAPA's webhook is a CustomValidator
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)

	c, err := client.New(proxy.Config(env.AdminToken), client.Options{Scheme: admissionScheme})
	if err != nil {
		t.Fatal(err)
	}
	ns := namespace(t, c)
	a := startAdmission(t, ns, nil, map[string]*httptest.Server{"aws": srv},
		&awsv1.AWSMachine{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns}, Spec: awsv1.AWSMachineSpec{InstanceType: "m5.large"}})
	names := map[string]string{"mutating": "mutation.awsmachine.infrastructure.cluster.x-k8s.io", "validating": "validation.awsmachine.infrastructure.cluster.x-k8s.io"}
	const mutate, validate = "/mutate-infrastructure-cluster-x-k8s-io-v1beta2-awsmachine", "/validate-infrastructure-cluster-x-k8s-io-v1beta2-awsmachine"

	m := &awsv1.AWSMachine{ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: ns}, Spec: awsv1.AWSMachineSpec{InstanceType: "m5.large"}}
	want := a.direct(t, "aws", "awsmachines", mutate, validate, m.DeepCopy(), nil)
	if want.denial != nil || len(want.patch) == 0 {
		t.Fatalf("CAPA's webhooks called directly: denial %v, patch %v", want.denial, want.patch)
	}
	var created *awsv1.AWSMachine
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		try := m.DeepCopy()
		if err := c.Create(ctx, try); err != nil {
			return false, err
		}
		if toMapOK(try, want.patch[0].Path) {
			created = try
			return true, nil
		}
		// Created before the webhook configuration was active: again.
		return false, c.Delete(ctx, try)
	})
	if err != nil {
		t.Fatalf("creating an AWSMachine through the proxy: %v", err)
	}
	t.Run("defaults", func(t *testing.T) { assertDefaulted(t, want, created) })

	t.Run("immutable spec", func(t *testing.T) {
		changed := created.DeepCopy()
		changed.Spec.InstanceType = "m5.xlarge"
		want := a.direct(t, "aws", "awsmachines", mutate, validate, changed.DeepCopy(), created.DeepCopy())
		assertRefused(t, func(ctx context.Context) error { return c.Update(ctx, changed.DeepCopy()) }, want, names)
	})

	// With CAPA's webhook server down, the apiserver sees its webhooks fail and applies their
	// failurePolicy (Fail): the write is refused, as it would be with the webhook server itself down.
	t.Run("webhook server down", func(t *testing.T) {
		srv.Close()
		latest := &awsv1.AWSMachine{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(created), latest); err != nil {
			t.Fatal(err)
		}
		latest.Spec.AdditionalTags = awsv1.Tags{"allowed": "change"}
		err := c.Update(ctx, latest)
		if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `failed calling webhook "mutation.awsmachine.infrastructure.cluster.x-k8s.io"`) {
			t.Errorf("an update with the webhook server down: %v, want the apiserver's InternalError for a failing webhook", err)
		}
		if strings.Contains(fmt.Sprint(err), "hypershift") {
			t.Errorf("the error names a private group: %v", err)
		}
	})
}

// toMapOK tells whether obj has a value at the JSON pointer p.
func toMapOK(obj any, p string) bool {
	data, err := json.Marshal(obj)
	if err != nil {
		return false
	}
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		return false
	}
	_, ok := pointer(m, p)
	return ok
}
