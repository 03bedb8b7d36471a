package migration

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openshift/hypershift-capi-proxy/translate"
)

// kind is one mapped kind as the server stores it on the source side of a move.
type kind struct {
	// upstream is the kind's upstream GroupKind (the route table's key).
	upstream schema.GroupKind
	// route is the route at the source CRD's storage version.
	route *translate.Route
	// src and dst are the resources at that version in the source and destination groups.
	src, dst schema.GroupVersionResource
	// dstServed is false when no destination CRD serves that version.
	dstServed bool
}

// object is one object of a mapped kind.
type object struct {
	kind *kind
	u    *unstructured.Unstructured
}

// String is "<resource>.<group>/<name>" on the object's side.
func (o *object) String() string {
	gvr := o.kind.src
	if o.u.GetAPIVersion() != "" && !strings.HasPrefix(o.u.GetAPIVersion(), gvr.Group+"/") {
		gvr = o.kind.dst
	}
	return resourceName(gvr, o.u.GetName())
}

func resourceName(gvr schema.GroupVersionResource, name string) string {
	if gvr.Group == "" {
		return gvr.Resource + "/" + name
	}
	return gvr.Resource + "." + gvr.Group + "/" + name
}

// key identifies an object across the groups: its upstream kind and its name.
type key struct {
	kind schema.GroupKind
	name string
}

// snapshot is what one namespace holds in the mapped kinds, read at one moment.
type snapshot struct {
	dir   translate.Direction
	kinds []*kind
	// sources are the source objects, owners before their dependents.
	sources []*object
	// copies are the destination objects by key.
	copies map[key]*object
	// unknown lists kinds in the source groups the route table does not know that have objects in the
	// namespace ("<resource>.<group> (N objects)").
	unknown []string
}

// copyOf returns the copy of a source object, if its SourceUIDAnnotation names the source.
func (s *snapshot) copyOf(src *object) *object {
	c := s.copies[key{src.kind.upstream, src.u.GetName()}]
	if c == nil || c.u.GetAnnotations()[SourceUIDAnnotation] != string(src.u.GetUID()) {
		return nil
	}
	return c
}

// uidMap maps the UID of every source object that has a copy to the copy's UID.
func (s *snapshot) uidMap() map[types.UID]types.UID {
	out := map[types.UID]types.UID{}
	for _, src := range s.sources {
		if c := s.copyOf(src); c != nil {
			out[src.u.GetUID()] = c.u.GetUID()
		}
	}
	return out
}

// sourceUIDs is the set of the source objects' UIDs.
func (s *snapshot) sourceUIDs() map[types.UID]bool {
	out := make(map[types.UID]bool, len(s.sources))
	for _, src := range s.sources {
		out[src.u.GetUID()] = true
	}
	return out
}

// Conflict is a destination object the migration will not overwrite: it has no SourceUIDAnnotation (it
// was not copied by the migration), or the annotation names an object that is no longer a source.
type Conflict struct {
	// Object is "<resource>.<group>/<name>" of the destination object.
	Object string
	// Reason says why.
	Reason string
}

func (c Conflict) String() string { return c.Object + ": " + c.Reason }

// ConflictError reports destination objects the migration will not overwrite. Nothing was changed for
// them; an operator decides (deletes the stray object, or moves it away) and runs the migration again.
type ConflictError struct {
	Namespace string
	Conflicts []Conflict
}

func (e *ConflictError) Error() string {
	parts := make([]string, len(e.Conflicts))
	for i, c := range e.Conflicts {
		parts[i] = c.String()
	}
	return fmt.Sprintf("namespace %s: %d objects in the destination groups the migration did not copy and will not overwrite: %s",
		e.Namespace, len(e.Conflicts), strings.Join(parts, "; "))
}

// UnknownKindsError reports kinds in the source groups that the route table does not know and that have
// objects in the namespace: the migration cannot translate them, so it moves nothing.
type UnknownKindsError struct {
	Namespace string
	Kinds     []string
}

func (e *UnknownKindsError) Error() string {
	return fmt.Sprintf("namespace %s holds objects of kinds the route table does not know: %s (regenerate the route table for their provider, or move them away)",
		e.Namespace, strings.Join(e.Kinds, ", "))
}

// conflicts returns the destination objects that are not copies of the current sources. With retired, a
// copy whose source is gone is no conflict: the retiring phase removed it.
func (s *snapshot) conflicts(retired bool) []Conflict {
	srcs := map[key]*object{}
	for _, src := range s.sources {
		srcs[key{src.kind.upstream, src.u.GetName()}] = src
	}
	var out []Conflict
	for k, c := range s.copies {
		uid, ok := c.u.GetAnnotations()[SourceUIDAnnotation]
		src := srcs[k]
		switch {
		case !ok && src != nil:
			out = append(out, Conflict{c.String(), fmt.Sprintf("exists without %s; the source %s has the same name", SourceUIDAnnotation, src)})
		case !ok:
			out = append(out, Conflict{c.String(), fmt.Sprintf("exists without %s: it was not copied by the migration", SourceUIDAnnotation)})
		case src == nil && retired:
		case src == nil:
			out = append(out, Conflict{c.String(), fmt.Sprintf("a copy of %s, which is no longer in the source groups (deleted after it was copied?)", uid)})
		case uid != string(src.u.GetUID()):
			out = append(out, Conflict{c.String(), fmt.Sprintf("a copy of %s, but the source %s is %s", uid, src, src.u.GetUID())})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Object < out[j].Object })
	return out
}

