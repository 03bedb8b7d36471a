package migration

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openshift/hypershift-capi-proxy/translate"
)

// maxVerifyRounds bounds the copy-and-verify rounds of the copying phase: each round copies again what
// changed in the source groups while it copied. Writes are held, so a second round finds nothing unless
// a writer bypasses the proxies.
const maxVerifyRounds = 5

// cleanedMetadata are the metadata fields the apiserver owns: a copy is a new object.
var cleanedMetadata = []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink"}

// desiredCopy returns the copy of src: the whole object with its group-carrying fields translated along its
// route's paths (dir.JSON over the unstructured content: no typed decode, explicit zero values and unknown
// fields kept), metadata cleaned of what the apiserver owns, SourceUIDAnnotation and
// SourceResourceVersionAnnotation set, and ownerReferences re-pointed with repointOwners. status is the
// object's status (nil if none), which the caller writes through the status subresource; complete is false
// when the copy of an owner is not known yet (it leaves that reference out).
func desiredCopy(src *object, dir translate.Direction, copies map[types.UID]types.UID, sources map[types.UID]bool) (obj *unstructured.Unstructured, status any, complete bool) {
	content := runtime.DeepCopyJSON(src.u.Object)
	meta, _ := content["metadata"].(map[string]any)
	// The owner references are re-pointed from the source's own, below.
	refs := src.u.GetOwnerReferences()
	content = dir.JSON(src.kind.route.Paths, content).(map[string]any)
	status, hasStatus := content["status"]
	if hasStatus && src.kind.route.HasSubresource("status") {
		delete(content, "status")
	} else {
		status = nil
	}
	for _, f := range cleanedMetadata {
		delete(meta, f)
	}
	obj = &unstructured.Unstructured{Object: content}
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[SourceUIDAnnotation] = string(src.u.GetUID())
	annotations[SourceResourceVersionAnnotation] = src.u.GetResourceVersion()
	obj.SetAnnotations(annotations)
	out, complete := repointOwners(refs, dir, copies, sources, true)
	obj.SetOwnerReferences(out)
	return obj, status, complete
}

// repointOwners returns refs with every reference to a source object (by UID: UIDs are unique in a
// cluster) pointing at its copy instead: the apiVersion's group translated, the copy's UID; kind, name,
// controller and blockOwnerDeletion kept. A reference whose copy is not in copies is left out, and complete
// is false. Other references are kept, with their apiVersion translated if translateOthers (the references
// of a copy are in the destination's terms).
func repointOwners(refs []metav1.OwnerReference, dir translate.Direction, copies map[types.UID]types.UID, sources map[types.UID]bool, translateOthers bool) (out []metav1.OwnerReference, complete bool) {
	complete = true
	for _, ref := range refs {
		if sources[ref.UID] {
			uid, ok := copies[ref.UID]
			if !ok {
				complete = false
				continue
			}
			ref.APIVersion, ref.UID = dir.APIVersion(ref.APIVersion), uid
		} else if translateOthers {
			ref.APIVersion = dir.APIVersion(ref.APIVersion)
		}
		out = append(out, ref)
	}
	return out, complete
}

// pause adds CAPI's pause annotation, with PausedAnnotation, to every source object that lacks it.
func (m *Migrator) pause(ctx context.Context, namespace string, dir translate.Direction) error {
	snap, err := m.snapshot(ctx, namespace, dir)
	if err != nil {
		return err
	}
	if err := snap.check(namespace, false); err != nil {
		return err
	}
	if err := m.setNamespace(ctx, namespace, "", dir.String(), PhasePausing); err != nil {
		return err
	}
	patch := mustJSON(map[string]any{"metadata": map[string]any{"annotations": map[string]any{CAPIPausedAnnotation: "", PausedAnnotation: "true"}}})
	defer m.timed(namespace, "pause", time.Now())
	return m.forEach(ctx, len(snap.sources), func(i int, done func() int) error {
		src := snap.sources[i]
		if _, paused := src.u.GetAnnotations()[CAPIPausedAnnotation]; paused {
			return nil
		}
		if src.u.GetDeletionTimestamp() != nil {
			return fmt.Errorf("%s in %s is being deleted: wait until its deletion is done, then run the migration again", src, namespace)
		}
		if _, err := m.dynamic.Resource(src.kind.src).Namespace(namespace).Patch(ctx, src.u.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("pausing %s in %s: %w", src, namespace, err)
		}
		m.emit(Event{Namespace: namespace, Direction: dir.String(), Phase: PhasePausing, Step: "pause", Object: src.String(), Done: done(), Total: len(snap.sources)})
		return nil
	})
}

