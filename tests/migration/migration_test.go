package migration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/openshift/hypershift-capi-proxy/migration"
	"github.com/openshift/hypershift-capi-proxy/migration/serving"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

var table = translate.NewTable(routes.Routes)

// clients talk straight to the apiserver as the admin.
type clients struct {
	dyn  dynamic.Interface
	kube kubernetes.Interface
}

func newClients(t testing.TB) clients {
	t.Helper()
	cfg := env.DirectConfig(env.AdminToken)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return clients{dyn, kube}
}

// newMigrator returns a Migrator straight to the apiserver that does not wait for proxies (none follows
// the label in these tests) and records its events.
func newMigrator(t testing.TB, cfg *rest.Config) *migration.Migrator {
	t.Helper()
	if cfg == nil {
		cfg = env.DirectConfig(env.AdminToken)
	}
	m, err := migration.New(migration.Options{Config: cfg, Grace: -1, RetireTimeout: 90 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// newNamespace creates an unlabelled namespace named prefix-<random>: served from the private groups
// until adopted (migrate adopt labels it serving.Upstream).
func newNamespace(ctx context.Context, t testing.TB, c clients, prefix string) string {
	t.Helper()
	ns, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// private returns the private twin of an upstream resource.
func private(gvr schema.GroupVersionResource) schema.GroupVersionResource {
	gvr.Group = translate.ToPrivate.Group(gvr.Group)
	return gvr
}

// list lists a resource in a namespace, by name.
func list(ctx context.Context, t testing.TB, c clients, gvr schema.GroupVersionResource, ns string) map[string]*unstructured.Unstructured {
	t.Helper()
	l, err := c.dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing %s: %v", gvr, err)
	}
	out := map[string]*unstructured.Unstructured{}
	for i := range l.Items {
		out[l.Items[i].GetName()] = &l.Items[i]
	}
	return out
}

// readShape reads every object of the shape's resources in one set of groups, by "resource/name".
func readShape(ctx context.Context, t testing.TB, c clients, ns string, dir translate.Direction) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, gvr := range shapeResources {
		if dir.String() == translate.ToUpstream.String() {
			gvr = private(gvr)
		}
		for name, u := range list(ctx, t, c, gvr, ns) {
			out[gvr.Resource+"/"+name] = u
		}
	}
	return out
}

// content is what a move must keep of an object: labels, annotations, finalizers and every top-level
// field but metadata (spec, status, ...).
func content(u *unstructured.Unstructured) map[string]any {
	out := map[string]any{}
	for k, v := range u.Object {
		if k != "metadata" && k != "apiVersion" {
			out[k] = v
		}
	}
	out["labels"], out["annotations"], out["finalizers"] = u.GetLabels(), u.GetAnnotations(), u.GetFinalizers()
	return out
}

// translated returns the object as the other set of groups holds it: its group-carrying fields translated
// along its route's paths.
func translated(t testing.TB, u *unstructured.Unstructured, dir translate.Direction) *unstructured.Unstructured {
	t.Helper()
	gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
	if err != nil {
		t.Fatal(err)
	}
	gvk := gv.WithKind(u.GetKind())
	var r *translate.Route
	var ok bool
	if dir.String() == translate.ToPrivate.String() {
		r, ok = table.ByUpstreamKind(gvk)
	} else {
		r, ok = table.ByPrivateKind(gvk)
	}
	if !ok {
		t.Fatalf("no route for %s", gvk)
	}
	return &unstructured.Unstructured{Object: dir.JSON(r.Paths, runtime.DeepCopyJSON(u.Object)).(map[string]any)}
}

// checkOwners fails unless every ownerReference of every object in the namespace (mapped kinds of both
// groups, Secrets) names a live object at its apiVersion, kind, name and UID, and none names a group of
// the source groups of the move in direction moved.
func checkOwners(ctx context.Context, t testing.TB, c clients, ns string, moved translate.Direction) {
	t.Helper()
	live := map[string]types.UID{} // "group/Kind/name" -> uid
	var objs []metav1.Object
	for _, gvr := range shapeResources {
		for _, g := range []schema.GroupVersionResource{gvr, private(gvr)} {
			for _, u := range list(ctx, t, c, g, ns) {
				live[g.Group+"/"+u.GetKind()+"/"+u.GetName()] = u.GetUID()
				objs = append(objs, u)
			}
		}
	}
	secrets, err := c.kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range secrets.Items {
		objs = append(objs, &secrets.Items[i])
	}
	for _, o := range objs {
		for _, ref := range o.GetOwnerReferences() {
			gv, _ := schema.ParseGroupVersion(ref.APIVersion)
			if ref.Kind == "HostedControlPlane" {
				continue
			}
			if moved.Maps(gv.Group) {
				t.Errorf("%s %s: ownerReference to %s %s %s still in %s", o.GetName(), o.GetUID(), ref.APIVersion, ref.Kind, ref.Name, gv.Group)
			}
			if uid := live[gv.Group+"/"+ref.Kind+"/"+ref.Name]; uid != ref.UID {
				t.Errorf("%s: ownerReference to %s %s %s names UID %s, the object has %q", o.GetName(), ref.APIVersion, ref.Kind, ref.Name, ref.UID, uid)
			}
		}
	}
}

// secretsOf returns the namespace's Secrets by name with their UIDs.
func secretsOf(ctx context.Context, t testing.TB, c clients, ns string) map[string]types.UID {
	t.Helper()
	l, err := c.kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, s := range l.Items {
		out[s.Name] = s.UID
	}
	return out
}

// gcBarrier creates a Secret owned by an object that does not exist and waits until the garbage collector
// deleted it: it has processed the namespace's ownerReferences up to then.
func gcBarrier(ctx context.Context, t testing.TB, c clients, ns string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{GenerateName: "gc-barrier-", Namespace: ns, OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "never-there", UID: "00000000-0000-0000-0000-000000000000"}}}}
	s, err := c.kube.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.kube.CoreV1().Secrets(ns).Get(ctx, s.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("the garbage collector did not delete %s: %v", s.Name, err)
	}
}