// check returns an UnknownKindsError, a ConflictError or an error for a kind whose destination CRD is
// missing, in that order, or nil. retired is conflicts'.
func (s *snapshot) check(namespace string, retired bool) error {
	if len(s.unknown) > 0 {
		return &UnknownKindsError{Namespace: namespace, Kinds: s.unknown}
	}
	if c := s.conflicts(retired); len(c) > 0 {
		return &ConflictError{Namespace: namespace, Conflicts: c}
	}
	for _, src := range s.sources {
		if !src.kind.dstServed {
			return fmt.Errorf("namespace %s: %s: no CRD serves %s: install the %s CRDs first",
				namespace, src, src.kind.dst.GroupVersion().WithResource(src.kind.dst.Resource), groupSide(reverse(s.dir)))
		}
	}
	return nil
}

func groupSide(dir translate.Direction) string {
	if toPrivate(dir) {
		return "upstream"
	}
	return "private"
}

// scope limits a snapshot to some kinds, by their upstream GroupKind: src on the source side, dst on the
// destination side; a nil set lists every mapped kind on that side (and, on the source side, counts the
// objects of the kinds the route table does not know). Within a held window only the migration writes
// the kinds it moves, so once one snapshot there listed every kind, the later ones list the kinds it
// found (seen) instead of every mapped kind, most of them empty.
type scope struct {
	src, dst map[schema.GroupKind]bool
}

// everyKind lists every mapped kind on both sides.
var everyKind = scope{}

// seen returns the kinds that have objects in the snapshot, on either side.
func (s *snapshot) seen() map[schema.GroupKind]bool {
	out := map[schema.GroupKind]bool{}
	for _, src := range s.sources {
		out[src.kind.upstream] = true
	}
	for k := range s.copies {
		out[k.kind] = true
	}
	return out
}

// snapshot reads the CRDs of both groups and every object of the mapped kinds in the namespace.
func (m *Migrator) snapshot(ctx context.Context, namespace string, dir translate.Direction) (*snapshot, error) {
	return m.snapshotOf(ctx, namespace, dir, everyKind)
}

// snapshotOf is snapshot of the kinds in sc.
func (m *Migrator) snapshotOf(ctx context.Context, namespace string, dir translate.Direction, sc scope) (*snapshot, error) {
	defer m.timed(namespace, "snapshot", time.Now())
	crdList, err := m.listCRDs(ctx)
	if err != nil {
		return nil, err
	}
	dstCRDs := map[string]*apiextensionsv1.CustomResourceDefinition{}
	var srcCRDs []*apiextensionsv1.CustomResourceDefinition
	for _, crd := range crdList {
		switch {
		case dir.Maps(crd.Spec.Group):
			if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
				srcCRDs = append(srcCRDs, crd)
			}
		case reverse(dir).Maps(crd.Spec.Group):
			dstCRDs[crd.Name] = crd
		}
	}
	s := &snapshot{dir: dir, copies: map[key]*object{}}
	var unknown []schema.GroupVersionResource
	for _, crd := range srcCRDs {
		version := storageVersion(crd)
		src := schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}
		up := src
		if !toPrivate(dir) {
			up.Group = dir.Group(src.Group)
		}
		route, ok := m.table.ByUpstream(up)
		if !ok {
			unknown = append(unknown, src)
			continue
		}
		k := &kind{upstream: route.UpstreamGVK().GroupKind(), route: route, src: src, dst: route.Private}
		if !toPrivate(dir) {
			k.dst = route.Upstream
		}
		k.dstServed = serves(dstCRDs[k.dst.Resource+"."+k.dst.Group], k.dst.Version)
		s.kinds = append(s.kinds, k)
	}
	sort.Slice(s.kinds, func(i, j int) bool { return s.kinds[i].src.String() < s.kinds[j].src.String() })

	// List every kind on both sides, a few at a time: most lists are empty, and the apiserver answers
	// them faster in parallel than one by one.
	type result struct {
		objs []*object
		err  error
	}
	srcResults, dstResults := make([]result, len(s.kinds)), make([]result, len(s.kinds))
	unknownCounts := make([]int, len(unknown))
	unknownErrs := make([]error, len(unknown))
	var jobs []func()
	if sc.src != nil {
		unknown = nil
	}
	for i, k := range s.kinds {
		if sc.src == nil || sc.src[k.upstream] {
			jobs = append(jobs, func() {
				srcResults[i].objs, srcResults[i].err = m.listObjects(ctx, namespace, k, k.src)
			})
		}
		if k.dstServed && (sc.dst == nil || sc.dst[k.upstream]) {
			jobs = append(jobs, func() {
				dstResults[i].objs, dstResults[i].err = m.listObjects(ctx, namespace, k, k.dst)
			})
		}
	}
	for i, gvr := range unknown {
		jobs = append(jobs, func() {
			list, err := m.metadata.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				unknownErrs[i] = fmt.Errorf("listing %s: %w", gvr.GroupResource(), err)
				return
			}
			unknownCounts[i] = len(list.Items)
		})
	}
	parallel(8, jobs)
	var sources []*object
	for i := range s.kinds {
		if err := srcResults[i].err; err != nil {
			return nil, err
		}
		if err := dstResults[i].err; err != nil {
			return nil, err
		}
		sources = append(sources, srcResults[i].objs...)
		for _, c := range dstResults[i].objs {
			s.copies[key{c.kind.upstream, c.u.GetName()}] = c
		}
	}
	for i, gvr := range unknown {
		if unknownErrs[i] != nil {
			return nil, unknownErrs[i]
		}
		if unknownCounts[i] > 0 {
			s.unknown = append(s.unknown, fmt.Sprintf("%s (%d objects)", gvr.GroupResource(), unknownCounts[i]))
		}
	}
	s.sources = ownersFirst(sources)
	return s, nil
}