// copyPhase holds writes in the source groups, copies every source object, re-points ownerReferences, and
// verifies that nothing changed in the source groups since it was copied, copying again what did. It
// returns the scope of the held window: the kinds its first snapshot, with writes held, found on either
// side.
func (m *Migrator) copyPhase(ctx context.Context, namespace string, dir translate.Direction) (scope, error) {
	if err := m.relabel(ctx, namespace, dir, rolesOf(dir).srcHeld, PhaseCopying); err != nil {
		return scope{}, err
	}
	held := everyKind
	for round := 1; ; round++ {
		snap, err := m.snapshotOf(ctx, namespace, dir, held)
		if err != nil {
			return scope{}, err
		}
		if err := snap.check(namespace, false); err != nil {
			return scope{}, err
		}
		if round == 1 {
			// Writes are held: only this move adds objects of the mapped kinds now, of the kinds found.
			seen := snap.seen()
			held = scope{src: seen, dst: seen}
		}
		if round > 1 && upToDate(snap) {
			m.emit(Event{Namespace: namespace, Direction: dir.String(), Phase: PhaseCopying, Step: "verify", Total: len(snap.sources),
				Done: len(snap.sources), Message: "every copy is at its source's resourceVersion"})
			return held, nil
		}
		if round > maxVerifyRounds {
			return scope{}, fmt.Errorf("namespace %s: the source objects still changed after %d rounds of copying while writes were held: does a writer bypass the proxies?", namespace, maxVerifyRounds)
		}
		if err := m.copyAll(ctx, namespace, snap); err != nil {
			return scope{}, err
		}
		// Every copy exists now: re-point the references to the sources everywhere in the namespace.
		if snap, err = m.snapshotOf(ctx, namespace, dir, held); err != nil {
			return scope{}, err
		}
		if _, err := m.repoint(ctx, namespace, snap, false); err != nil {
			return scope{}, err
		}
	}
}

// upToDate reports whether every source has a copy made from its current resourceVersion.
func upToDate(snap *snapshot) bool {
	for _, src := range snap.sources {
		c := snap.copyOf(src)
		if c == nil || c.u.GetAnnotations()[SourceResourceVersionAnnotation] != src.u.GetResourceVersion() {
			return false
		}
	}
	return true
}

// copyAll creates or updates the copy of every source object, owners first (the objects of one level of
// ownership in parallel), and writes its status.
func (m *Migrator) copyAll(ctx context.Context, namespace string, snap *snapshot) error {
	defer m.timed(namespace, "copy", time.Now())
	dir := snap.dir
	copies, sources := snap.uidMap(), snap.sourceUIDs()
	current := make(map[types.UID]*unstructured.Unstructured, len(snap.sources))
	done := 0
	for _, level := range levels(snap.sources) {
		got := make([]*unstructured.Unstructured, len(level))
		err := m.forEach(ctx, len(level), func(i int, _ func() int) error {
			var err error
			got[i], err = m.copyOne(ctx, namespace, snap, level[i], copies, sources, false)
			return err
		})
		// copyOne read copies; the level's results go in once it is done.
		for i, u := range got {
			if u != nil {
				copies[level[i].u.GetUID()] = u.GetUID()
				current[level[i].u.GetUID()] = u
			}
		}
		if err != nil {
			return err
		}
		done += len(level)
		m.emit(Event{Namespace: namespace, Direction: dir.String(), Phase: PhaseCopying, Step: "copy", Done: done, Total: len(snap.sources),
			Message: fmt.Sprintf("copied %d of %d objects", done, len(snap.sources))})
	}
	// A copy created before its owner's copy (an ownership cycle) left that reference out: it is known now.
	for _, src := range snap.sources {
		want, _, complete := desiredCopy(src, dir, copies, sources)
		if !complete {
			return fmt.Errorf("%s in %s: the copy of an owner is missing after copying", src, namespace)
		}
		got := current[src.u.GetUID()]
		if equality.Semantic.DeepEqual(got.GetOwnerReferences(), want.GetOwnerReferences()) {
			continue
		}
		if err := m.patchOwners(ctx, namespace, src.kind.dst, got.GetName(), got.GetResourceVersion(), want.GetOwnerReferences()); err != nil {
			return err
		}
	}
	return nil
}