// adoptAndMigrate adopts namespace ns and migrates it to the private groups with m, failing t on an
// error of either.
func adoptAndMigrate(ctx context.Context, t testing.TB, m *migration.Migrator, ns string) {
	t.Helper()
	if err := m.Adopt(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if err := m.Migrate(ctx, ns); err != nil {
		t.Fatal(err)
	}
}

func checkNamespace(ctx context.Context, t testing.TB, c clients, ns string, mode serving.Mode, dir translate.Direction) {
	t.Helper()
	n, err := c.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Labels[serving.Label]; got != string(mode) {
		t.Errorf("namespace label %s=%q, want %q", serving.Label, got, mode)
	}
	if got := n.Annotations[migration.PhaseAnnotation]; got != string(migration.PhaseComplete) {
		t.Errorf("phase %q", got)
	}
	if got := n.Annotations[migration.DirectionAnnotation]; got != dir.String() {
		t.Errorf("direction %q", got)
	}
}

// checkMoved fails unless every object of before (read in the source groups) exists in the destination
// groups with its content translated, the source groups hold none, every ownerReference names a live
// object, and every Secret of secrets is still there with its UID.
func checkMoved(ctx context.Context, t testing.TB, c clients, ns string, before map[string]*unstructured.Unstructured, secrets map[string]types.UID, dir translate.Direction) {
	t.Helper()
	after := readShape(ctx, t, c, ns, reverse(dir))
	if left := readShape(ctx, t, c, ns, dir); len(left) > 0 {
		t.Errorf("%d objects left in the source groups: %v", len(left), keys(left))
	}
	if len(after) != len(before) {
		t.Errorf("%d objects in the destination, want %d: %v", len(after), len(before), keys(after))
	}
	for name, src := range before {
		dst, ok := after[name]
		if !ok {
			t.Errorf("%s: no copy", name)
			continue
		}
		if src.GetUID() == dst.GetUID() {
			t.Errorf("%s: same UID", name)
		}
		if diff := cmp.Diff(content(translated(t, src, dir)), content(dst)); diff != "" {
			t.Errorf("%s: copy differs (-want +got):\n%s", name, diff)
		}
		if len(dst.GetOwnerReferences()) != len(src.GetOwnerReferences()) {
			t.Errorf("%s: %d ownerReferences, want %d", name, len(dst.GetOwnerReferences()), len(src.GetOwnerReferences()))
		}
	}
	gcBarrier(ctx, t, c, ns)
	if diff := cmp.Diff(secrets, secretsOf(ctx, t, c, ns)); diff != "" {
		t.Errorf("Secrets changed (-before +after):\n%s", diff)
	}
	checkOwners(ctx, t, c, ns, dir)
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestMigrateAndRollBack migrates a HyperShift-shaped namespace to the private groups and back: each time
// every object is in the destination with its content translated, no Secret was collected, every
// ownerReference names the live copies, and the source groups are empty.
func TestMigrateAndRollBack(t *testing.T) {
	ctx := context.Background()
	c := newClients(t)
	ns := newNamespace(ctx, t, c, "hcp")
	shape{nodePools: 2, machinesPerPool: 2}.create(ctx, t, c.dyn, c.kube, ns)
	m := newMigrator(t, nil)
	if err := m.Adopt(ctx, ns); err != nil {
		t.Fatal(err)
	}
	before := readShape(ctx, t, c, ns, translate.ToPrivate)
	secrets := secretsOf(ctx, t, c, ns)

	if err := m.Migrate(ctx, ns); err != nil {
		t.Fatal(err)
	}
	checkNamespace(ctx, t, c, ns, serving.Private, translate.ToPrivate)
	checkMoved(ctx, t, c, ns, before, secrets, translate.ToPrivate)
	st, err := m.Status(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	if st.Upstream != 0 || st.Private != len(before) || st.Paused != 0 || st.Phase != migration.PhaseComplete {
		t.Errorf("status %+v", st)
	}
	// A second run has nothing to do.
	if err := m.Migrate(ctx, ns); err != nil {
		t.Fatal(err)
	}

	migrated := readShape(ctx, t, c, ns, translate.ToUpstream)
	if err := m.Rollback(ctx, ns); err != nil {
		t.Fatal(err)
	}
	checkNamespace(ctx, t, c, ns, serving.Upstream, translate.ToUpstream)
	checkMoved(ctx, t, c, ns, migrated, secrets, translate.ToUpstream)
	// And the round trip gave back what there was.
	back := readShape(ctx, t, c, ns, translate.ToPrivate)
	for name, src := range before {
		if diff := cmp.Diff(content(src), content(back[name])); diff != "" {
			t.Errorf("%s after the round trip (-before +after):\n%s", name, diff)
		}
	}
}

// resourceVersions returns the resourceVersion of every object in the namespace of the shape's resources
// in both groups, of its Secrets, and of the namespace itself.
func resourceVersions(ctx context.Context, t testing.TB, c clients, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, dir := range []translate.Direction{translate.ToPrivate, translate.ToUpstream} {
		for name, u := range readShape(ctx, t, c, ns, dir) {
			out[dir.String()+" "+name] = u.GetResourceVersion()
		}
	}
	secrets, err := c.kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		out["secret "+s.Name] = s.ResourceVersion
	}
	n, err := c.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out["namespace"] = n.ResourceVersion
	return out
}

// TestDryRunChangesNothing plans a migration and a rollback: the plan lists every object and every
// reference to re-point, and nothing in the namespace changed.
func TestDryRunChangesNothing(t *testing.T) {
	ctx := context.Background()
	c := newClients(t)
	ns := newNamespace(ctx, t, c, "dryrun")
	smallShape.create(ctx, t, c.dyn, c.kube, ns)
	m := newMigrator(t, nil)
	if err := m.Adopt(ctx, ns); err != nil {
		t.Fatal(err)
	}
	before := resourceVersions(ctx, t, c, ns)
	plan, err := m.Plan(ctx, ns, translate.ToPrivate)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Plan(ctx, ns, translate.ToUpstream); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, resourceVersions(ctx, t, c, ns)); diff != "" {
		t.Errorf("the plan changed the namespace (-before +after):\n%s", diff)
	}
	if want := len(readShape(ctx, t, c, ns, translate.ToPrivate)); len(plan.Objects) != want {
		t.Errorf("plan has %d objects, want %d", len(plan.Objects), want)
	}
	var secretRefs int
	for _, r := range plan.References {
		if strings.HasPrefix(r.Object, "secrets/") {
			secretRefs++
			if !strings.HasPrefix(r.To.APIVersion, "cluster.hypershift.openshift.io/") || r.To.UID != "" {
				t.Errorf("reference %s", r)
			}
		}
	}
	// hc-kubeconfig, np0-user-data and the Machine's bootstrap Secret.
	if secretRefs != 3 {
		t.Errorf("%d Secret references in the plan, want 3: %v", secretRefs, plan.References)
	}
	if len(plan.Conflicts)+len(plan.UnknownKinds)+len(plan.Problems) > 0 {
		t.Errorf("plan stops: %+v", plan)
	}
	var b strings.Builder
	plan.Print(&b)
	t.Logf("plan:\n%s", b.String())
}

// TestConflictsAndUnknownKindsChangeNothing: an object in the private groups the migration did not copy,
// and a kind in an upstream group the route table does not know, each stop the migration before it changes
// anything, with an error that names them.
func TestConflictsAndUnknownKindsChangeNothing(t *testing.T) {
	ctx := context.Background()
	c := newClients(t)
	m := newMigrator(t, nil)

	t.Run("conflict", func(t *testing.T) {
		ns := newNamespace(ctx, t, c, "conflict")
		smallShape.create(ctx, t, c.dyn, c.kube, ns)
		if err := m.Adopt(ctx, ns); err != nil {
			t.Fatal(err)
		}
		stray := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "infrastructure.cluster.hypershift.openshift.io/v1beta2", "kind": "AWSCluster",
			"metadata": map[string]any{"name": "hc", "namespace": ns}}}
		if _, err := c.dyn.Resource(private(awsClusters)).Namespace(ns).Create(ctx, stray, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		before := resourceVersions(ctx, t, c, ns)
		err := m.Migrate(ctx, ns)
		var conflict *migration.ConflictError
		if !errors.As(err, &conflict) || len(conflict.Conflicts) != 1 || !strings.Contains(err.Error(), "awsclusters.infrastructure.cluster.hypershift.openshift.io/hc") {
			t.Fatalf("got %v, want a ConflictError naming the AWSCluster", err)
		}
		if diff := cmp.Diff(before, resourceVersions(ctx, t, c, ns)); diff != "" {
			t.Errorf("the namespace changed (-before +after):\n%s", diff)
		}
	})

	t.Run("unknown kind", func(t *testing.T) {
		crds, err := apiextensionsclient.NewForConfig(env.DirectConfig(env.AdminToken))
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: "widgets.infrastructure.cluster.x-k8s.io"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "infrastructure.cluster.x-k8s.io", Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTo(true)}}}},
			},
		}
		if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx := context.Background()
			_ = crds.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, crd.Name, metav1.DeleteOptions{})
			// Gone from discovery too, or the next run discovers widgets and fails listing them.
			if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
				_, err := c.kube.Discovery().ServerResourcesForGroupVersion("infrastructure.cluster.x-k8s.io/v1")
				return apierrors.IsNotFound(err), nil
			}); err != nil {
				t.Errorf("the Widget CRD stays in discovery: %v", err)
			}
		})
		widgets := schema.GroupVersionResource{Group: "infrastructure.cluster.x-k8s.io", Version: "v1", Resource: "widgets"}
		ns := newNamespace(ctx, t, c, "unknown")
		smallShape.create(ctx, t, c.dyn, c.kube, ns)
		if err := m.Adopt(ctx, ns); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1", "kind": "Widget",
				"metadata": map[string]any{"name": "w", "namespace": ns}}}
			_, err := c.dyn.Resource(widgets).Namespace(ns).Create(ctx, w, metav1.CreateOptions{})
			return err == nil, nil
		}); err != nil {
			t.Fatalf("creating a Widget: %v", err)
		}
		before := resourceVersions(ctx, t, c, ns)
		err = m.Migrate(ctx, ns)
		var unknown *migration.UnknownKindsError
		if !errors.As(err, &unknown) || !strings.Contains(err.Error(), "widgets.infrastructure.cluster.x-k8s.io (1 objects)") {
			t.Fatalf("got %v, want an UnknownKindsError naming widgets", err)
		}
		if diff := cmp.Diff(before, resourceVersions(ctx, t, c, ns)); diff != "" {
			t.Errorf("the namespace changed (-before +after):\n%s", diff)
		}
	})

	t.Run("not adopted", func(t *testing.T) {
		ns := newNamespace(ctx, t, c, "unadopted")
		smallShape.create(ctx, t, c.dyn, c.kube, ns)
		before := resourceVersions(ctx, t, c, ns)
		if err := m.Migrate(ctx, ns); err == nil || !strings.Contains(err.Error(), "adopt it first") {
			t.Fatalf("got %v, want an error asking to adopt the namespace", err)
		}
		if diff := cmp.Diff(before, resourceVersions(ctx, t, c, ns)); diff != "" {
			t.Errorf("the namespace changed (-before +after):\n%s", diff)
		}
	})
}

