// Package acknowledge publishes which Namespaces a proxy has applied, so that the migration waits for
// the proxies to follow a change of the serving label instead of a fixed grace period (the contract of
// package migration/serving).
//
// A Publisher keeps one coordination.k8s.io/v1 Lease in the proxy's own namespace, labelled
// serving.AcknowledgeLabel: spec.holderIdentity names the proxy, spec.renewTime is renewed every
// Options.RenewEvery and spec.leaseDurationSeconds (Options.Duration) says how long it stays live
// without a renewal, an ownerReference names the proxy's Pod (when its UID is known) so that the garbage
// collector removes the Lease with the pod, and serving.AcknowledgedAnnotation holds the highest
// Namespace resourceVersion the proxy has applied (cutover.Namespaces calls Applied once a Namespace's
// mode is in effect for requests).
//
// Writes are coalesced: one at a time, each with the value current when it begins. A change of a
// namespace's mode (or an update of a namespace whose writes are held) asks for a write at once; any
// other Namespace event waits for the next renewal. The proxy's identity needs get, create, update and
// delete on leases in its namespace (install.AcknowledgeRole).
//
// The informer applies Namespaces in resourceVersion order while it watches; a relist (after its watch
// fell too far behind the apiserver) applies the listed ones in the list's order, so an acknowledgement
// written during one may cover a Namespace applied a moment after it.
package acknowledge

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/openshift/hypershift-capi-proxy/migration/serving"
)

// Defaults of Options.
const (
	// DefaultDuration is the Lease's spec.leaseDurationSeconds: a proxy that missed two renewals is
	// taken as gone (the migration then waits its whole grace period).
	DefaultDuration = 40 * time.Second
	// DefaultRenewEvery is how often the Lease is renewed.
	DefaultRenewEvery = 15 * time.Second
)

// retryAfter is how long a failed write waits before it is tried again (besides the renewals).
const retryAfter = time.Second

// Options configure a Publisher.
type Options struct {
	// Namespace and Name of the Lease; both required.
	Namespace, Name string
	// PodName and PodUID name the proxy's Pod, the Lease's owner (a v1 Pod ownerReference); without
	// either, the Lease has no ownerReference.
	PodName string
	PodUID  types.UID
	// HolderIdentity is spec.holderIdentity; empty is PodName, or Name without one.
	HolderIdentity string
	// Duration is spec.leaseDurationSeconds, in whole seconds; 0 is DefaultDuration.
	Duration time.Duration
	// RenewEvery is how often the Lease is renewed; 0 is DefaultRenewEvery.
	RenewEvery time.Duration
}

// Publisher publishes a proxy's acknowledgements (see the package comment). It implements
// cutover.Acknowledger. It is safe for concurrent use.
type Publisher struct {
	leases coordinationv1client.LeaseInterface
	opts   Options
	// kick asks Run for a write (capacity 1: requests coalesce).
	kick chan struct{}

	mu sync.Mutex
	// applied is the highest resourceVersion Applied was given ("" before the first).
	applied string

	// writing serializes writes; the fields below are written under it.
	writing sync.Mutex
	// lease is the Lease as last written or read (nil: read it first).
	lease *coordinationv1.Lease
	// published is the applied value the last write published.
	published string
	// closed is set by Delete: nothing is written after it.
	closed bool
}

// New returns a Publisher of the Lease o names, written with leases (the proxy's own identity).
func New(leases coordinationv1client.LeasesGetter, o Options) (*Publisher, error) {
	if o.Namespace == "" || o.Name == "" {
		return nil, errors.New("acknowledge: the Lease's namespace and name are required")
	}
	if o.HolderIdentity == "" {
		o.HolderIdentity = o.PodName
	}
	if o.HolderIdentity == "" {
		o.HolderIdentity = o.Name
	}
	if o.Duration <= 0 {
		o.Duration = DefaultDuration
	}
	if o.RenewEvery <= 0 {
		o.RenewEvery = DefaultRenewEvery
	}
	return &Publisher{leases: leases.Leases(o.Namespace), opts: o, kick: make(chan struct{}, 1)}, nil
}

// Applied records that a Namespace was applied at resourceVersion (cutover.Acknowledger): the published
// value becomes the highest so far (CompareResourceVersion; a malformed one is ignored). changed asks
// for a write at once (coalesced with any other); otherwise the next renewal publishes it. It never
// blocks.
func (p *Publisher) Applied(resourceVersion string, changed bool) {
	p.mu.Lock()
	if higher(resourceVersion, p.applied) {
		p.applied = resourceVersion
	}
	p.mu.Unlock()
	if changed {
		p.request()
	}
}

