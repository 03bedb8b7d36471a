package migration

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
)

// Reference is one ownerReference the move re-points from a source object to its copy.
type Reference struct {
	// Object is "<resource>.<group>/<name>" (or "<resource>/<name>") of the object holding the reference.
	Object string
	// From is the reference as it is; To the reference to the copy. To.UID is "" in a plan when the copy
	// does not exist yet.
	From, To metav1.OwnerReference
}

func (r Reference) String() string {
	uid := string(r.To.UID)
	if uid == "" {
		uid = "<the copy's UID>"
	}
	return fmt.Sprintf("%s: %s %s %s (%s) -> %s (%s)", r.Object, r.From.APIVersion, r.From.Kind, r.From.Name, r.From.UID, r.To.APIVersion, uid)
}

// mappedGroups are every upstream and private group: their objects are the sources and copies, whose
// references copyAll keeps.
var mappedGroups = func() map[string]bool {
	out := map[string]bool{}
	for _, g := range upstream.Groups {
		out[g.Upstream], out[g.Private] = true, true
	}
	return out
}()

// resourcesKey is the context key of the namespaced resources a run discovered (withResources).
type resourcesKey struct{}

// withResources discovers the namespaced resources (namespacedResources) once for a whole run or wave of
// namespaces, as withCRDs reads the CRDs: re-pointing runs twice per namespace. A ctx that carries them
// already is returned as it is; a resource served only from later in the run is seen by the next run.
func (m *Migrator) withResources(ctx context.Context) (context.Context, error) {
	if _, ok := ctx.Value(resourcesKey{}).([]schema.GroupVersionResource); ok {
		return ctx, nil
	}
	resources, err := m.namespacedResources(ctx)
	if err != nil {
		return nil, err
	}
	return context.WithValue(ctx, resourcesKey{}, resources), nil
}

// namespacedResources returns every namespaced resource the server serves (its preferred version of each
// group) that can be listed and patched, except those of the mapped groups and subresources: the ones
// withResources discovered for the run, or discovered now. A group whose discovery fails is an error: a
// dependent there could not be re-pointed.
func (m *Migrator) namespacedResources(ctx context.Context) ([]schema.GroupVersionResource, error) {
	if resources, ok := ctx.Value(resourcesKey{}).([]schema.GroupVersionResource); ok {
		return resources, nil
	}
	lists, err := m.discovery.ServerPreferredNamespacedResources()
	if err != nil {
		return nil, fmt.Errorf("discovering the namespaced resources (every one is searched for ownerReferences to re-point): %w", err)
	}
	var out []schema.GroupVersionResource
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return nil, err
		}
		if mappedGroups[gv.Group] {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerbs(r.Verbs, "list", "patch") {
				continue
			}
			out = append(out, gv.WithResource(r.Name))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

func hasVerbs(verbs metav1.Verbs, want ...string) bool {
	for _, w := range want {
		found := false
		for _, v := range verbs {
			found = found || v == w
		}
		if !found {
			return false
		}
	}
	return true
}

// repoint re-points every ownerReference to a source object in the objects of every namespaced resource
// outside the mapped groups (Secrets, ConfigMaps, HyperShift's kinds, ...) to the source's copy, and
// returns the references it changed (or, with dryRun, would change: then To.UID is the copy's, or "" if
// there is no copy yet). It fails if a source that is referenced has no copy (without dryRun).
func (m *Migrator) repoint(ctx context.Context, namespace string, snap *snapshot, dryRun bool) ([]Reference, error) {
	discovered := time.Now()
	resources, err := m.namespacedResources(ctx)
	if err != nil {
		return nil, err
	}
	m.timed(namespace, "discovery", discovered)
	defer m.timed(namespace, "repoint", time.Now())
	copies, sources := snap.uidMap(), snap.sourceUIDs()
	type result struct {
		refs []Reference
		err  error
	}
	results := make([]result, len(resources))
	jobs := make([]func(), len(resources))
	for i, gvr := range resources {
		jobs[i] = func() {
			results[i].refs, results[i].err = m.repointResource(ctx, namespace, snap, gvr, copies, sources, dryRun)
		}
	}
	parallel(8, jobs)
	var out []Reference
	for _, r := range results {
		if r.err != nil {
			return nil, r.err
		}
		out = append(out, r.refs...)
	}
	if !dryRun && len(out) > 0 {
		m.emit(Event{Namespace: namespace, Direction: snap.dir.String(), Phase: PhaseCopying, Step: "repoint",
			Message: fmt.Sprintf("re-pointed %d ownerReferences to the copies", len(out))})
	}
	return out, nil
}

// repointResource is repoint of one resource.
func (m *Migrator) repointResource(ctx context.Context, namespace string, snap *snapshot, gvr schema.GroupVersionResource,
	copies map[types.UID]types.UID, sources map[types.UID]bool, dryRun bool) ([]Reference, error) {
	client := m.metadata.Resource(gvr).Namespace(namespace)
	list, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing %s in %s to re-point ownerReferences: %w", gvr.GroupResource(), namespace, err)
	}
	var out []Reference
	for i := range list.Items {
		item := &list.Items[i]
		refs := item.GetOwnerReferences()
		if !refersTo(refs, sources) {
			continue
		}
		name := resourceName(gvr, item.GetName())
		for _, ref := range refs {
			if sources[ref.UID] {
				to := ref
				to.APIVersion, to.UID = snap.dir.APIVersion(ref.APIVersion), copies[ref.UID]
				out = append(out, Reference{Object: name, From: ref, To: to})
			}
		}
		if dryRun {
			continue
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			want, complete := repointOwners(item.GetOwnerReferences(), snap.dir, copies, sources, false)
			if !complete {
				return fmt.Errorf("%s in %s is owned by a source object that has no copy", name, namespace)
			}
			if equality.Semantic.DeepEqual(want, item.GetOwnerReferences()) {
				return nil
			}
			err := m.patchOwners(ctx, namespace, gvr, item.GetName(), item.GetResourceVersion(), want)
			if apierrors.IsConflict(err) {
				fresh, gerr := client.Get(ctx, item.GetName(), metav1.GetOptions{})
				if gerr != nil {
					return gerr
				}
				item = fresh
			}
			return err
		})
		if err = ignoreNotFound(err); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// refersTo reports whether a reference names one of the UIDs.
func refersTo(refs []metav1.OwnerReference, uids map[types.UID]bool) bool {
	for _, ref := range refs {
		if uids[ref.UID] {
			return true
		}
	}
	return false
}
