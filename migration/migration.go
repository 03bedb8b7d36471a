package migration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	admissionregistrationclient "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/openshift/hypershift-capi-proxy/migration/serving"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

// Annotations the migration writes. Keys of the Namespace record its progress; keys of objects mark what
// it copied and paused.
const (
	annotationPrefix = "migration.capi.hypershift.openshift.io/"
	// PhaseAnnotation on the Namespace holds the Phase of the last (or running) move.
	PhaseAnnotation = annotationPrefix + "phase"
	// DirectionAnnotation on the Namespace holds the direction of that move: "ToPrivate" (Migrate) or
	// "ToUpstream" (Rollback), the names of translate.ToPrivate and translate.ToUpstream.
	DirectionAnnotation = annotationPrefix + "direction"
	// SourceUIDAnnotation on a copy holds the UID of the object it was copied from. A destination object
	// without it, or with another UID, is a conflict the migration never overwrites.
	SourceUIDAnnotation = annotationPrefix + "source-uid"
	// SourceResourceVersionAnnotation on a copy holds the resourceVersion of the source it was copied from,
	// which the verification before leaving the held mode compares.
	SourceResourceVersionAnnotation = annotationPrefix + "source-resource-version"
	// PausedAnnotation marks an object the migration paused (and unpauses at the end); an object a user
	// had paused before stays paused.
	PausedAnnotation = annotationPrefix + "paused"
	// CAPIPausedAnnotation is Cluster API's pause annotation (sigs.k8s.io/cluster-api/api/core/v1beta2
	// PausedAnnotation): CAPI's and the providers' controllers skip an object that has it.
	CAPIPausedAnnotation = "cluster.x-k8s.io/paused"
)

// Phase is the step a move of a namespace is at (PhaseAnnotation).
type Phase string

const (
	// PhaseNone: no move has run in the namespace.
	PhaseNone Phase = ""
	// PhasePausing: pausing the source objects; the namespace is served from the source groups.
	PhasePausing Phase = "Pausing"
	// PhaseCopying: copying to the destination and re-pointing ownerReferences; writes are held.
	PhaseCopying Phase = "Copying"
	// PhaseRetiring: served from the destination, writes held; removing the source objects.
	PhaseRetiring Phase = "Retiring"
	// PhaseResuming: served from the destination; unpausing the copies.
	PhaseResuming Phase = "Resuming"
	// PhaseComplete: done.
	PhaseComplete Phase = "Complete"
)

// Phases lists every Phase but PhaseNone, in order.
var Phases = []Phase{PhasePausing, PhaseCopying, PhaseRetiring, PhaseResuming, PhaseComplete}

// DefaultGrace is how long the migration waits after each change of the serving label for proxies'
// informers to follow it, at most: the wait ends once every proxy acknowledged the change (package
// migration/serving; Options.IgnoreAcknowledgements).
const DefaultGrace = 5 * time.Second

// DefaultRelistGrace is how long the migration keeps writes held, counted from the moment the proxies
// followed the change of groups (PhaseRetiring, which ends the namespace's watches with 410 Expired), for
// the clients whose watches ended to list the namespace again from the copies. client-go's reflector
// lists again after its backoff: 800 ms with a jitter of up to as much again for the first end in two
// minutes (k8s.io/client-go/tools/cache, defaultBackoffInit, defaultBackoffJitter, defaultBackoffReset),
// and a move ends a namespace's watches once (the proxies end them only when the groups change, not when
// writes are held or released); then the list itself.
const DefaultRelistGrace = 3 * time.Second

// ackPoll is how often the wait after a change of the serving label lists the proxies' acknowledging
// Leases.
const ackPoll = 100 * time.Millisecond

// DefaultRetireTimeout is how long the migration waits for the garbage collector to remove one more of
// the retired sources (the orphan finalizer, which kube-controller-manager's garbage collector handles)
// before it gives up.
const DefaultRetireTimeout = 2 * time.Minute

