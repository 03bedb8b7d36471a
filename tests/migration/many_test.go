package migration

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/openshift/hypershift-capi-proxy/migration"
	"github.com/openshift/hypershift-capi-proxy/migration/serving"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// windows records, from a Migrator's events, when each namespace's writes were held (from the label of
// PhaseCopying to the label of PhaseResuming), when it waited for the garbage collector (from the wait
// step of PhaseResuming to the label of PhaseComplete), and whether two namespaces were ever held at once.
type windows struct {
	mu       sync.Mutex
	first    map[string]time.Time
	held     map[string]time.Time // namespaces held now, since when
	released map[string]time.Time // when each namespace's writes were released
	heldFor  map[string]time.Duration
	gcSince  map[string]time.Time
	gcFor    map[string]time.Duration
	total    map[string]time.Duration // first event to PhaseComplete
	phase    map[string]migration.Phase
	since    map[string]time.Time
	inPhase  map[migration.Phase]time.Duration // summed over namespaces
	overlap  []string                          // "a while b": a became held while b was
}

func newWindows() *windows {
	return &windows{first: map[string]time.Time{}, held: map[string]time.Time{}, released: map[string]time.Time{}, heldFor: map[string]time.Duration{},
		gcSince: map[string]time.Time{}, gcFor: map[string]time.Duration{}, total: map[string]time.Duration{},
		phase: map[string]migration.Phase{}, since: map[string]time.Time{}, inPhase: map[migration.Phase]time.Duration{}}
}

// event is a migration.Options.Progress.
func (w *windows) event(e migration.Event) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.first[e.Namespace]; !ok {
		w.first[e.Namespace] = now
	}
	if p := w.phase[e.Namespace]; p != e.Phase {
		if p != "" {
			w.inPhase[p] += now.Sub(w.since[e.Namespace])
		}
		w.phase[e.Namespace], w.since[e.Namespace] = e.Phase, now
	}
	switch {
	case e.Step == "label" && e.Phase == migration.PhaseCopying:
		for other := range w.held {
			w.overlap = append(w.overlap, e.Namespace+" while "+other)
		}
		w.held[e.Namespace] = now
	case e.Step == "label" && e.Phase == migration.PhaseResuming:
		if since, ok := w.held[e.Namespace]; ok {
			w.heldFor[e.Namespace] += now.Sub(since)
			delete(w.held, e.Namespace)
		}
		w.released[e.Namespace] = now
	case e.Step == "wait" && e.Phase == migration.PhaseResuming:
		w.gcSince[e.Namespace] = now
	case e.Step == "label" && e.Phase == migration.PhaseComplete:
		if since, ok := w.gcSince[e.Namespace]; ok {
			w.gcFor[e.Namespace] += now.Sub(since)
		}
		w.total[e.Namespace] = now.Sub(w.first[e.Namespace])
	}
}

