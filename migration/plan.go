package migration

import (
	"context"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openshift/hypershift-capi-proxy/migration/serving"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Plan is what a move of a namespace would do, read from the cluster without changing it.
type Plan struct {
	Namespace string
	// Direction is "ToPrivate" (Migrate) or "ToUpstream" (Rollback).
	Direction string
	// Mode, Phase and RecordedDirection are what the Namespace records now.
	Mode              serving.Mode
	Phase             Phase
	RecordedDirection string
	// Objects are the objects to move, owners first.
	Objects []PlannedObject
	// References are the ownerReferences to re-point, in the copies and in every other object of the
	// namespace.
	References []Reference
	// Conflicts and UnknownKinds would stop the move before it changes anything.
	Conflicts    []Conflict
	UnknownKinds []string
	// Problems are other reasons the move would stop (a missing destination CRD, a namespace that must be
	// adopted first, ...).
	Problems []string
}

// PlannedObject is one object to move.
type PlannedObject struct {
	// From is the source object's resource (at its CRD's storage version) and To its copy's.
	From, To schema.GroupVersionResource
	Name     string
	UID      types.UID
	// Action is "create", "update" (the copy is older than the source), "none" (copied already) or
	// "retire" (its deletion is pending).
	Action string
}

// Plan returns what Migrate (dir translate.ToPrivate) or Rollback (translate.ToUpstream) would do in the
// namespace now. It only reads.
func (m *Migrator) Plan(ctx context.Context, namespace string, dir translate.Direction) (*Plan, error) {
	st, err := m.namespaceState(ctx, namespace)
	if err != nil {
		return nil, err
	}
	p := &Plan{Namespace: namespace, Direction: dir.String(), Mode: st.mode, Phase: st.phase, RecordedDirection: st.direction}
	if ctx, err = m.withCRDs(ctx); err != nil {
		return nil, err
	}
	snap, err := m.snapshot(ctx, namespace, dir)
	if err != nil {
		return nil, err
	}
	r := rolesOf(dir)
	if err := m.checkGuard(ctx); err != nil {
		p.Problems = append(p.Problems, err.Error())
	}
	if toPrivate(dir) && !st.labelled && len(snap.sources) > 0 {
		p.Problems = append(p.Problems, fmt.Sprintf("the namespace has no %s label: adopt it first (migrate adopt)", serving.Label))
	}
	if (st.mode == r.srcHeld || st.mode == r.dstHeld) && st.direction != dir.String() {
		p.Problems = append(p.Problems, fmt.Sprintf("a %s move is at phase %s: finish it first", st.direction, st.phase))
	}
	p.UnknownKinds = snap.unknown
	p.Conflicts = snap.conflicts(st.phase == PhaseRetiring && st.direction == dir.String())
	copies, sources := snap.uidMap(), snap.sourceUIDs()
	for _, src := range snap.sources {
		po := PlannedObject{From: src.kind.src, To: src.kind.dst, Name: src.u.GetName(), UID: src.u.GetUID(), Action: "create"}
		if !src.kind.dstServed {
			p.Problems = append(p.Problems, fmt.Sprintf("%s: no CRD serves %s", src, src.kind.dst))
		}
		switch c := snap.copyOf(src); {
		case src.u.GetDeletionTimestamp() != nil:
			po.Action = "retire"
		case c == nil:
		case c.u.GetAnnotations()[SourceResourceVersionAnnotation] != src.u.GetResourceVersion():
			po.Action = "update"
		default:
			po.Action = "none"
		}
		p.Objects = append(p.Objects, po)
		for _, ref := range src.u.GetOwnerReferences() {
			if sources[ref.UID] {
				to := ref
				to.APIVersion, to.UID = dir.APIVersion(ref.APIVersion), copies[ref.UID]
				p.References = append(p.References, Reference{Object: resourceName(src.kind.dst, src.u.GetName()), From: ref, To: to})
			}
		}
	}
	others, err := m.repoint(ctx, namespace, snap, true)
	if err != nil {
		return nil, err
	}
	p.References = append(p.References, others...)
	return p, nil
}

// Print writes the plan for a person.
func (p *Plan) Print(w io.Writer) {
	fmt.Fprintf(w, "Namespace %s: %s=%s", p.Namespace, serving.Label, p.Mode)
	if p.Phase != PhaseNone {
		fmt.Fprintf(w, ", last move %s at phase %s", p.RecordedDirection, p.Phase)
	}
	fmt.Fprintf(w, "\nMove %s: %d objects, %d ownerReferences to re-point\n", p.Direction, len(p.Objects), len(p.References))
	for _, o := range p.Objects {
		fmt.Fprintf(w, "  %-6s %s -> %s (%s)\n", o.Action, resourceName(o.From, o.Name), resourceName(o.To, o.Name), o.From.Version)
	}
	if len(p.References) > 0 {
		fmt.Fprintln(w, "ownerReferences:")
		for _, r := range p.References {
			fmt.Fprintf(w, "  %s\n", r)
		}
	}
	var stops []string
	for _, c := range p.Conflicts {
		stops = append(stops, "conflict: "+c.String())
	}
	for _, k := range p.UnknownKinds {
		stops = append(stops, "kind the route table does not know: "+k)
	}
	stops = append(stops, p.Problems...)
	if len(stops) > 0 {
		fmt.Fprintf(w, "The move would stop before changing anything:\n  %s\n", strings.Join(stops, "\n  "))
	}
}

// Status is where a namespace is.
type Status struct {
	Namespace string
	Mode      serving.Mode
	// Labelled is false when the namespace has no serving label (it is served from the private groups).
	Labelled bool
	// Phase and Direction are those of the last (or running) move, PhaseNone and "" if none ran.
	Phase     Phase
	Direction string
	// Upstream and Private count the objects of the mapped kinds in the namespace in each set of groups;
	// Paused those the migration paused.
	Upstream, Private, Paused int
}

// Status reads where a namespace is.
func (m *Migrator) Status(ctx context.Context, namespace string) (*Status, error) {
	st, err := m.namespaceState(ctx, namespace)
	if err != nil {
		return nil, err
	}
	s := &Status{Namespace: namespace, Mode: st.mode, Labelled: st.labelled, Phase: st.phase, Direction: st.direction}
	if ctx, err = m.withCRDs(ctx); err != nil {
		return nil, err
	}
	for _, dir := range []translate.Direction{translate.ToPrivate, translate.ToUpstream} {
		snap, err := m.snapshot(ctx, namespace, dir)
		if err != nil {
			return nil, err
		}
		if toPrivate(dir) {
			s.Upstream = len(snap.sources)
		} else {
			s.Private = len(snap.sources)
		}
		for _, o := range snap.sources {
			if _, ok := o.u.GetAnnotations()[PausedAnnotation]; ok {
				s.Paused++
			}
		}
	}
	return s, nil
}