// Options configure a Migrator.
type Options struct {
	// Config talks straight to kube-apiserver, not through the proxy, with credentials that may read,
	// create, update and delete the mapped kinds of both groups, read CRDs, patch Namespaces, and list and
	// patch every namespaced resource (to re-point ownerReferences), and list leases cluster-wide (the
	// proxies' acknowledgements; without it every wait is the whole grace period).
	Config *rest.Config
	// Routes is the route table; nil uses the generated one (zz_generated/routes).
	Routes *translate.Table
	// Grace is the wait after each change of the serving label; 0 is DefaultGrace, a negative value does
	// not wait (tests without proxies). After the two changes that hold writes (to the source's and to the
	// destination's held mode) it is a bound: the wait ends as soon as every live acknowledging Lease
	// (serving.AcknowledgeLabel, in any namespace) reports the Namespace's new resourceVersion, unless
	// IgnoreAcknowledgements. The wait for clients' informers before writes are released is RelistGrace.
	Grace time.Duration
	// RelistGrace is how long writes stay held after the proxies followed the change to the destination's
	// held mode (the end of that wait), for the clients whose watches they ended to list the namespace
	// again from the copies: fixed, since nothing reports those lists. Retiring the sources runs inside
	// it; writes are released once both are over. 0 is DefaultRelistGrace (no wait if Grace is negative:
	// no proxy serves), a negative value does not wait.
	RelistGrace time.Duration
	// IgnoreAcknowledgements waits the whole grace period after every change of the serving label, as
	// if no proxy acknowledged: for a rollout of the proxies in which some that publish no Lease (older
	// ones) still serve, whose acknowledgement the others' would otherwise stand in for. Config's
	// credentials need list on leases (cluster-wide) unless it is set; without them every wait is whole.
	IgnoreAcknowledgements bool
	// RetireTimeout bounds the wait for the garbage collector to remove one more retired object (the wait
	// fails when none has gone for this long); 0 is DefaultRetireTimeout.
	RetireTimeout time.Duration
	// Overlap is how many namespaces' waits for the garbage collector MigrateNamespaces and
	// RollbackNamespaces let run beside the next namespace's move; 0 is DefaultOverlap.
	Overlap int
	// Progress, if set, is called with every step, one call at a time (steps on several objects run in
	// parallel; each call returns before the next begins).
	Progress func(Event)
	// Metrics, if set, records moves (NewMetrics).
	Metrics *Metrics
	// Log receives structured logs: each event at V(1), how long each step took at V(2) ("timing"); the
	// zero Logger discards them.
	Log logr.Logger
}

// Event is one step of a move, for a progress display.
type Event struct {
	Namespace string
	// Direction is "ToPrivate" or "ToUpstream".
	Direction string
	Phase     Phase
	// Step names what is done: "pause", "label", "copy", "status", "repoint", "verify", "retire",
	// "unpause", "wait".
	Step string
	// Object is "<resource>.<group>/<name>" (or "<resource>/<name>" of the core group) of the object the
	// step acted on, if any.
	Object string
	// Done of Total objects of the step (0 of 0 where the step does not count).
	Done, Total int
	// Message says what happened, for a log line.
	Message string
}

// KeysAndValues returns the event as the key/value pairs of a structured log line (logr, klog.InfoS):
// namespace, direction, phase and step, then object and done/total where the step has them.
func (e Event) KeysAndValues() []any {
	kv := []any{"namespace", e.Namespace, "direction", e.Direction, "phase", e.Phase, "step", e.Step}
	if e.Object != "" {
		kv = append(kv, "object", e.Object)
	}
	if e.Total > 0 {
		kv = append(kv, "done", e.Done, "total", e.Total)
	}
	return kv
}

// Migrator moves namespaces. It is safe for concurrent use on different namespaces; two moves of one
// namespace at once are not supported.
type Migrator struct {
	opts      Options
	table     *translate.Table
	kube      corev1client.CoreV1Interface
	admission admissionregistrationclient.AdmissionregistrationV1Interface
	leases    coordinationv1client.CoordinationV1Interface
	dynamic   dynamic.Interface
	metadata  metadata.Interface
	crds      apiextensionsclient.Interface
	discovery discovery.DiscoveryInterface
	log       logr.Logger
	// emitting serializes emit.
	emitting sync.Mutex
}

// New returns a Migrator with the clients of opts.Config.
func New(opts Options) (*Migrator, error) {
	if opts.Config == nil {
		return nil, errors.New("migration: Options.Config is required")
	}
	m := &Migrator{opts: opts, table: opts.Routes, log: opts.Log}
	if m.table == nil {
		m.table = translate.NewTable(routes.Routes)
	}
	if m.opts.Grace == 0 {
		m.opts.Grace = DefaultGrace
	}
	if m.opts.RelistGrace == 0 {
		m.opts.RelistGrace = DefaultRelistGrace
		if m.opts.Grace < 0 {
			m.opts.RelistGrace = -1
		}
	}
	if m.opts.RetireTimeout == 0 {
		m.opts.RetireTimeout = DefaultRetireTimeout
	}
	cfg := rest.CopyConfig(opts.Config)
	var err error
	if m.kube, err = corev1client.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if m.admission, err = admissionregistrationclient.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if m.leases, err = coordinationv1client.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if m.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if m.metadata, err = metadata.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if m.crds, err = apiextensionsclient.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if m.discovery, err = discovery.NewDiscoveryClientForConfig(cfg); err != nil {
		return nil, err
	}
	return m, nil
}