// higher reports whether resourceVersion a is well formed and above b (any well-formed one is above "").
func higher(a, b string) bool {
	if b == "" {
		_, err := resourceversion.CompareResourceVersion(a, a)
		return err == nil
	}
	c, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && c > 0
}

// request asks Run for a write, unless one is asked for already.
func (p *Publisher) request() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Register writes the Lease (creating it, or taking over one of its name) with what was applied so far
// (cutover.Acknowledger).
func (p *Publisher) Register(ctx context.Context) error {
	return p.write(ctx, true)
}

// Run writes the Lease when Applied asks for it and renews it every Options.RenewEvery, until ctx ends.
// A failed write is logged and tried again after a second.
func (p *Publisher) Run(ctx context.Context) {
	renew := time.NewTicker(p.opts.RenewEvery)
	defer renew.Stop()
	for {
		force := false
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		case <-renew.C:
			force = true
		}
		if err := p.write(ctx, force); err != nil && ctx.Err() == nil {
			klog.ErrorS(err, "Publishing the proxy's acknowledgement failed; trying again", "lease", klog.KRef(p.opts.Namespace, p.opts.Name), "in", retryAfter)
			time.AfterFunc(retryAfter, p.request)
		}
	}
}

// Delete deletes the Lease (at the UID last written, if any), on a graceful shutdown; nothing is written
// after it. A Lease that is gone already is no error.
func (p *Publisher) Delete(ctx context.Context) error {
	p.writing.Lock()
	defer p.writing.Unlock()
	p.closed = true
	var opts metav1.DeleteOptions
	if p.lease != nil && p.lease.UID != "" {
		opts.Preconditions = metav1.NewUIDPreconditions(string(p.lease.UID))
	}
	err := p.leases.Delete(ctx, p.opts.Name, opts)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// write publishes the applied value, unless it was published already and force is false. A write that
// conflicts (the Lease changed or went away since it was read) reads it again and is tried again, up to
// three times.
func (p *Publisher) write(ctx context.Context, force bool) error {
	p.writing.Lock()
	defer p.writing.Unlock()
	if p.closed {
		return nil
	}
	p.mu.Lock()
	applied := p.applied
	p.mu.Unlock()
	if !force && p.lease != nil && applied == p.published {
		return nil
	}
	var err error
	for range 3 {
		if err = p.writeOnce(ctx, applied); err == nil {
			p.published = applied
			return nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && !apierrors.IsAlreadyExists(err) {
			break
		}
		p.lease = nil
	}
	return fmt.Errorf("lease %s/%s: %w", p.opts.Namespace, p.opts.Name, err)
}

// writeOnce updates the Lease last written (or read), or reads it, creating it when it does not exist.
func (p *Publisher) writeOnce(ctx context.Context, applied string) error {
	cur := p.lease
	if cur == nil {
		got, err := p.leases.Get(ctx, p.opts.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			l, err := p.leases.Create(ctx, p.desired(&coordinationv1.Lease{}, applied), metav1.CreateOptions{})
			if err != nil {
				return err
			}
			p.lease = l
			return nil
		case err != nil:
			return err
		}
		cur = got
	}
	l, err := p.leases.Update(ctx, p.desired(cur.DeepCopy(), applied), metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	p.lease = l
	return nil
}

// desired returns l with the Publisher's fields set: name, label, annotation (removed while applied is
// ""), owner, holder, duration, renewTime now (acquireTime now if unset).
func (p *Publisher) desired(l *coordinationv1.Lease, applied string) *coordinationv1.Lease {
	o := p.opts
	l.Name, l.Namespace = o.Name, o.Namespace
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[serving.AcknowledgeLabel] = serving.AcknowledgeLabelValue
	if applied != "" {
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		l.Annotations[serving.AcknowledgedAnnotation] = applied
	} else {
		delete(l.Annotations, serving.AcknowledgedAnnotation)
	}
	if o.PodName != "" && o.PodUID != "" {
		l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: o.PodName, UID: o.PodUID}}
	}
	now := metav1.NowMicro()
	l.Spec.HolderIdentity = ptr.To(o.HolderIdentity)
	l.Spec.LeaseDurationSeconds = ptr.To(int32(o.Duration / time.Second))
	l.Spec.RenewTime = &now
	if l.Spec.AcquireTime == nil {
		l.Spec.AcquireTime = &now
	}
	return l
}
