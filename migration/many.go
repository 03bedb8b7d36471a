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

// MigrateNamespaces migrates the namespaces (Migrate) in their order, pipelined: a namespace's move
// begins once the previous one's writes are no longer held and its copies are unpaused (PhaseResuming),
// while the garbage collector removes that one's retired objects. So only one namespace's writes are
// held at a time, each for as long as when moved alone, and the garbage collector's work (a few requests
// per retired object at kube-controller-manager's client rate limit, the longest part of a move) overlaps
// the next moves. At most Options.Overlap namespaces wait for the garbage collector at once; the next
// move waits for a slot.
//
// It stops beginning namespaces at the first error (or when ctx ends), lets the moves begun finish, and
// returns every error, each naming its namespace (errors.Join). done, if set, is called as each move ends.
// A namespace left in a phase is finished by running the same namespaces again.
func (m *Migrator) MigrateNamespaces(ctx context.Context, namespaces []string, done NamespaceDone) error {
	return m.moveNamespaces(ctx, namespaces, translate.ToPrivate, done)
}

// RollbackNamespaces rolls the namespaces back (Rollback), pipelined as MigrateNamespaces.
func (m *Migrator) RollbackNamespaces(ctx context.Context, namespaces []string, done NamespaceDone) error {
	return m.moveNamespaces(ctx, namespaces, translate.ToUpstream, done)
}

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
	for _, ns := range namespaces {
		// A slot for this namespace's wait for the garbage collector, taken before it begins: a move
		// never waits for one with its writes held.
		select {
		case slots <- struct{}{}:
		case <-failed:
		case <-ctx.Done():
		}
		if isClosed(failed) || ctx.Err() != nil {
			break
		}
		start := time.Now()
		rest, err := m.run(ctx, ns, dir)
		if err != nil || rest == nil {
			<-slots
			finish(ns, start, err)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := rest(ctx)
			<-slots
			finish(ns, start, err)
		}()
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