// Migrate moves the namespace's objects from the upstream groups to the private groups, or finishes a
// migration an earlier run began. The namespace must be labelled serving.Upstream (Adopt) or be in a
// migration already. It returns nil at PhaseComplete, also if there was nothing to do.
func (m *Migrator) Migrate(ctx context.Context, namespace string) error {
	return m.move(ctx, namespace, translate.ToPrivate)
}

// Rollback moves the namespace's objects from the private groups back to the upstream groups, with the
// same guarantees as Migrate.
func (m *Migrator) Rollback(ctx context.Context, namespace string) error {
	return m.move(ctx, namespace, translate.ToUpstream)
}

// move runs a move of one namespace to its end, the wait for the garbage collector included.
func (m *Migrator) move(ctx context.Context, namespace string, dir translate.Direction) (err error) {
	start := time.Now()
	defer func() { m.opts.Metrics.observeRun(dir, start, err) }()
	rest, err := m.run(ctx, namespace, dir)
	if err != nil || rest == nil {
		return err
	}
	return rest(ctx)
}

// Adopt labels a namespace that holds CAPI objects in the upstream groups serving.Upstream, so that the
// proxies serve it from there until it is migrated. A namespace without the label is served from the
// private groups, so Adopt refuses one that holds objects there; one labelled Upstream already is left
// alone.
func (m *Migrator) Adopt(ctx context.Context, namespace string) error {
	if err := m.checkGuard(ctx); err != nil {
		return err
	}
	ns, err := m.kube.Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if v, ok := ns.Labels[serving.Label]; ok {
		if serving.Mode(v) == serving.Upstream {
			return nil
		}
		return fmt.Errorf("namespace %s is labelled %s=%s already: only an unlabelled namespace is adopted", namespace, serving.Label, v)
	}
	snap, err := m.snapshot(ctx, namespace, translate.ToUpstream)
	if err != nil {
		return err
	}
	if len(snap.sources) > 0 {
		return fmt.Errorf("namespace %s holds %d objects in the private groups (%s, ...), from which it is served: it cannot be adopted",
			namespace, len(snap.sources), snap.sources[0])
	}
	return m.setNamespace(ctx, namespace, serving.Upstream, "", PhaseNone)
}

// ErrUnguarded is wrapped by the error of Adopt, Migrate and Rollback (errors.Is) when the admission
// policy that guards serving.Label is missing: proxies do not follow a label anyone who may patch
// Namespaces could write (package serving), so a move would hold the namespace's writes and never serve
// it from the groups it labels.
var ErrUnguarded = errors.New("the namespaces' serving label is not guarded")

// checkGuard returns an error wrapping ErrUnguarded unless the ValidatingAdmissionPolicy
// serving.PolicyName and its binding guard serving.Label (serving.Guarded).
func (m *Migrator) checkGuard(ctx context.Context) error {
	policy, err := m.admission.ValidatingAdmissionPolicies().Get(ctx, serving.PolicyName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		policy, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("reading the ValidatingAdmissionPolicy %s: %w", serving.PolicyName, err)
	}
	binding, err := m.admission.ValidatingAdmissionPolicyBindings().Get(ctx, serving.PolicyName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		binding, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("reading the ValidatingAdmissionPolicyBinding %s: %w", serving.PolicyName, err)
	}
	if !serving.Guarded(policy, binding) {
		return fmt.Errorf("%w: install the ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding %s (config/serving, or package install's ServingPolicy) naming this identity: "+
			"without them the proxies hold every labelled namespace's writes", ErrUnguarded, serving.PolicyName)
	}
	return nil
}

// roles are the four modes of one direction.
type roles struct {
	src, srcHeld, dstHeld, dst serving.Mode
}

func rolesOf(dir translate.Direction) roles {
	if toPrivate(dir) {
		return roles{serving.Upstream, serving.UpstreamHeld, serving.PrivateHeld, serving.Private}
	}
	return roles{serving.Private, serving.PrivateHeld, serving.UpstreamHeld, serving.Upstream}
}