// TestMigrateNamespaces migrates several HyperShift-shaped namespaces in one call, as `migrate run -n
// a,b,c` does: each namespace's garbage-collector wait may overlap the next namespace's move, but no two
// namespaces' writes are ever held at once, every namespace reaches PhaseComplete with every object moved,
// and done reports each once.
func TestMigrateNamespaces(t *testing.T) {
	ctx := context.Background()
	c := newClients(t)
	w := newWindows()
	m, err := migration.New(migration.Options{Config: env.DirectConfig(env.AdminToken), Grace: -1, RetireTimeout: 90 * time.Second,
		Overlap: 2, Progress: w.event})
	if err != nil {
		t.Fatal(err)
	}
	var namespaces []string
	type seeded struct {
		objects map[string]*unstructured.Unstructured
		secrets map[string]types.UID
	}
	before := map[string]seeded{}
	for i := 0; i < 4; i++ {
		ns := newNamespace(ctx, t, c, "many")
		shape{nodePools: 1, machinesPerPool: 2}.create(ctx, t, c.dyn, c.kube, ns)
		if err := m.Adopt(ctx, ns); err != nil {
			t.Fatal(err)
		}
		namespaces = append(namespaces, ns)
		before[ns] = seeded{readShape(ctx, t, c, ns, translate.ToPrivate), secretsOf(ctx, t, c, ns)}
	}
	doneCalls := map[string]int{}
	if err := m.MigrateNamespaces(ctx, namespaces, func(ns string, err error) {
		doneCalls[ns]++
		if err != nil {
			t.Errorf("namespace %s: %v", ns, err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	for _, o := range w.overlap {
		t.Errorf("writes held in two namespaces at once: %s", o)
	}
	for _, ns := range namespaces {
		if doneCalls[ns] != 1 {
			t.Errorf("done called %d times for %s", doneCalls[ns], ns)
		}
		if _, ok := w.heldFor[ns]; !ok {
			t.Errorf("%s: writes were never held", ns)
		}
		checkNamespace(ctx, t, c, ns, serving.Private, translate.ToPrivate)
		checkMoved(ctx, t, c, ns, before[ns].objects, before[ns].secrets, translate.ToPrivate)
	}
}

// TestMigrateNamespacesStopsAtError migrates three namespaces of which the second cannot be migrated (it
// was never adopted): the first is migrated, the error names the second, and the third is not begun.
func TestMigrateNamespacesStopsAtError(t *testing.T) {
	ctx := context.Background()
	c := newClients(t)
	m := newMigrator(t, nil)
	var namespaces []string
	for i := 0; i < 3; i++ {
		ns := newNamespace(ctx, t, c, "many-stop")
		smallShape.create(ctx, t, c.dyn, c.kube, ns)
		if i != 1 {
			if err := m.Adopt(ctx, ns); err != nil {
				t.Fatal(err)
			}
		}
		namespaces = append(namespaces, ns)
	}
	var done []string
	err := m.MigrateNamespaces(ctx, namespaces, func(ns string, _ error) { done = append(done, ns) })
	if err == nil || !strings.Contains(err.Error(), "namespace "+namespaces[1]+":") || !strings.Contains(err.Error(), "adopt it first") {
		t.Fatalf("error %v, want one naming %s", err, namespaces[1])
	}
	if errors.Is(err, context.Canceled) {
		t.Errorf("error %v", err)
	}
	// done comes as each move ends, in no promised order: the second fails while the first unpauses.
	sort.Strings(done)
	want := []string{namespaces[0], namespaces[1]}
	sort.Strings(want)
	if strings.Join(done, ",") != strings.Join(want, ",") {
		t.Errorf("done for %v, want the first two", done)
	}
	checkNamespace(ctx, t, c, namespaces[0], serving.Private, translate.ToPrivate)
	st, err := m.Status(ctx, namespaces[2])
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode != serving.Upstream || st.Phase != migration.PhaseNone || st.Paused != 0 || st.Private != 0 {
		t.Errorf("the third namespace was touched: %+v", st)
	}
}

// TestMigrateNamespacesLeavesPreparedPaused migrates three namespaces of which the first fails once it
// is prepared (an admission policy refuses the label that holds its writes), while the second was
// prepared beside it: the second is left paused at PhasePausing and reported with ErrNotMoved, the third
// is not begun, and the same run, once the policy is gone, moves all three and loses nothing.
func TestMigrateNamespacesLeavesPreparedPaused(t *testing.T) {
	ctx := context.Background()
	c := newClients(t)
	m := newMigrator(t, nil)
	var namespaces []string
	before := map[string]map[string]*unstructured.Unstructured{}
	secrets := map[string]map[string]types.UID{}
	for i := 0; i < 3; i++ {
		ns := newNamespace(ctx, t, c, "many-paused")
		smallShape.create(ctx, t, c.dyn, c.kube, ns)
		if err := m.Adopt(ctx, ns); err != nil {
			t.Fatal(err)
		}
		namespaces = append(namespaces, ns)
		before[ns], secrets[ns] = readShape(ctx, t, c, ns, translate.ToPrivate), secretsOf(ctx, t, c, ns)
	}
	const message = "test: the first namespace is not held"
	name := "hold-" + namespaces[0]
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"namespaces"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("object.metadata.name != %q || !has(object.metadata.labels) || !(%q in object.metadata.labels) || object.metadata.labels[%q] != %q",
					namespaces[0], serving.Label, serving.Label, string(serving.UpstreamHeld)),
				Message: message,
			}},
		},
	}
	admission := c.kube.AdmissionregistrationV1()
	if _, err := admission.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	if _, err := admission.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The policy is in force once a dry run of the label it refuses is refused.
	probe := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, serving.Label, serving.UpstreamHeld))
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.kube.CoreV1().Namespaces().Patch(ctx, namespaces[0], types.MergePatchType, probe, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), message), nil
	}); err != nil {
		t.Fatalf("the policy is not in force: %v", err)
	}

	err := m.MigrateNamespaces(ctx, namespaces, nil)
	if err == nil || !strings.Contains(err.Error(), "namespace "+namespaces[0]+":") || !strings.Contains(err.Error(), message) {
		t.Fatalf("error %v, want one naming %s", err, namespaces[0])
	}
	if !errors.Is(err, migration.ErrNotMoved) || !strings.Contains(err.Error(), "namespace "+namespaces[1]+":") {
		t.Errorf("error %v, want ErrNotMoved for %s", err, namespaces[1])
	}
	for i, ns := range namespaces[:2] {
		st, err := m.Status(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode != serving.Upstream || st.Phase != migration.PhasePausing || st.Paused != len(before[ns]) || st.Private != 0 {
			t.Errorf("namespace %d: %+v, want every object paused in the upstream groups, served from there", i, st)
		}
	}
	st, err := m.Status(ctx, namespaces[2])
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode != serving.Upstream || st.Phase != migration.PhaseNone || st.Paused != 0 || st.Private != 0 {
		t.Errorf("the third namespace was touched: %+v", st)
	}

	if err := admission.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := admission.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.kube.CoreV1().Namespaces().Patch(ctx, namespaces[0], types.MergePatchType, probe, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil || !strings.Contains(err.Error(), message), nil
	}); err != nil {
		t.Fatalf("the policy is still in force: %v", err)
	}
	if err := m.MigrateNamespaces(ctx, namespaces, nil); err != nil {
		t.Fatal(err)
	}
	for _, ns := range namespaces {
		checkNamespace(ctx, t, c, ns, serving.Private, translate.ToPrivate)
		checkMoved(ctx, t, c, ns, before[ns], secrets[ns], translate.ToPrivate)
	}
}
