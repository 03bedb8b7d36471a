package cutover

// Per-namespace serving modes: which API groups a namespace's mapped kinds are served from, as the
// Namespace label serving.Label says (package migration/serving holds the contract).

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	admissionregistrationinformers "k8s.io/client-go/informers/admissionregistration/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/openshift/hypershift-capi-proxy/migration/serving"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/metaonly"
	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
)

// Namespaces follows the serving mode of every namespace: fed with Namespaces' metadata (by a
// watch-backed informer, WatchNamespaces, or by Set and Delete in tests), it answers, per request, from
// which groups a namespace is served and whether writes to its mapped kinds are held.
//
// Only namespaces whose mode is not the default (no label, or serving.Private) and namespaces whose mode
// changed are kept, in an immutable snapshot replaced on every change: a request's lookup is one atomic
// load and one map lookup, and with no namespace labelled the map is empty.
//
// A label value that is not a serving.Mode holds writes and serves reads from the private groups: the
// proxy cannot tell where writes belong, and only a namespace labelled with an upstream mode is ever
// served from the upstream groups (the platform's own objects there stay unreachable).
//
// The label is followed only while it is guarded (SetGuarded: the admission policy serving.PolicyName
// lets only the migration's identity write it, see package serving): unguarded, any mode but
// serving.Private is taken as a value that is not a mode (writes held, reads from the private groups), so
// that whoever may patch Namespaces cannot point HyperShift's clients at the upstream groups. A change
// of the guard applies again to every namespace.
//
// Namespaces is safe for concurrent use. The zero value is not usable: use NewNamespaces.
type Namespaces struct {
	mu     sync.Mutex // serializes writers; readers load snap
	snap   atomic.Pointer[modes]
	synced atomic.Bool
	// guarded says whether the label is guarded (SetGuarded); written under mu.
	guarded bool
	// labels are the labels last Set of every namespace that has serving.Label, so that a change of the
	// guard is applied to them again; written under mu.
	labels map[string]labelled

	// metrics records the namespaces by mode, the held writes and the guard.
	metrics *metrics.Metrics
	// ack is told what Set and Delete applied (Acknowledge); nil for none. Set before following begins.
	ack Acknowledger
}

// An Acknowledger publishes which Namespaces a Namespaces applied (package proxy/acknowledge publishes
// a Lease, the contract of package migration/serving), so that the migration need not wait a fixed
// grace period for the proxy to follow a label change.
type Acknowledger interface {
	// Applied is called after Set or Delete applied a Namespace at resourceVersion (as the informer saw
	// it): its mode is in effect for requests from then on. changed says whether that namespace's mode
	// changed, or its mode holds writes (a migration is moving it): what a migration waits for, which
	// should be published promptly; other calls may wait for the next renewal. It is called with
	// Namespaces' lock held, and must not block.
	Applied(resourceVersion string, changed bool)
	// Register publishes the acknowledgements of a proxy that serves mapped kinds. WatchNamespaces calls
	// it once the first list of Namespaces is applied, and again after an error, until it returns nil,
	// before it marks them synced: until then mapped kinds are answered 503, so that a proxy that
	// serves them is always registered.
	Register(ctx context.Context) error
}

// Acknowledge sets the Acknowledger told what Set and Delete apply; call it before the first Set
// (before WatchNamespaces).
func (n *Namespaces) Acknowledge(a Acknowledger) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ack = a
}

// modes is one immutable view of the namespaces' modes.
type modes struct {
	// byName holds the namespaces whose mode is not serving.Private or whose mode changed since the proxy
	// started following them; any other namespace is served from the private groups.
	byName map[string]nsMode
	// upstream lists, sorted, the existing namespaces served from the upstream groups.
	upstream []string
	// labelled counts the namespaces served otherwise than serving.Private.
	labelled int
	// moved is the highest resourceVersion of a Namespace at a change of the groups it is served from
	// (to or from an upstream mode): a cluster-wide watch or exact list from before it is answered 410
	// Expired, and an open cluster-wide watch moves the namespace's objects then (watch.go).
	moved uint64
	// changed is cancelled when this view is replaced after a mode change (views replaced without one
	// share it, and change, with the view before them).
	changed context.Context
	change  context.CancelFunc
}

