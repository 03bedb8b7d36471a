package migration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/openshift/hypershift-capi-proxy/translate"
)

// DefaultOverlap is how many namespaces' waits for the garbage collector MigrateNamespaces and
// RollbackNamespaces let run beside the next namespace's move when Options.Overlap is 0.
const DefaultOverlap = 8

// NamespaceDone is called by MigrateNamespaces and RollbackNamespaces once per namespace they began, when
// its move ended: err is nil once it reached PhaseComplete. Calls come one at a time, from any goroutine.
type NamespaceDone func(namespace string, err error)

// MigrateNamespaces migrates the namespaces (Migrate) in their order, pipelined, with one namespace's
// writes held at a time:
//   - the CRDs and the namespaced resources are read once for all of them;
//   - the next namespace is prepared (the guard check, its state, its objects paused: PhasePausing,
//     writes not held) while the previous one's writes are held;
//   - a namespace's move begins once the previous one's writes are no longer held (PhaseResuming), while
//     that one's copies are unpaused and the garbage collector removes its retired objects.
//
// So each namespace's writes are held for as long as when moved alone, and the work around the held
// windows (pausing, unpausing, the garbage collector's few requests per retired object at
// kube-controller-manager's client rate limit) overlaps the next moves. At most Options.Overlap
// namespaces wait for the garbage collector at once; the next move waits for a slot.
//
// It stops beginning namespaces at the first error (or when ctx ends), lets the moves begun finish, and
// returns every error, each naming its namespace (errors.Join). A namespace prepared while the previous
// one failed is left paused at PhasePausing, served from its source groups without holding writes, and
// reported with an error wrapping ErrNotMoved. done, if set, is called as each move ends. A namespace
// left in a phase is finished by running the same namespaces again. A namespace named twice is moved once.
func (m *Migrator) MigrateNamespaces(ctx context.Context, namespaces []string, done NamespaceDone) error {
	return m.moveNamespaces(ctx, namespaces, translate.ToPrivate, done)
}

// RollbackNamespaces rolls the namespaces back (Rollback), pipelined as MigrateNamespaces.
func (m *Migrator) RollbackNamespaces(ctx context.Context, namespaces []string, done NamespaceDone) error {
	return m.moveNamespaces(ctx, namespaces, translate.ToUpstream, done)
}

// ErrNotMoved is wrapped by MigrateNamespaces' and RollbackNamespaces' error for a namespace that was
// prepared (its objects paused) but not moved, because the namespace before it failed.
var ErrNotMoved = errors.New("paused but not moved: the namespace before it failed; run the migration again to finish it")

func (m *Migrator) moveNamespaces(ctx context.Context, namespaces []string, dir translate.Direction, done NamespaceDone) error {
	overlap := m.opts.Overlap
	if overlap <= 0 {
		overlap = DefaultOverlap
	}
	var (
		mu     sync.Mutex // serializes done and guards errs
		errs   []error
		wg     sync.WaitGroup
		slots  = make(chan struct{}, overlap)
		failed = make(chan struct{})
		once   sync.Once
	)
	finish := func(ns string, start time.Time, err error) {
		m.opts.Metrics.observeRun(dir, start, err)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("namespace %s: %w", ns, err))
			once.Do(func() { close(failed) })
		}
		if done != nil {
			done(ns, err)
		}
	}
	ctx, err := m.withRun(ctx)
	if err != nil {
		return err
	}
	// A namespace named twice is moved once: the second would be prepared from the state the cluster
	// recorded while the first was held.
	seen := map[string]bool{}
	var unique []string
	for _, ns := range namespaces {
		if !seen[ns] {
			seen[ns] = true
			unique = append(unique, ns)
		}
	}
	namespaces = unique
	type preparation struct {
		ns    string
		p     *prepared
		err   error
		start time.Time
	}
	begin := func(ns string) <-chan preparation {
		out := make(chan preparation, 1)
		start := time.Now()
		go func() {
			p, err := m.prepare(ctx, ns, dir)
			out <- preparation{ns, p, err, start}
		}()
		return out
	}
	var next <-chan preparation
	for i, ns := range namespaces {
		// A slot for this namespace's wait for the garbage collector, taken before it is held: a move
		// never waits for one with its writes held.
		select {
		case slots <- struct{}{}:
		case <-failed:
		case <-ctx.Done():
		}
		if isClosed(failed) || ctx.Err() != nil {
			break
		}
		if next == nil {
			next = begin(ns)
		}
		prep := <-next
		next = nil
		if prep.err != nil || prep.p.done {
			<-slots
			finish(ns, prep.start, prep.err)
			continue
		}
		if i+1 < len(namespaces) {
			next = begin(namespaces[i+1])
		}
		rest, err := m.hold(ctx, prep.p)
		if err != nil {
			<-slots
			finish(ns, prep.start, err)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := rest(ctx)
			<-slots
			finish(ns, prep.start, err)
		}()
	}
	if next != nil {
		// Prepared beside a namespace that failed (or as ctx ended): not moved.
		prep := <-next
		err := prep.err
		if err == nil && !prep.p.done {
			err = ErrNotMoved
		}
		finish(prep.ns, prep.start, err)
	}
	wg.Wait()
	if len(errs) == 0 && ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.Join(errs...)
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
