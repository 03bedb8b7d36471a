package migration

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/openshift/hypershift-capi-proxy/translate"
)

// retirePhase serves the namespace from the destination (writes still held), checks once more that every
// source has an up-to-date copy and that no reference to a source is left, then removes the sources
// without running their deletion logic: finalizers removed, deleted with propagationPolicy=Orphan (the
// garbage collector then removes the references still pointing at them instead of deleting the
// dependents) and a UID precondition. It returns when the garbage collector has removed them. held is
// copyPhase's scope (everyKind when the run resumed here): the destination side is listed in it, the
// source side whole, so that a source no copy was made of is found.
func (m *Migrator) retirePhase(ctx context.Context, namespace string, dir translate.Direction, held scope) error {
	if err := m.relabel(ctx, namespace, dir, rolesOf(dir).dstHeld, PhaseRetiring); err != nil {
		return err
	}
	// The proxies ended the namespace's watches when they followed the label: their clients' relists run
	// from here, beside the retirement.
	relisted := time.Now().Add(m.opts.RelistGrace)
	snap, err := m.snapshotOf(ctx, namespace, dir, scope{dst: held.dst})
	if err != nil {
		return err
	}
	if err := snap.check(namespace, true); err != nil {
		return err
	}
	// The copying phase verified, with writes held, that every copy is at its source's resourceVersion.
	// Since then only this phase writes the sources (their finalizers; the garbage collector orphaning
	// their dependents), so a resourceVersion that moved on says nothing here; a source without a copy
	// would be lost.
	for _, src := range snap.sources {
		if snap.copyOf(src) == nil {
			return fmt.Errorf("%s in %s has no copy although the namespace is served from the copies: it was created after the copies were verified, "+
				"by a writer that bypasses the proxies; it is left in place: move or delete it by hand, then run the migration again", src, namespace)
		}
	}
	// A write that reached a source through a proxy slower than the grace period (one still serving the
	// namespace from the source groups) is copied, not lost. Only content counts: this phase's own writes
	// and the garbage collector's change resourceVersions, finalizers and ownerReferences of the sources.
	copies, sources := snap.uidMap(), snap.sourceUIDs()
	for _, src := range snap.sources {
		c := snap.copyOf(src)
		if src.u.GetDeletionTimestamp() != nil || c.u.GetAnnotations()[SourceResourceVersionAnnotation] == src.u.GetResourceVersion() {
			continue
		}
		want, status, _ := desiredCopy(src, dir, copies, sources)
		if sameContent(want, status, c.u) {
			continue
		}
		if !equality.Semantic.DeepEqual(src.u.GetFinalizers(), c.u.GetFinalizers()) {
			return fmt.Errorf("%s in %s changed after it was copied, and its retirement had begun: it is left in place; compare it with its copy, then run the migration again", src, namespace)
		}
		if _, err := m.copyOne(ctx, namespace, snap, src, copies, sources, true); err != nil {
			return err
		}
	}
	if _, err := m.repoint(ctx, namespace, snap, false); err != nil {
		return err
	}
	orphan := metav1.DeletePropagationOrphan
	unfinalize := mustJSON(map[string]any{"metadata": map[string]any{"finalizers": nil}})
	retiring := time.Now()
	err = m.forEach(ctx, len(snap.sources), func(i int, done func() int) error {
		src := snap.sources[i]
		client := m.dynamic.Resource(src.kind.src).Namespace(namespace)
		if len(src.u.GetFinalizers()) > 0 {
			// Unconditional: a finalizer added since the read would run deletion logic just the same.
			if _, err := client.Patch(ctx, src.u.GetName(), types.MergePatchType, unfinalize, metav1.PatchOptions{}); ignoreNotFound(err) != nil {
				return fmt.Errorf("removing the finalizers of %s in %s: %w", src, namespace, err)
			}
		}
		if src.u.GetDeletionTimestamp() != nil {
			return nil
		}
		uid := src.u.GetUID()
		err := client.Delete(ctx, src.u.GetName(), metav1.DeleteOptions{PropagationPolicy: &orphan, Preconditions: &metav1.Preconditions{UID: &uid}})
		if ignoreNotFound(err) != nil {
			return fmt.Errorf("deleting %s in %s (orphaning its dependents): %w", src, namespace, err)
		}
		m.emit(Event{Namespace: namespace, Direction: dir.String(), Phase: PhaseRetiring, Step: "retire", Object: src.String(), Done: done(), Total: len(snap.sources)})
		return nil
	})
	if err != nil {
		return err
	}
	m.timed(namespace, "retire", retiring)
	// Writes stay held until RelistGrace after the proxies followed the label. They ended their clients'
	// watches then, and each client informer lists again on its own: a controller that acts once writes
	// are released with some caches from the destination and others still from the source (a Cluster at
	// its source's UID) writes what it derives from both. A real CAPI manager re-pointed a copied
	// MachineDeployment's ownerReference at its Cluster's retired source, and the garbage collector
	// deleted the MachineDeployment; it also created a second MachineSet beside the copied one.
	return m.waitUntil(ctx, namespace, dir, PhaseRetiring, "for clients' informers to list the namespace from the copies", relisted)
}