// labelled is a namespace's serving.Label value and its resourceVersion, as last Set.
type labelled struct{ value, resourceVersion string }

// nsMode is the serving mode of one namespace.
type nsMode struct {
	mode serving.Mode
	// unknown is the label's value when the proxy does not follow it (not a serving.Mode, or not
	// guarded); mode is then serving.PrivateHeld.
	unknown string
	// unguarded says the label is not followed because it is not guarded (SetGuarded), though it is a
	// serving.Mode.
	unguarded bool
	// expired is the Namespace's resourceVersion when the groups it is served from last changed (0 if
	// unknown): a watch, an exact list or a continued list of the namespace from before it is answered
	// 410 Expired. A change that only holds or releases writes leaves it.
	expired uint64
}

// same reports whether two namespaces are served alike (an unknown value is served as any other).
func (m nsMode) same(o nsMode) bool {
	return m.mode == o.mode && (m.unknown == "") == (o.unknown == "")
}

// sameGroups reports whether two namespaces are served from the same groups (whatever the holding of
// their writes): what a watch of the namespace streams, or a resourceVersion of it means, changes only
// when the groups do.
func (m nsMode) sameGroups(o nsMode) bool { return m.mode.Upstream() == o.mode.Upstream() }

// why says why a namespace's label is not followed, for logs and for the message of a held write.
func (m nsMode) why() string {
	if m.unguarded {
		return "not guarded: no ValidatingAdmissionPolicy and binding " + serving.PolicyName + " restrict who may write it"
	}
	return "not a serving mode"
}

// metricLabel is the mode label of the namespaces-by-mode metric (metrics.NamespaceModeChanged), "" for
// a namespace it does not count (unlabelled, or labelled serving.Private).
func (m nsMode) metricLabel() string {
	switch {
	case m.unknown != "":
		return metrics.UnknownMode
	case m.mode == serving.Private:
		return ""
	}
	return string(m.mode)
}

// NewNamespaces returns Namespaces that serve every namespace from the private groups until Set says
// otherwise, recording in m (nil records nothing) the namespaces by mode, the held writes and whether
// the label is guarded (package metrics).
func NewNamespaces(m *metrics.Metrics) *Namespaces {
	n := &Namespaces{labels: map[string]labelled{}, metrics: m}
	first := &modes{byName: map[string]nsMode{}}
	first.changed, first.change = context.WithCancel(context.Background())
	n.snap.Store(first)
	m.SetServingLabelGuarded(false)
	return n
}

// Synced reports whether the first list of Namespaces was applied (MarkSynced). Until then, requests of
// mapped kinds are answered 503 with Retry-After: the proxy cannot tell which groups serve them.
func (n *Namespaces) Synced() bool { return n.synced.Load() }

// MarkSynced records that every Namespace that existed when following began was applied with Set.
func (n *Namespaces) MarkSynced() { n.synced.Store(true) }

// Ready is a readiness check (healthz.Checker) that fails until MarkSynced.
func (n *Namespaces) Ready(*http.Request) error {
	if !n.Synced() {
		return errors.New("the namespaces' serving modes are not known yet")
	}
	return nil
}

// current returns the current view.
func (n *Namespaces) current() *modes { return n.snap.Load() }

// Upstream reports whether namespace is served from the upstream groups now (its serving mode as the
// last Set and SetGuarded left it).
func (n *Namespaces) Upstream(namespace string) bool {
	return n.current().mode(namespace).mode.Upstream()
}

// Set applies a Namespace's labels and resourceVersion (as the informer saw it).
func (n *Namespaces) Set(name, resourceVersion string, labels map[string]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	value, ok := labels[serving.Label]
	if ok {
		n.labels[name] = labelled{value: value, resourceVersion: resourceVersion}
	} else {
		delete(n.labels, name)
	}
	next := n.modeOf(value, ok)
	changed := n.apply(name, resourceVersion, next, false)
	n.applied(resourceVersion, changed || next.mode.Held())
}

