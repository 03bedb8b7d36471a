package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/tests/framework"
)

const (
	upstreamIPAM = "ipam.cluster.x-k8s.io"
	privateIPAM  = "ipam.cluster.hypershift.openshift.io"
)

func init() {
	// controller-runtime's caches log through it; without one set it complains at length.
	ctrllog.SetLogger(logr.Discard())
	// Built-in kinds that point at CAPI objects, or that CAPI's controllers use beside them.
	for _, add := range []func(*runtime.Scheme) error{autoscalingv1.AddToScheme, autoscalingv2.AddToScheme, eventsv1.AddToScheme,
		authorizationv1.AddToScheme, rbacv1.AddToScheme} {
		if err := add(upstreamScheme); err != nil {
			panic(err)
		}
		if err := add(privateScheme); err != nil {
			panic(err)
		}
	}
}

// kubectlAs runs the kubectl built beside the apiserver against the proxy with a user's token.
func kubectlAs(t *testing.T, token string, args ...string) string {
	t.Helper()
	out, err := runKubectl(t, token, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// runKubectl runs kubectl against the proxy with a user's token and its own cache directory, and
// returns its combined output.
func runKubectl(t *testing.T, token string, args ...string) (string, error) {
	t.Helper()
	base := []string{"--server", proxy.URL, "--certificate-authority", proxy.CAFile, "--token", token,
		"--cache-dir", filepath.Join(t.TempDir(), "cache")}
	cmd := exec.Command(filepath.Join(env.BinDir, "kubectl"), append(base, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG=/dev/null")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// rawClient speaks HTTP to the proxy or to the apiserver with the admin's credentials, for the tests that
// look at headers and bytes.
type rawClient struct {
	base string
	hc   *http.Client
}

func newRawClient(t *testing.T, cfg *rest.Config) *rawClient {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &rawClient{base: cfg.Host, hc: hc}
}

// viaProxy and direct are raw clients of the proxy and of the apiserver, as the admin.
func viaProxy(t *testing.T) *rawClient { return newRawClient(t, proxy.Config(env.AdminToken)) }
func direct(t *testing.T) *rawClient   { return newRawClient(t, env.DirectConfig(env.AdminToken)) }

// do sends a request (framework.DoRequest); header holds "Name: value" lines. It fails the test on a
// transport error only.
func (c *rawClient) do(t *testing.T, method, path, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	return framework.DoRequest(context.Background(), t, framework.DoRequestInput{Client: c.hc, URL: c.base, Path: path,
		Method: method, Body: body, Header: header})
}

// expect sends a request (do) and checks what its client sees of the answer (framework.ExpectAnswer;
// want's What defaults to the method and path). It returns the body.
func (c *rawClient) expect(t *testing.T, want framework.ExpectAnswerInput, method, path, body string, header ...string) []byte {
	t.Helper()
	resp, data := c.do(t, method, path, body, header...)
	if want.What == "" {
		want.What = method + " " + path
	}
	want.Code, want.Body, want.ContentType = resp.StatusCode, data, resp.Header.Get("Content-Type")
	framework.ExpectAnswer(t, want)
	return data
}

// mustDo is do that fails unless the status code is want.
func (c *rawClient) mustDo(t *testing.T, want int, method, path, body string, header ...string) []byte {
	t.Helper()
	resp, data := c.do(t, method, path, body, header...)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, data)
	}
	return data
}

// toUpstreamText replaces every private group name in s by its upstream name, longest first: what the
// proxy must do to a document whose group names are all group-carrying values (test objects are).
func toUpstreamText(s string) string {
	groups := append([]upstream.Group(nil), upstream.Groups...)
	// infrastructure.cluster.hypershift.openshift.io before cluster.hypershift.openshift.io.
	for i := range groups {
		for j := i + 1; j < len(groups); j++ {
			if len(groups[j].Private) > len(groups[i].Private) {
				groups[i], groups[j] = groups[j], groups[i]
			}
		}
	}
	for _, g := range groups {
		s = strings.ReplaceAll(s, g.Private, g.Upstream)
	}
	return s
}

// sameButGroups fails unless the proxy's document is byte for byte the apiserver's with the private group
// names replaced: the proxy is invisible.
func sameButGroups(t *testing.T, what string, viaProxy, direct []byte) {
	t.Helper()
	want := toUpstreamText(string(direct))
	if got := string(viaProxy); got != want {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Errorf("%s: the proxy's document differs from the apiserver's but for the groups, from offset %d:\nproxy:  %s\ndirect: %s",
			what, i, excerpt(got, i), excerpt(want, i))
	}
}

// excerpt is s around offset i.
func excerpt(s string, i int) string {
	from, to := max(0, i-150), min(len(s), i+150)
	return s[from:to]
}

// jsonObject decodes a JSON object.
func jsonObject(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	return m
}

// field returns the value at a dotted path of a decoded JSON object ("spec.infrastructureRef.apiGroup";
// a numeric segment indexes an array), or nil.
func field(v any, path string) any {
	for _, seg := range strings.Split(path, ".") {
		switch t := v.(type) {
		case map[string]any:
			v = t[seg]
		case []any:
			i := 0
			for _, c := range seg {
				i = i*10 + int(c-'0')
			}
			if i >= len(t) {
				return nil
			}
			v = t[i]
		default:
			return nil
		}
	}
	return v
}

// mustCreateCluster creates a Cluster "c1" through the proxy, to own the objects of a test: owners must
// exist, or the garbage collector deletes what they own.
func mustCreateCluster(t *testing.T, c client.Client, ns string) *clusterv1.Cluster {
	t.Helper()
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Namespace: ns},
		Spec: clusterv1.ClusterSpec{InfrastructureRef: ref(upstreamInfra, "DockerCluster", "c1")}}
	mustCreate(t, c, cluster)
	return cluster
}

// listNames returns the sorted names of a JSON list's items; tableNames the names of a Table's rows.
var listNames, tableNames = framework.ListNames, framework.TableNames

// query is a query string of name and value pairs.
func query(params ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(params); i += 2 {
		q.Set(params[i], params[i+1])
	}
	return "?" + q.Encode()
}

// labelUntilEnd sets the label key=value on the cluster-scoped objects named names (as newObj makes them)
// straight on the backend through c, and removes it when the test ends (framework.LabelUntilEnd).
func labelUntilEnd(ctx context.Context, t *testing.T, c client.Client, newObj func(name string) client.Object, key, value string, names ...string) {
	t.Helper()
	framework.LabelUntilEnd(ctx, t, framework.LabelUntilEndInput{Client: c, NewObject: newObj, Key: key, Value: value, Names: names})
}

// createUntilEnd creates objects straight on the backend through c, and deletes them when the test ends
// (framework.CreateUntilEnd).
func createUntilEnd(ctx context.Context, t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	framework.CreateUntilEnd(ctx, t, framework.CreateUntilEndInput{Client: c, Objects: objs})
}

// nameRequest is a request of one object by name: its method, a path suffix after the name ("/status",
// a query), and its body of type contentType.
type nameRequest struct{ method, suffix, body, contentType string }

// answersAsAbsent fails unless through answers req of the object named name in the collection at
// collection as direct answers it of absent, a name that exists nowhere: the same code and body, but for
// the name (in the body sent too).
func answersAsAbsent(t *testing.T, through, direct *rawClient, collection, name, absent string, req nameRequest) {
	t.Helper()
	wantResp, want := direct.do(t, req.method, collection+"/"+absent+req.suffix, strings.ReplaceAll(req.body, name, absent), "Content-Type: "+req.contentType)
	resp, got := through.do(t, req.method, collection+"/"+name+req.suffix, req.body, "Content-Type: "+req.contentType)
	if resp.StatusCode != wantResp.StatusCode || string(got) != strings.ReplaceAll(string(want), absent, name) {
		t.Errorf("%s %s%s: %d %s\nwant %d %s", req.method, name, req.suffix, resp.StatusCode, got, wantResp.StatusCode, want)
	}
}

// watchSeesOnly watches path through rc until the watch ends (path sets timeoutSeconds) and fails unless
// it is open and every event but a BOOKMARK is of an object named one of names.
func watchSeesOnly(ctx context.Context, t *testing.T, rc *rawClient, path string, names ...string) {
	t.Helper()
	resp, events := openWatch(ctx, t, rc, path)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("watch %s: %d", path, resp.StatusCode)
	}
	for ev := range events {
		if name, _ := field(ev.Object, "metadata.name").(string); ev.Type != "BOOKMARK" && !slices.Contains(names, name) {
			t.Errorf("watch %s: %s %v", path, ev.Type, name)
		}
	}
}