// copyOne creates or updates the copy of src and writes its status, and returns the copy as the apiserver
// answered. With keepOwners an existing copy keeps its ownerReferences (the retiring phase: the garbage
// collector may have taken references to retired owners out of the source).
func (m *Migrator) copyOne(ctx context.Context, namespace string, snap *snapshot, src *object, copies map[types.UID]types.UID, sources map[types.UID]bool, keepOwners bool) (*unstructured.Unstructured, error) {
	dir := snap.dir
	if src.u.GetDeletionTimestamp() != nil {
		return nil, fmt.Errorf("%s in %s is being deleted while writes are held: it cannot be copied; run the migration again once it is gone", src, namespace)
	}
	want, status, _ := desiredCopy(src, dir, copies, sources)
	client := m.dynamic.Resource(src.kind.dst).Namespace(namespace)
	existing := snap.copyOf(src)
	if keepOwners && existing != nil {
		want.SetOwnerReferences(existing.u.GetOwnerReferences())
	}
	var got *unstructured.Unstructured
	var err error
	step := "copy"
	switch {
	case existing == nil:
		got, err = client.Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating %s in %s: %w (created since the namespace was read: run the migration again)", resourceName(src.kind.dst, want.GetName()), namespace, err)
		}
	case existing.u.GetAnnotations()[SourceResourceVersionAnnotation] != src.u.GetResourceVersion() ||
		!equality.Semantic.DeepEqual(existing.u.GetOwnerReferences(), want.GetOwnerReferences()):
		step = "update"
		want.SetResourceVersion(existing.u.GetResourceVersion())
		want.SetUID(existing.u.GetUID())
		got, err = client.Update(ctx, want, metav1.UpdateOptions{})
	default:
		got, step = existing.u, ""
	}
	if err != nil {
		return nil, fmt.Errorf("copying %s to %s in %s: %w", src, resourceName(src.kind.dst, want.GetName()), namespace, err)
	}
	if step != "" {
		m.opts.Metrics.copied(dir)
		m.emit(Event{Namespace: namespace, Direction: dir.String(), Phase: PhaseCopying, Step: step, Object: src.String()})
	}
	if status != nil && !equality.Semantic.DeepEqual(got.Object["status"], status) {
		withStatus := got.DeepCopy()
		withStatus.Object["status"] = status
		updated, err := client.UpdateStatus(ctx, withStatus, metav1.UpdateOptions{})
		if err != nil {
			// The copy exists: the caller records it before it returns the error.
			return got, fmt.Errorf("copying the status of %s in %s: %w", src, namespace, err)
		}
		got = updated
		m.emit(Event{Namespace: namespace, Direction: dir.String(), Phase: PhaseCopying, Step: "status", Object: src.String()})
	}
	return got, nil
}

// levels splits objects (ordered owners first) into levels of ownership: an object is one level below the
// deepest of its owners among them. Objects of one level do not own one another.
func levels(objs []*object) [][]*object {
	level := make(map[types.UID]int, len(objs))
	var out [][]*object
	for _, o := range objs {
		l := 0
		for _, ref := range o.u.GetOwnerReferences() {
			if ol, ok := level[ref.UID]; ok && ol+1 > l {
				l = ol + 1
			}
		}
		level[o.u.GetUID()] = l
		for len(out) <= l {
			out = append(out, nil)
		}
		out[l] = append(out[l], o)
	}
	return out
}

// forEach runs fn for i in [0, n), a few at a time (each is one or two requests to the apiserver, which
// answers them faster together), and returns the first error after all are done. done counts the calls
// that completed so far, for progress events.
func (m *Migrator) forEach(ctx context.Context, n int, fn func(i int, done func() int) error) error {
	var count atomic.Int64
	done := func() int { return int(count.Add(1)) }
	errs := make([]error, n)
	jobs := make([]func(), n)
	for i := range jobs {
		jobs[i] = func() {
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				return
			}
			errs[i] = fn(i, done)
		}
	}
	parallel(workers, jobs)
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// workers is how many requests a move sends at once.
const workers = 8

// patchOwners sets the ownerReferences of an object with a JSON merge patch, conditional on its
// resourceVersion when rv is not "" (a conflict means it changed since it was read: the caller reads it
// again).
func (m *Migrator) patchOwners(ctx context.Context, namespace string, gvr schema.GroupVersionResource, name, rv string, refs []metav1.OwnerReference) error {
	meta := map[string]any{"ownerReferences": refs}
	if rv != "" {
		meta["resourceVersion"] = rv
	}
	if _, err := m.metadata.Resource(gvr).Namespace(namespace).Patch(ctx, name, types.MergePatchType, mustJSON(map[string]any{"metadata": meta}), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("re-pointing the ownerReferences of %s in %s: %w", resourceName(gvr, name), namespace, err)
	}
	return nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