// applied tells the Acknowledger, if any, that a Namespace was applied at resourceVersion. Called with
// mu held.
func (n *Namespaces) applied(resourceVersion string, changed bool) {
	if n.ack != nil {
		n.ack.Applied(resourceVersion, changed)
	}
}

// modeOf is the mode of a namespace whose serving.Label has value (ok false: no label), as the guard
// stands. Called with mu held.
func (n *Namespaces) modeOf(value string, ok bool) nsMode {
	if !ok {
		return nsMode{mode: serving.Private}
	}
	mode, err := serving.ModeOf(map[string]string{serving.Label: value})
	switch {
	case err != nil:
		return nsMode{mode: serving.PrivateHeld, unknown: value}
	case mode != serving.Private && !n.guarded:
		return nsMode{mode: serving.PrivateHeld, unknown: value, unguarded: true}
	}
	return nsMode{mode: mode}
}

// SetGuarded records whether serving.Label is guarded (serving.Guarded of the policy and binding the
// informer sees), and applies every namespace's label again, as changed at resourceVersion (that of the
// policy or binding whose change it is, so that lists and watches from before are expired as after a
// label change). A new Namespaces is unguarded.
func (n *Namespaces) SetGuarded(guarded bool, resourceVersion string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.guarded == guarded {
		return
	}
	n.guarded = guarded
	n.metrics.SetServingLabelGuarded(guarded)
	if guarded {
		klog.InfoS("The namespaces' serving label is guarded: following it", "label", serving.Label, "policy", serving.PolicyName)
	} else {
		klog.ErrorS(nil, "The namespaces' serving label is not guarded: holding the writes of every labelled namespace and serving its reads from the private groups until the admission policy and its binding are back",
			"label", serving.Label, "policy", serving.PolicyName, "labelled", len(n.labels))
	}
	rv := parseRV(resourceVersion)
	for name, l := range n.labels {
		n.apply(name, strconv.FormatUint(max(rv, parseRV(l.resourceVersion)), 10), n.modeOf(l.value, true), false)
	}
}

// Delete applies the deletion of a Namespace: it is served from the private groups again (a namespace
// created again under its name starts unlabelled).
func (n *Namespaces) Delete(name, resourceVersion string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.labels, name)
	n.applied(resourceVersion, n.apply(name, resourceVersion, nsMode{mode: serving.Private}, true))
}

// apply sets name's mode, and reports whether the groups it is served from or the holding of its
// writes changed. Called with mu held.
func (n *Namespaces) apply(name, resourceVersion string, next nsMode, deleted bool) bool {
	cur := n.current()
	prev, known := cur.byName[name]
	if !known {
		prev = nsMode{mode: serving.Private}
	}
	if prev.same(next) {
		if next.unknown != "" && (next.unknown != prev.unknown || next.unguarded != prev.unguarded) {
			klog.InfoS("Namespace label is not followed: holding writes, serving reads from the private groups",
				"namespace", name, "label", serving.Label, "value", next.unknown, "reason", next.why())
			n.replace(cur, name, nsMode{mode: prev.mode, unknown: next.unknown, unguarded: next.unguarded, expired: prev.expired}, false, cur.moved)
		}
		return false
	}
	rv := parseRV(resourceVersion)
	regrouped := !prev.sameGroups(next)
	next.expired = prev.expired
	if regrouped {
		next.expired = max(prev.expired, rv)
	}
	if next.unknown != "" {
		klog.InfoS("Namespace label is not followed: holding writes, serving reads from the private groups",
			"namespace", name, "label", serving.Label, "value", next.unknown, "reason", next.why())
	}
	klog.InfoS("Namespace serving mode changed", "namespace", name, "from", prev.metricLabel(), "to", next.metricLabel(),
		"deleted", deleted, "resourceVersion", resourceVersion)
	moved := cur.moved
	if regrouped {
		moved = max(moved, rv)
	}
	n.replace(cur, name, next, true, moved)
	n.metrics.NamespaceModeChanged(prev.metricLabel(), next.metricLabel())
	return true
}