// resumePhase serves the namespace from the destination without holding writes. It returns the rest of
// the phase, which the caller runs once the next namespace may be held: unpausing what the migration
// paused and removing its annotations from the copies, waiting for the garbage collector to remove the
// retired objects, then recording PhaseComplete. held is copyPhase's scope (everyKind when the run resumed
// after it): the kinds of the copies and of the retired objects.
func (m *Migrator) resumePhase(ctx context.Context, namespace string, dir translate.Direction, held scope) (func(context.Context) error, error) {
	if err := m.setNamespace(ctx, namespace, rolesOf(dir).dst, dir.String(), PhaseResuming); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		// The copies are the sources of the reverse direction, the retired objects its destination side.
		snap, err := m.snapshotOf(ctx, namespace, reverse(dir), scope{src: held.dst, dst: held.src})
		if err != nil {
			return err
		}
		if err := m.unpause(ctx, namespace, dir, snap); err != nil {
			return err
		}
		if err := m.waitRetired(ctx, namespace, dir, snap.copies); err != nil {
			return err
		}
		return m.setNamespace(ctx, namespace, "", dir.String(), PhaseComplete)
	}, nil
}

// unpause removes CAPI's pause annotation from the copies (snap's sources) the migration paused, and the
// migration's annotations from every copy.
func (m *Migrator) unpause(ctx context.Context, namespace string, dir translate.Direction, snap *snapshot) error {
	defer m.timed(namespace, "unpause", time.Now())
	return m.forEach(ctx, len(snap.sources), func(i int, done func() int) error {
		c := snap.sources[i]
		annotations := c.u.GetAnnotations()
		remove := map[string]any{}
		for _, k := range []string{SourceUIDAnnotation, SourceResourceVersionAnnotation, PausedAnnotation} {
			if _, ok := annotations[k]; ok {
				remove[k] = nil
			}
		}
		if _, ok := annotations[PausedAnnotation]; ok {
			remove[CAPIPausedAnnotation] = nil
		}
		if len(remove) == 0 {
			return nil
		}
		patch := mustJSON(map[string]any{"metadata": map[string]any{"annotations": remove}})
		if _, err := m.dynamic.Resource(c.kind.src).Namespace(namespace).Patch(ctx, c.u.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}); ignoreNotFound(err) != nil {
			return fmt.Errorf("unpausing %s in %s: %w", c, namespace, err)
		}
		m.emit(Event{Namespace: namespace, Direction: dir.String(), Phase: PhaseResuming, Step: "unpause", Object: c.String(), Done: done(), Total: len(snap.sources)})
		return nil
	})
}

// sameContent reports whether a copy holds the content of want (a desired copy without its status) and
// status: labels, annotations but the migration's source annotations, and every top-level field but
// metadata.
func sameContent(want *unstructured.Unstructured, status any, copied *unstructured.Unstructured) bool {
	strip := func(u *unstructured.Unstructured) map[string]any {
		out := map[string]any{}
		for k, v := range u.Object {
			if k != "metadata" && k != "status" {
				out[k] = v
			}
		}
		annotations := map[string]string{}
		for k, v := range u.GetAnnotations() {
			if k != SourceUIDAnnotation && k != SourceResourceVersionAnnotation {
				annotations[k] = v
			}
		}
		out["metadata"] = map[string]any{"labels": u.GetLabels(), "annotations": annotations}
		return out
	}
	if status == nil {
		status = want.Object["status"] // a kind without the status subresource
	}
	if !equality.Semantic.DeepEqual(status, copied.Object["status"]) {
		return false
	}
	return equality.Semantic.DeepEqual(strip(want), strip(copied))
}

// waitRetired waits until the garbage collector has removed the retired objects: it removes each one's
// orphan finalizer once it has taken every remaining reference to it out of its dependents. That takes
// kube-controller-manager's garbage collector a few requests per object at its client's rate limit, so
// it is done once the namespace is served from the copies without holding writes. It reads one object
// at a time, every half second, the next one only once the previous is gone (one GET per poll however
// many namespaces wait at once), and gives up when none has gone for Options.RetireTimeout: the garbage
// collector's queue is shared by every namespace, so a namespace waits behind those retired before it.
func (m *Migrator) waitRetired(ctx context.Context, namespace string, dir translate.Direction, retired map[key]*object) error {
	var waiting []*object
	for _, o := range retired {
		if o.u.GetDeletionTimestamp() == nil {
			return fmt.Errorf("%s in %s was not retired: it is left in place; compare it with its copy, delete it by hand (propagationPolicy=Orphan), then run again", o, namespace)
		}
		waiting = append(waiting, o)
	}
	if len(waiting) == 0 {
		return nil
	}
	m.emit(Event{Namespace: namespace, Direction: dir.String(), Phase: PhaseResuming, Step: "wait", Total: len(waiting),
		Message: fmt.Sprintf("waiting for the garbage collector to remove %d retired objects", len(waiting))})
	progress := time.Now()
	defer m.timed(namespace, "gc", progress)
	err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for len(waiting) > 0 {
			o := waiting[0]
			_, err := m.metadata.Resource(o.kind.dst).Namespace(namespace).Get(ctx, o.u.GetName(), metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				waiting, progress = waiting[1:], time.Now()
			case err != nil:
				return false, err
			case time.Since(progress) > m.opts.RetireTimeout:
				return false, errRetireTimeout
			default:
				return false, nil
			}
		}
		return true, nil
	})
	if errors.Is(err, errRetireTimeout) {
		return fmt.Errorf("namespace %s: %d retired objects (%s, ...) are still there, none has gone for %s: is kube-controller-manager's garbage collector running?",
			namespace, len(waiting), waiting[0], m.opts.RetireTimeout)
	}
	return err
}

// errRetireTimeout ends waitRetired's poll.
var errRetireTimeout = errors.New("no retired object has gone for the retire timeout")