func ptrTo[T any](v T) *T { return &v }

// errKilled is what the killing transport returns once it has struck.
var errKilled = errors.New("killed by the test")

// killer is an http.RoundTripper that lets the first `after` mutating requests (any method but GET) reach
// the apiserver, then kills the run: the after-th request is sent and answered, but its answer is
// dropped, the run's context is cancelled, and every later request fails. With after 0 it only counts.
type killer struct {
	rt     http.RoundTripper
	after  int64
	count  *atomic.Int64
	cancel context.CancelFunc
}

func (k killer) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet {
		return k.rt.RoundTrip(req)
	}
	n := k.count.Add(1)
	if k.after > 0 && n > k.after {
		return nil, errKilled
	}
	resp, err := k.rt.RoundTrip(req)
	if n == k.after {
		k.cancel()
		if err == nil {
			resp.Body.Close()
		}
		return nil, errKilled
	}
	return resp, err
}

// killingConfig returns a config whose transport is a killer.
func killingConfig(after int64, count *atomic.Int64, cancel context.CancelFunc) *rest.Config {
	cfg := env.DirectConfig(env.AdminToken)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return killer{rt: rt, after: after, count: count, cancel: cancel}
	}
	return cfg
}

// state is a namespace's end state, independent of its name and of UIDs: every object of the shape's
// resources in both groups and every Secret with its content, and each ownerReference with whether it
// names the live object.
func state(ctx context.Context, t testing.TB, c clients, ns string) string {
	t.Helper()
	live := map[string]types.UID{}
	type entry struct {
		Content any
		Owners  []string
	}
	objs := map[string]metav1.Object{}
	contents := map[string]any{}
	for _, gvr := range shapeResources {
		for _, g := range []schema.GroupVersionResource{gvr, private(gvr)} {
			for name, u := range list(ctx, t, c, g, ns) {
				live[g.Group+"/"+u.GetKind()+"/"+name] = u.GetUID()
				objs[g.Group+"/"+g.Resource+"/"+name] = u
				contents[g.Group+"/"+g.Resource+"/"+name] = content(u)
			}
		}
	}
	secrets, err := c.kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range secrets.Items {
		s := &secrets.Items[i]
		objs["secrets/"+s.Name] = s
		contents["secrets/"+s.Name] = s.Data
	}
	out := map[string]entry{}
	for name, o := range objs {
		e := entry{Content: contents[name]}
		for _, ref := range o.GetOwnerReferences() {
			gv, _ := schema.ParseGroupVersion(ref.APIVersion)
			e.Owners = append(e.Owners, fmt.Sprintf("%s %s %s controller=%v live=%v", ref.APIVersion, ref.Kind, ref.Name,
				ref.Controller != nil && *ref.Controller, live[gv.Group+"/"+ref.Kind+"/"+ref.Name] == ref.UID))
		}
		out[name] = e
	}
	n, err := c.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out["namespace"] = entry{Content: []string{n.Labels[serving.Label], n.Annotations[migration.PhaseAnnotation], n.Annotations[migration.DirectionAnnotation]}}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), ns, "NS")
}