// replace stores a copy of cur with name's mode set and moved as its moved; changed cancels cur's
// changed, ending the watches that cover name.
func (n *Namespaces) replace(cur *modes, name string, m nsMode, changed bool, moved uint64) {
	next := &modes{byName: make(map[string]nsMode, len(cur.byName)+1), moved: moved, changed: cur.changed, change: cur.change}
	for k, v := range cur.byName {
		next.byName[k] = v
	}
	if m.mode == serving.Private && m.unknown == "" && m.expired == 0 {
		delete(next.byName, name)
	} else {
		next.byName[name] = m
	}
	for k, v := range next.byName {
		if v.mode.Upstream() {
			next.upstream = append(next.upstream, k)
		}
		if v.metricLabel() != "" {
			next.labelled++
		}
	}
	sort.Strings(next.upstream)
	if changed {
		next.changed, next.change = context.WithCancel(context.Background())
	}
	n.snap.Store(next)
	if changed {
		cur.change()
	}
}

// mode returns namespace's mode in this view.
func (m *modes) mode(namespace string) nsMode {
	if v, ok := m.byName[namespace]; ok {
		return v
	}
	return nsMode{mode: serving.Private}
}

// errModeChanged is the cause (context.Cause) of a context of Namespaces.ended cancelled by a mode
// change.
var errModeChanged = errors.New("the namespace's serving mode changed")

// ended returns a context that ends with ctx, and is cancelled with the cause errModeChanged once
// namespace is served from other groups than in view m (once any namespace's mode changed if namespace
// is empty). A change that only holds or releases the namespace's writes does not end it: the watch
// streams the same objects, and every relist a watch's end causes is one more step of client-go's
// reflector backoff (800 ms doubling), which delays the relist a migration waits for when it moves the
// namespace between the groups.
//
// Nothing waits for that meanwhile, so that an open watch holds no goroutine for it: the mode is looked
// at again each time the view is replaced after a change (context.AfterFunc on its changed), and the
// callback is removed when ctx ends.
func (n *Namespaces) ended(ctx context.Context, m *modes, namespace string) context.Context {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &modeWatch{n: n, namespace: namespace, want: m.mode(namespace), end: func() { cancel(errModeChanged) }}
	w.arm(m)
	context.AfterFunc(ctx, w.disarm)
	return ctx
}

// modeWatch calls end once namespace is served from other groups than want (any change, for all
// namespaces).
type modeWatch struct {
	n         *Namespaces
	namespace string
	want      nsMode
	end       func()

	mu sync.Mutex
	// stop removes the callback on the current view; disarmed is set once the watch is over.
	stop     func() bool
	disarmed bool
}

// arm calls check once view m is replaced after a change (at once if it was already).
func (w *modeWatch) arm(m *modes) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.disarmed {
		w.stop = context.AfterFunc(m.changed, w.check)
	}
}

func (w *modeWatch) check() {
	cur := w.n.current()
	if w.namespace == "" || !cur.mode(w.namespace).sameGroups(w.want) {
		w.end()
		return
	}
	w.arm(cur)
}

func (w *modeWatch) disarm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.disarmed = true
	if w.stop != nil {
		w.stop()
	}
}

// countHeld counts a held write.
func (n *Namespaces) countHeld(gr schema.GroupResource) {
	n.metrics.HeldRequest(gr.Group, gr.Resource)
}