// crdsKey is the context key of the CRDs a run read (withCRDs).
type crdsKey struct{}

// withCRDs reads the CRDs once for a whole run (or, from MigrateNamespaces and RollbackNamespaces, for a
// whole wave of namespaces): they are large (every CAPI and provider schema), and a run reads the
// namespace many times. A ctx that carries them already is returned as it is. A run does not expect CRDs
// to change while it runs; a CRD installed meanwhile is seen by the next run.
func (m *Migrator) withCRDs(ctx context.Context) (context.Context, error) {
	if _, ok := ctx.Value(crdsKey{}).([]*apiextensionsv1.CustomResourceDefinition); ok {
		return ctx, nil
	}
	crds, err := m.listCRDs(ctx)
	if err != nil {
		return nil, err
	}
	return context.WithValue(ctx, crdsKey{}, crds), nil
}

// listCRDs returns the CRDs withCRDs read for the run, or reads them.
func (m *Migrator) listCRDs(ctx context.Context) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	if crds, ok := ctx.Value(crdsKey{}).([]*apiextensionsv1.CustomResourceDefinition); ok {
		return crds, nil
	}
	list, err := m.crds.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing CustomResourceDefinitions: %w", err)
	}
	out := make([]*apiextensionsv1.CustomResourceDefinition, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// listObjects lists the objects of kind k at gvr (its source or destination resource) in the namespace.
func (m *Migrator) listObjects(ctx context.Context, namespace string, k *kind, gvr schema.GroupVersionResource) ([]*object, error) {
	var out []*object
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := m.dynamic.Resource(gvr).Namespace(namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing %s in %s: %w", gvr.GroupResource(), namespace, err)
		}
		for i := range list.Items {
			out = append(out, &object{kind: k, u: &list.Items[i]})
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
}

// storageVersion returns the name of the CRD's storage version.
func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// serves reports whether crd serves version.
func serves(crd *apiextensionsv1.CustomResourceDefinition, version string) bool {
	if crd == nil {
		return false
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == version && v.Served {
			return true
		}
	}
	return false
}

// ownersFirst orders objects so that every object comes after the objects among them that own it (by
// UID), keeping the given order otherwise (by kind, then name, as listed). Objects in an ownership cycle
// keep their order after the others.
func ownersFirst(objs []*object) []*object {
	sort.SliceStable(objs, func(i, j int) bool {
		if a, b := objs[i].kind.src.String(), objs[j].kind.src.String(); a != b {
			return a < b
		}
		return objs[i].u.GetName() < objs[j].u.GetName()
	})
	byUID := make(map[types.UID]int, len(objs))
	for i, o := range objs {
		byUID[o.u.GetUID()] = i
	}
	pending := make([]int, len(objs))
	dependents := make([][]int, len(objs))
	for i, o := range objs {
		for _, ref := range o.u.GetOwnerReferences() {
			if j, ok := byUID[ref.UID]; ok && j != i {
				pending[i]++
				dependents[j] = append(dependents[j], i)
			}
		}
	}
	out := make([]*object, 0, len(objs))
	done := make([]bool, len(objs))
	for progress := true; progress; {
		progress = false
		for i := range objs {
			if done[i] || pending[i] > 0 {
				continue
			}
			done[i], progress = true, true
			out = append(out, objs[i])
			for _, d := range dependents[i] {
				pending[d]--
			}
		}
	}
	for i := range objs {
		if !done[i] {
			out = append(out, objs[i])
		}
	}
	return out
}

// parallel runs the jobs, at most n at a time, and returns when all are done.
func parallel(n int, jobs []func()) {
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for _, job := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			job()
		}()
	}
	wg.Wait()
}