// TestKilledAfterEachCallAndResumed runs the migration of a small HyperShift-shaped namespace (killShape) once to
// count its mutating API calls, then, for each n, kills a run right after its n-th mutating call was
// answered (the answer lost, as when the process dies) and resumes it with a new Migrator: every end state
// is the uninterrupted run's. Reads change nothing, so a kill after any call is a kill after the last
// mutating call before it.
func TestKilledAfterEachCallAndResumed(t *testing.T) {
	ctx := context.Background()
	c := newClients(t)

	reference := newNamespace(ctx, t, c, "kill-ref")
	killShape.create(ctx, t, c.dyn, c.kube, reference)
	var calls atomic.Int64
	if err := newMigrator(t, killingConfig(0, &calls, func() {})).Adopt(ctx, reference); err != nil {
		t.Fatal(err)
	}
	calls.Store(0)
	if err := newMigrator(t, killingConfig(0, &calls, func() {})).Migrate(ctx, reference); err != nil {
		t.Fatal(err)
	}
	want := state(ctx, t, c, reference)
	total := calls.Load()
	t.Logf("an uninterrupted migration makes %d mutating calls", total)

	// Each kill is independent: run a few at once, as the machine allows.
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for n := int64(1); n <= total; n++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			ns := newNamespace(ctx, t, c, fmt.Sprintf("kill-%d", n))
			killShape.create(ctx, t, c.dyn, c.kube, ns)
			if err := newMigrator(t, nil).Adopt(ctx, ns); err != nil {
				t.Error(err)
				return
			}
			runCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			var count atomic.Int64
			err := newMigrator(t, killingConfig(n, &count, cancel)).Migrate(runCtx, ns)
			if err == nil {
				t.Errorf("kill after call %d: the run was not interrupted", n)
			}
			if err := newMigrator(t, nil).Migrate(ctx, ns); err != nil {
				t.Errorf("kill after call %d: resuming: %v", n, err)
				return
			}
			if diff := cmp.Diff(want, state(ctx, t, c, ns)); diff != "" {
				t.Errorf("kill after call %d: end state differs (-uninterrupted +resumed):\n%s", n, diff)
			}
		}()
	}
	wg.Wait()
}

