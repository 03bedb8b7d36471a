package migration

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/openshift/hypershift-capi-proxy/migration/serving"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// acks is what the proxies' acknowledging Leases say about one resourceVersion of a Namespace.
type acks struct {
	// live counts the Leases whose renewTime + leaseDurationSeconds is after now; acknowledged those of
	// them whose serving.AcknowledgedAnnotation is at or above the resourceVersion.
	live, acknowledged int
	// expired counts the Leases that are not live and not being deleted: a proxy that may still serve
	// but does not renew (or a Lease without renewTime or leaseDurationSeconds).
	expired int
}

// acknowledgementsOf counts leases (listed by serving.AcknowledgeLabel) as of now for the Namespace
// resourceVersion rv. A Lease being deleted (deletionTimestamp set) counts for nothing; an annotation
// that is not a resourceVersion (CompareResourceVersion fails) does not acknowledge.
func acknowledgementsOf(leases []coordinationv1.Lease, rv string, now time.Time) acks {
	var a acks
	for i := range leases {
		l := &leases[i]
		if l.DeletionTimestamp != nil {
			continue
		}
		s := l.Spec
		if s.RenewTime == nil || s.LeaseDurationSeconds == nil ||
			!s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds)*time.Second).After(now) {
			a.expired++
			continue
		}
		a.live++
		if c, err := resourceversion.CompareResourceVersion(l.Annotations[serving.AcknowledgedAnnotation], rv); err == nil && c >= 0 {
			a.acknowledged++
		}
	}
	return a
}

// done reports whether the wait may end: at least one live Lease, none expired, and every live one
// acknowledged. Without any Lease, the proxies do not acknowledge, and the whole grace period is what
// they are given.
func (a acks) done() bool {
	return a.live > 0 && a.expired == 0 && a.acknowledged == a.live
}

// String says what the Leases say, for the wait's event.
func (a acks) String() string {
	if a.live == 0 && a.expired == 0 {
		return "no proxy acknowledges"
	}
	s := fmt.Sprintf("%d of %d live proxies acknowledged", a.acknowledged, a.live)
	if a.expired > 0 {
		s += fmt.Sprintf(", %d expired Leases", a.expired)
	}
	return s
}

// waitFollowed waits after a change of the serving label that left the Namespace at resourceVersion rv,
// for the proxies to follow it: until every live acknowledging Lease reports rv or above (polled every
// ackPoll, cluster-wide, by serving.AcknowledgeLabel), or the grace period elapsed, whichever comes
// first; the whole grace period when the Leases say nothing (none, or one expired; see acks.done) or
// with Options.IgnoreAcknowledgements. Its event says what ended it. A failed list of the Leases (no
// permission, say) counts as no acknowledgement.
func (m *Migrator) waitFollowed(ctx context.Context, namespace string, dir translate.Direction, phase Phase, rv string) error {
	const what = "for proxies to follow the label"
	if m.opts.Grace <= 0 {
		return nil
	}
	if m.opts.IgnoreAcknowledgements || rv == "" {
		return m.waitUntil(ctx, namespace, dir, phase, what, time.Now().Add(m.opts.Grace))
	}
	start := time.Now()
	defer m.timed(namespace, "grace", start)
	grace := time.NewTimer(m.opts.Grace)
	defer grace.Stop()
	poll := time.NewTicker(ackPoll)
	defer poll.Stop()
	selector := labels.Set{serving.AcknowledgeLabel: serving.AcknowledgeLabelValue}.String()
	var last acks
	var lastErr error
	for {
		list, err := m.leases.Leases(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err == nil {
			last, lastErr = acknowledgementsOf(list.Items, rv, time.Now()), nil
			if last.done() {
				m.emit(Event{Namespace: namespace, Direction: dir.String(), Phase: phase, Step: "wait",
					Message: fmt.Sprintf("waited %s %s: acknowledged by %d proxies", time.Since(start).Round(time.Millisecond), what, last.acknowledged)})
				return nil
			}
		} else if ctx.Err() == nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-grace.C:
			why := last.String()
			if lastErr != nil {
				why = "listing the acknowledging Leases failed: " + lastErr.Error()
			}
			m.emit(Event{Namespace: namespace, Direction: dir.String(), Phase: phase, Step: "wait",
				Message: fmt.Sprintf("waited %s %s: grace period (%s)", m.opts.Grace, what, why)})
			return nil
		case <-poll.C:
		}
	}
}