// watchAdded watches path through rc until the watch ends (path sets timeoutSeconds) and returns the
// objects of its ADDED events by name, and their names sorted.
func watchAdded(ctx context.Context, t *testing.T, rc *rawClient, path string) (map[string]map[string]any, []string) {
	t.Helper()
	resp, events := openWatch(ctx, t, rc, path)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch %s: %d", path, resp.StatusCode)
	}
	added := map[string]map[string]any{}
	names := []string{}
	for ev := range events {
		if name, _ := field(ev.Object, "metadata.name").(string); ev.Type == "ADDED" {
			added[name] = ev.Object
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return added, names
}

// ownProxy is a proxy a test starts for itself (to follow namespaces' serving modes it changes), with
// the admin's clients straight to the apiserver and through that proxy.
type ownProxy struct {
	p         *framework.Proxy
	kube      kubernetes.Interface
	directDyn dynamic.Interface
	proxyDyn  dynamic.Interface
}

// startOwnProxy starts a proxy for the test, with the framework's arguments and args, stopped at its end.
func startOwnProxy(t *testing.T, args ...string) *ownProxy {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p, err := env.StartProxy(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	o := &ownProxy{p: p}
	if o.kube, err = kubernetes.NewForConfig(env.DirectConfig(env.AdminToken)); err != nil {
		t.Fatal(err)
	}
	if o.directDyn, err = dynamic.NewForConfig(env.DirectConfig(env.AdminToken)); err != nil {
		t.Fatal(err)
	}
	if o.proxyDyn, err = dynamic.NewForConfig(p.Config(env.AdminToken)); err != nil {
		t.Fatal(err)
	}
	return o
}

// waitServedUpstream waits until the proxy serves namespace ns from the upstream groups (its informer
// has seen the namespace's label): it reads, through the proxy, a Cluster it created straight in the
// platform's upstream CRD. The Cluster stays, named name.
func (o *ownProxy) waitServedUpstream(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	if _, err := o.directDyn.Resource(upstreamClusters).Namespace(ns).Create(ctx, clusterObject(upstreamClusters, ns, name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.WaitForServed(ctx, t, framework.WaitForServedInput{Getter: o.proxyDyn, Resource: upstreamClusters, Namespace: ns, Name: name})
}
