// Package serving is the contract between the migration and every proxy: a label on each
// hosted-control-plane Namespace says from which API groups the proxy serves that namespace's mapped
// kinds, and whether it holds writes to them while objects are copied between the groups.
//
// The migration (package migration) is the only writer of the label; proxies watch Namespaces'
// metadata and follow it. A Namespace without the label is served from the private groups, which is
// what every hosted cluster created after the proxy was installed uses.
//
// Where a namespace is served from is a security decision: a namespace served from the upstream groups
// exposes, through every proxy, whatever the upstream groups hold there, and takes HyperShift's writes
// there. Namespaces are commonly patched by many (a grant to label or annotate them is ordinary), so the
// label alone decides nothing: the ValidatingAdmissionPolicy PolicyName, bound by a binding of the same
// name with validationActions Deny (package install renders both), lets only the migration's identity
// set, change or remove it, on the apiserver itself, whatever path the write takes. A proxy follows a
// label other than Private only while that policy and its binding exist (Guarded), and serves such a
// namespace as a held one otherwise; the migration refuses to run without them.
//
// Each proxy acknowledges what it follows: it publishes a coordination.k8s.io/v1 Lease in its own
// namespace, labelled AcknowledgeLabel, renewed while it runs (spec.renewTime, spec.leaseDurationSeconds)
// and deleted when it stops, whose AcknowledgedAnnotation holds the highest Namespace resourceVersion it
// has applied: every label change at or below it is in effect for its requests. After a change of the
// label the migration waits until every live Lease (renewTime + leaseDurationSeconds in the future)
// acknowledges the Namespace's new resourceVersion, instead of a fixed grace period, which still bounds
// the wait: it waits the whole grace period when no Lease exists (proxies that do not acknowledge) or
// one is expired but not deleted (a proxy that may still serve but does not renew).
//
// A Lease proves nothing about who wrote it, and the wait needs no proof: a forged Lease (expired, or
// live with a resourceVersion never reached) only makes the migration wait the whole grace period, as
// it did before acknowledgements, and one that claims a huge resourceVersion skips nothing, since every
// live Lease must acknowledge. What a writer could skip is a real proxy's acknowledgement, by deleting
// its Lease, which needs delete on leases in that proxy's namespace (install grants it to the proxy
// alone there), and lasts until the proxy's next renewal creates it again.
package serving

import (
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Label is the Namespace label that carries the Mode. Only the identities the policy PolicyName exempts
// may write it (see the package comment).
const Label = "capi-proxy.hypershift.openshift.io/serve-from"

// AcknowledgeLabel labels the Leases by which proxies acknowledge the Namespaces they applied (see the
// package comment); its value is AcknowledgeLabelValue. The migration lists Leases by it, in every
// namespace.
const AcknowledgeLabel = "capi-proxy.hypershift.openshift.io/acknowledges"

// AcknowledgeLabelValue is the value of AcknowledgeLabel: what is acknowledged, Label.
const AcknowledgeLabelValue = "serve-from"

// AcknowledgedAnnotation on an acknowledging Lease holds the highest resourceVersion of a Namespace
// the proxy has applied (followed Label of, or the deletion of): a decimal resourceVersion as the
// apiserver returns them, compared with k8s.io/apimachinery/pkg/util/resourceversion's
// CompareResourceVersion (comparable resource versions, KEP-5504). Absent until the proxy has applied
// its first list.
const AcknowledgedAnnotation = "capi-proxy.hypershift.openshift.io/applied-resource-version"

// PolicyName names the ValidatingAdmissionPolicy that guards Label, and its ValidatingAdmissionPolicyBinding.
const PolicyName = "capi-proxy-serve-from"

// Guarded reports whether the policy and binding guard Label: both exist (non-nil), the binding binds
// PolicyName and denies what fails it (validationActions holds Deny), and the binding applies to every
// namespace (neither a paramRef nor a matchResources that narrows it; the policy's own constraints are
// its author's). It reads no object's validations: their text is the install assets' (install.ServingPolicy).
func Guarded(policy *admissionregistrationv1.ValidatingAdmissionPolicy, binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding) bool {
	if policy == nil || binding == nil || policy.Name != PolicyName || binding.Name != PolicyName {
		return false
	}
	if policy.DeletionTimestamp != nil || binding.DeletionTimestamp != nil {
		return false
	}
	s := binding.Spec
	return s.PolicyName == PolicyName && slices.Contains(s.ValidationActions, admissionregistrationv1.Deny) &&
		s.ParamRef == nil && narrowsNothing(s.MatchResources)
}

// narrowsNothing reports whether a binding's matchResources leaves the policy's own constraints as they
// are: nil, or empty selectors and no rules.
func narrowsNothing(m *admissionregistrationv1.MatchResources) bool {
	if m == nil {
		return true
	}
	empty := func(s *metav1.LabelSelector) bool {
		return s == nil || len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0
	}
	return empty(m.NamespaceSelector) && empty(m.ObjectSelector) && len(m.ResourceRules) == 0 && len(m.ExcludeResourceRules) == 0
}

// Mode is the value of Label.
type Mode string

const (
	// Private serves the namespace from the private groups. The default when Label is absent.
	Private Mode = "private"
	// Upstream serves the namespace from the upstream groups as they are (cluster.x-k8s.io & co.),
	// untranslated: a hosted cluster that was not migrated yet.
	Upstream Mode = "upstream"
	// UpstreamHeld serves reads from the upstream groups and answers writes to mapped kinds with
	// 429 Too Many Requests and Retry-After: the migration copies to the private groups.
	UpstreamHeld Mode = "upstream-held"
	// PrivateHeld serves reads from the private groups and holds writes: a rollback copies back to
	// the upstream groups.
	PrivateHeld Mode = "private-held"
)

// Modes lists every Mode.
var Modes = []Mode{Private, Upstream, UpstreamHeld, PrivateHeld}

// ModeOf reads the Mode from a Namespace's labels. A missing label is Private; an unknown value is an
// error, and the proxy holds writes of such a namespace (it cannot tell where they belong).
func ModeOf(labels map[string]string) (Mode, error) {
	v, ok := labels[Label]
	if !ok {
		return Private, nil
	}
	for _, m := range Modes {
		if Mode(v) == m {
			return m, nil
		}
	}
	return "", fmt.Errorf("namespace label %s=%q: want one of %v", Label, v, Modes)
}

// Upstream reports whether reads are served from the upstream groups.
func (m Mode) Upstream() bool { return m == Upstream || m == UpstreamHeld }

// Held reports whether writes to mapped kinds are held.
func (m Mode) Held() bool { return m == UpstreamHeld || m == PrivateHeld }