// run moves a namespace in direction dir, resuming from what the cluster records, until its writes are
// no longer held (prepare, then hold). What is left, unpausing the copies, the wait for the garbage
// collector to remove the retired objects and PhaseComplete, is rest (nil if nothing is left); the
// caller runs it.
func (m *Migrator) run(ctx context.Context, namespace string, dir translate.Direction) (rest func(context.Context) error, err error) {
	if ctx, err = m.withRun(ctx); err != nil {
		return nil, err
	}
	p, err := m.prepare(ctx, namespace, dir)
	if err != nil || p.done {
		return nil, err
	}
	return m.hold(ctx, p)
}

// withRun reads what a run (or a wave of runs) reads once: the CRDs and the namespaced resources.
func (m *Migrator) withRun(ctx context.Context) (context.Context, error) {
	ctx, err := m.withCRDs(ctx)
	if err != nil {
		return nil, err
	}
	return m.withResources(ctx)
}

// prepared is a namespace prepare made ready for hold.
type prepared struct {
	namespace string
	dir       translate.Direction
	st        nsState
	// done: nothing to move (PhaseComplete was reported).
	done bool
}

// prepare does the part of a move before writes are held, which MigrateNamespaces runs for the next
// namespace while the previous one is held: the guard check, the namespace's state, and pausing the
// source objects if the move begins here (at PhasePausing). A namespace at the destination with no move
// to finish is done (PhaseComplete reported), unless it holds objects in the upstream groups without
// having been adopted (an error).
func (m *Migrator) prepare(ctx context.Context, namespace string, dir translate.Direction) (*prepared, error) {
	r := rolesOf(dir)
	start := time.Now()
	if err := m.checkGuard(ctx); err != nil {
		return nil, err
	}
	st, err := m.namespaceState(ctx, namespace)
	if err != nil {
		return nil, err
	}
	m.timed(namespace, "prepare", start)
	p := &prepared{namespace: namespace, dir: dir, st: st}
	switch st.mode {
	case r.src:
		// Whatever a move in the other direction left here (paused objects of an aborted run, its annotations
		// on the objects it was unpausing) is what this move starts from.
		if err := m.pause(ctx, namespace, dir); err != nil {
			return nil, err
		}
	case r.srcHeld, r.dstHeld:
		if st.direction != dir.String() {
			return nil, fmt.Errorf("namespace %s is %s by a %s move at phase %s: finish it first (the other command)", namespace, st.mode, reverse(dir), st.phase)
		}
	case r.dst:
		if st.phase != PhaseNone && st.phase != PhaseComplete {
			break
		}
		// Nothing moved: make sure nothing is left on the source side that this run should have moved.
		if toPrivate(dir) && !st.labelled {
			snap, err := m.snapshot(ctx, namespace, dir)
			if err != nil {
				return nil, err
			}
			if len(snap.sources) > 0 {
				return nil, fmt.Errorf("namespace %s has no %s label but holds %d objects in the upstream groups (%s, ...): adopt it first (migrate adopt) so that proxies serve them from there",
					namespace, serving.Label, len(snap.sources), snap.sources[0])
			}
		}
		m.opts.Metrics.setPhase(namespace, PhaseComplete)
		m.emit(Event{Namespace: namespace, Direction: dir.String(), Phase: PhaseComplete, Message: "nothing to do"})
		p.done = true
	default:
		return nil, fmt.Errorf("namespace %s: unexpected mode %q", namespace, st.mode)
	}
	return p, nil
}

// hold runs the held part of a prepared move: copying, retiring, and serving the namespace from the
// destination without holding writes (PhaseResuming). It returns resumePhase's rest.
func (m *Migrator) hold(ctx context.Context, p *prepared) (rest func(context.Context) error, err error) {
	namespace, dir, st, r := p.namespace, p.dir, p.st, rolesOf(p.dir)
	held := everyKind
	switch st.mode {
	case r.src, r.srcHeld:
		if held, err = m.copyPhase(ctx, namespace, dir); err != nil {
			return nil, err
		}
		fallthrough
	case r.dstHeld:
		if err := m.retirePhase(ctx, namespace, dir, held); err != nil {
			return nil, err
		}
	}
	return m.resumePhase(ctx, namespace, dir, held)
}

// nsState is what the Namespace records.
type nsState struct {
	mode      serving.Mode
	labelled  bool
	phase     Phase
	direction string
}

func (m *Migrator) namespaceState(ctx context.Context, namespace string) (nsState, error) {
	ns, err := m.kube.Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if err != nil {
		return nsState{}, fmt.Errorf("reading namespace %s: %w", namespace, err)
	}
	return stateOf(ns)
}