// TestWriteThroughSlowProxyIsCopied writes a source straight at the apiserver once the namespace is
// served from the copies (as a proxy that follows the label later than the grace period would): the
// retiring phase copies the write instead of losing it.
func TestWriteThroughSlowProxyIsCopied(t *testing.T) {
	ctx := context.Background()
	c := newClients(t)
	ns := newNamespace(ctx, t, c, "slow")
	smallShape.create(ctx, t, c.dyn, c.kube, ns)
	wrote := false
	m, err := migration.New(migration.Options{Config: env.DirectConfig(env.AdminToken), Grace: -1, RetireTimeout: 90 * time.Second,
		Progress: func(e migration.Event) {
			if e.Phase != migration.PhaseRetiring || wrote {
				return
			}
			wrote = true
			patch := []byte(`{"metadata":{"labels":{"late":"write"}},"spec":{"replicas":5}}`)
			if _, err := c.dyn.Resource(machineDeployments).Namespace(ns).Patch(ctx, "np0", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Errorf("the late write: %v", err)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	adoptAndMigrate(ctx, t, m, ns)
	md, err := c.dyn.Resource(private(machineDeployments)).Namespace(ns).Get(ctx, "np0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	replicas, _, _ := unstructured.NestedInt64(md.Object, "spec", "replicas")
	if !wrote || replicas != 5 || md.GetLabels()["late"] != "write" {
		t.Errorf("the copy has replicas %d and labels %v after the late write (made: %v)", replicas, md.GetLabels(), wrote)
	}
	checkOwners(ctx, t, c, ns, translate.ToPrivate)
}

// reverse returns the opposite direction.
func reverse(dir translate.Direction) translate.Direction {
	if dir.String() == translate.ToPrivate.String() {
		return translate.ToUpstream
	}
	return translate.ToPrivate
}