// parseRV parses a resourceVersion as kube-apiserver's etcd storage does (an etcd revision); anything
// else is 0.
func parseRV(rv string) uint64 {
	v, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// WatchNamespaces follows the Namespaces of the cluster cfg points at into n, with a metadata-only,
// watch-backed informer (client-go's metadatainformer: PartialObjectMetadata, no spec or status), until
// ctx ends, and whether their serving label is guarded (SetGuarded), with informers of the
// ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding serving.PolicyName (selected by name).
// The guard's informers sync before the Namespaces' starts, so that the first modes applied are
// final; n is marked synced once the Namespaces' first list is applied and its Acknowledger, if any
// (Acknowledge), registered. cfg's identity needs list and
// watch on namespaces (cluster-wide) and on those two objects (install.ProxyClusterRole).
func WatchNamespaces(ctx context.Context, cfg *rest.Config, n *Namespaces) error {
	client, err := metadata.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("namespaces: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("namespaces: %w", err)
	}
	guard, err := watchGuard(ctx, kube, n)
	if err != nil {
		return fmt.Errorf("namespaces: %w", err)
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	informer := metadatainformer.NewFilteredMetadataInformer(client, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	if err := informer.SetTransform(metaonly.NameAndLabels()); err != nil {
		return fmt.Errorf("namespaces: %w", err)
	}
	set := func(obj any) {
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
			n.Set(m.Name, m.ResourceVersion, m.Labels)
		}
	}
	registration, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj any) { set(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
				n.Delete(m.Name, m.ResourceVersion)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("namespaces: %w", err)
	}
	go func() {
		start := time.Now()
		if !cache.WaitForCacheSync(ctx.Done(), guard...) {
			return
		}
		go informer.RunWithContext(ctx)
		if !cache.WaitForCacheSync(ctx.Done(), registration.HasSynced) {
			return
		}
		if !n.register(ctx) {
			return
		}
		n.MarkSynced()
		klog.InfoS("Following the namespaces' serving modes", "label", serving.Label, "after", time.Since(start))
	}()
	return nil
}

// register calls the Acknowledger's Register, if there is one, until it succeeds (every
// registerRetry) or ctx ends; it reports whether it succeeded.
func (n *Namespaces) register(ctx context.Context) bool {
	n.mu.Lock()
	ack := n.ack
	n.mu.Unlock()
	if ack == nil {
		return true
	}
	for {
		err := ack.Register(ctx)
		if err == nil {
			return true
		}
		klog.ErrorS(err, "Publishing the proxy's acknowledgements failed: mapped kinds are answered 503 until it succeeds", "retryIn", registerRetry)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(registerRetry):
		}
	}
}

// registerRetry is how long register waits before it calls Register again after an error.
const registerRetry = 2 * time.Second

// watchGuard runs the informers of the admission policy and binding that guard the serving label, by
// name, and sets n's guard on every change of either; it returns their HasSynced.
func watchGuard(ctx context.Context, kube kubernetes.Interface, n *Namespaces) ([]cache.InformerSynced, error) {
	byName := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", serving.PolicyName).String()
	}
	policies := admissionregistrationinformers.NewFilteredValidatingAdmissionPolicyInformer(kube, 0, cache.Indexers{}, byName)
	bindings := admissionregistrationinformers.NewFilteredValidatingAdmissionPolicyBindingInformer(kube, 0, cache.Indexers{}, byName)
	update := func(obj any) {
		var policy *admissionregistrationv1.ValidatingAdmissionPolicy
		var binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
		if o, ok, _ := policies.GetStore().GetByKey(serving.PolicyName); ok {
			policy, _ = o.(*admissionregistrationv1.ValidatingAdmissionPolicy)
		}
		if o, ok, _ := bindings.GetStore().GetByKey(serving.PolicyName); ok {
			binding, _ = o.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
		}
		rv := ""
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if m, err := apimeta.Accessor(obj); err == nil {
			rv = m.GetResourceVersion()
		}
		n.SetGuarded(serving.Guarded(policy, binding), rv)
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: update, UpdateFunc: func(_, obj any) { update(obj) }, DeleteFunc: update}
	var synced []cache.InformerSynced
	for _, i := range []cache.SharedIndexInformer{policies, bindings} {
		r, err := i.AddEventHandler(handler)
		if err != nil {
			return nil, err
		}
		synced = append(synced, r.HasSynced)
	}
	for _, i := range []cache.SharedIndexInformer{policies, bindings} {
		go i.RunWithContext(ctx)
	}
	return synced, nil
}