func stateOf(ns *corev1.Namespace) (nsState, error) {
	mode, err := serving.ModeOf(ns.Labels)
	if err != nil {
		return nsState{}, fmt.Errorf("namespace %s: %w", ns.Name, err)
	}
	_, labelled := ns.Labels[serving.Label]
	return nsState{mode: mode, labelled: labelled, phase: Phase(ns.Annotations[PhaseAnnotation]),
		direction: ns.Annotations[DirectionAnnotation]}, nil
}

// setNamespace sets the serving label (unless mode is ""), and the direction and phase annotations (unless
// direction is ""), in one merge patch.
func (m *Migrator) setNamespace(ctx context.Context, namespace string, mode serving.Mode, direction string, phase Phase) error {
	_, err := m.patchNamespace(ctx, namespace, mode, direction, phase)
	return err
}

// patchNamespace is setNamespace, returning the Namespace's resourceVersion after the patch.
func (m *Migrator) patchNamespace(ctx context.Context, namespace string, mode serving.Mode, direction string, phase Phase) (string, error) {
	meta := map[string]any{}
	if mode != "" {
		meta["labels"] = map[string]any{serving.Label: string(mode)}
	}
	if direction != "" {
		meta["annotations"] = map[string]any{PhaseAnnotation: string(phase), DirectionAnnotation: direction}
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return "", err
	}
	ns, err := m.kube.Namespaces().Patch(ctx, namespace, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return "", fmt.Errorf("updating namespace %s (%s=%s, phase %s): %w", namespace, serving.Label, mode, phase, err)
	}
	if phase != PhaseNone {
		m.opts.Metrics.setPhase(namespace, phase)
	}
	m.emit(Event{Namespace: namespace, Direction: direction, Phase: phase, Step: "label", Message: fmt.Sprintf("namespace %s=%s", serving.Label, mode)})
	return ns.ResourceVersion, nil
}

// relabel sets the serving label and phase, then waits for proxies to follow: until every proxy
// acknowledged the Namespace's new resourceVersion, or the grace period (waitFollowed). When it returns,
// the proxies serve the namespace in mode.
func (m *Migrator) relabel(ctx context.Context, namespace string, dir translate.Direction, mode serving.Mode, phase Phase) error {
	rv, err := m.patchNamespace(ctx, namespace, mode, dir.String(), phase)
	if err != nil {
		return err
	}
	return m.waitFollowed(ctx, namespace, dir, phase, rv)
}

// waitUntil waits until deadline, the end of a grace period (the phase contract: proxies' informers
// follow the label within Grace, and their clients' informers list again within RelistGrace once a proxy
// ended their watches); what it waits for goes into the event's message. A deadline passed does not wait.
func (m *Migrator) waitUntil(ctx context.Context, namespace string, dir translate.Direction, phase Phase, what string, deadline time.Time) error {
	d := time.Until(deadline)
	if d <= 0 {
		return nil
	}
	d = d.Round(time.Millisecond)
	m.emit(Event{Namespace: namespace, Direction: dir.String(), Phase: phase, Step: "wait", Message: fmt.Sprintf("waiting %s %s", d, what)})
	defer m.timed(namespace, "grace", time.Now())
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// timed logs at V(2) how long a step of a namespace's move took: "timing" with namespace, step
// ("prepare", "snapshot", "pause", "grace", "copy", "discovery", "repoint", "retire", "unpause", "gc") and
// seconds since start, to find where a move spends its time (docs/performance.md, the fleet).
func (m *Migrator) timed(namespace, step string, start time.Time) {
	if m.log.GetSink() == nil {
		return
	}
	m.log.V(2).Info("timing", "namespace", namespace, "step", step, "seconds", time.Since(start).Seconds())
}

func (m *Migrator) emit(e Event) {
	m.emitting.Lock()
	defer m.emitting.Unlock()
	if m.log.GetSink() != nil {
		msg := e.Message
		if msg == "" {
			msg = e.Step
		}
		m.log.V(1).Info(msg, e.KeysAndValues()...)
	}
	if m.opts.Progress != nil {
		m.opts.Progress(e)
	}
}

// ignoreNotFound returns nil for a NotFound error.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// toPrivate reports whether dir is translate.ToPrivate (a Direction holds a map: compare by name).
func toPrivate(dir translate.Direction) bool { return dir.String() == translate.ToPrivate.String() }

// reverse returns the opposite direction.
func reverse(dir translate.Direction) translate.Direction {
	if toPrivate(dir) {
		return translate.ToUpstream
	}
	return translate.ToPrivate
}
