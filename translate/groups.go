package translate

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
)

// Direction translates group-carrying values one way. The zero value is not usable: use ToPrivate or
// ToUpstream.
type Direction struct {
	name   string
	groups map[string]string
	// longestFirst are the keys of groups, longest first (Text).
	longestFirst []string
}

var (
	// ToPrivate maps upstream groups (cluster.x-k8s.io) to private groups (cluster.hypershift.openshift.io).
	ToPrivate = newDirection("ToPrivate", false)
	// ToUpstream maps private groups back to upstream groups.
	ToUpstream = newDirection("ToUpstream", true)
)

// ToUnserved maps each private group to a group no apiserver serves: its name in the domain ".invalid",
// which RFC 2606 reserves for names that can never resolve ("cluster.hypershift.openshift.io" ->
// "cluster.hypershift.openshift.io.invalid"). The proxy sends it where a client names a private group in
// the apiVersion of the object it writes: through the proxy the private groups do not exist, so that the
// backend must refuse the object as it refuses one of any group it does not serve there, and not take it
// as one of its private kinds. The names it maps to are UnservedGroup's.
var ToUnserved = newUnserved(false)

// FromUnserved maps each group of ToUnserved back to its private group: the group a client named where
// the proxy sent the unserved one ("cluster.hypershift.openshift.io.invalid" ->
// "cluster.hypershift.openshift.io").
var FromUnserved = newUnserved(true)

// unservedSuffix makes a private group's UnservedGroup.
const unservedSuffix = ".invalid"

// UnservedGroup returns the group ToUnserved maps a private group to.
func UnservedGroup(private string) string { return private + unservedSuffix }

func newUnserved(reverse bool) Direction {
	d := Direction{name: "ToUnserved", groups: make(map[string]string, len(upstream.Groups))}
	if reverse {
		d.name = "FromUnserved"
	}
	for _, g := range upstream.Groups {
		if reverse {
			d.groups[UnservedGroup(g.Private)] = g.Private
		} else {
			d.groups[g.Private] = UnservedGroup(g.Private)
		}
	}
	d.longestFirst = sources(d.groups)
	return d
}

func newDirection(name string, reverse bool) Direction {
	d := Direction{name: name, groups: make(map[string]string, len(upstream.Groups))}
	for _, g := range upstream.Groups {
		from, to := g.Upstream, g.Private
		if reverse {
			from, to = to, from
		}
		d.groups[from] = to
	}
	d.longestFirst = sources(d.groups)
	return d
}

// String returns the direction's name: "ToPrivate", "ToUpstream", "ToUnserved" or "FromUnserved".
func (d Direction) String() string { return d.name }

// Group maps an API group. A group outside the table (including "" for the core group) is returned as is.
func (d Direction) Group(group string) string {
	if to, ok := d.groups[group]; ok {
		return to
	}
	return group
}

// Maps reports whether group is a source group of this direction (an upstream group for ToPrivate).
func (d Direction) Maps(group string) bool {
	_, ok := d.groups[group]
	return ok
}

// APIVersion maps the group of an apiVersion value ("group/version"). A core apiVersion ("v1"), an empty
// value and a group outside the table are returned as is.
func (d Direction) APIVersion(apiVersion string) string {
	i := strings.IndexByte(apiVersion, '/')
	if i < 0 {
		return apiVersion
	}
	if to, ok := d.groups[apiVersion[:i]]; ok {
		return to + apiVersion[i:]
	}
	return apiVersion
}

// GroupKind maps the group of a "Kind.group" value (the format of CAPI's cloned-from-groupkind
// annotation). A value without a mapped group is returned as is.
func (d Direction) GroupKind(groupKind string) string {
	i := strings.IndexByte(groupKind, '.')
	if i < 0 {
		return groupKind
	}
	if to, ok := d.groups[groupKind[i+1:]]; ok {
		return groupKind[:i+1] + to
	}
	return groupKind
}

// TypeMeta translates an object's apiVersion; kind is unchanged.
func (d Direction) TypeMeta(in, out *metav1.TypeMeta) {
	out.Kind = in.Kind
	out.APIVersion = d.APIVersion(in.APIVersion)
}

// ObjectReference translates a corev1.ObjectReference (v1beta1 infrastructureRef, configRef, ...): its
// apiVersion carries the group of the referenced object.
func (d Direction) ObjectReference(in, out *corev1.ObjectReference) {
	*out = *in
	out.APIVersion = d.APIVersion(in.APIVersion)
}

// ObjectMeta translates the group-carrying parts of object metadata: ownerReferences[].apiVersion (a wrong
// value here makes the garbage collector delete the dependent), managedFields[].apiVersion and the values of
// upstream.GroupKindAnnotations. Label and annotation keys, finalizers and everything else are copied
// unchanged. out may share memory with in where nothing changes; in is never modified.
func (d Direction) ObjectMeta(in, out *metav1.ObjectMeta) {
	*out = *in
	if len(in.OwnerReferences) > 0 {
		refs := make([]metav1.OwnerReference, len(in.OwnerReferences))
		for i := range in.OwnerReferences {
			refs[i] = in.OwnerReferences[i]
			refs[i].APIVersion = d.APIVersion(refs[i].APIVersion)
		}
		out.OwnerReferences = refs
	}
	if len(in.ManagedFields) > 0 {
		fields := make([]metav1.ManagedFieldsEntry, len(in.ManagedFields))
		for i := range in.ManagedFields {
			fields[i] = in.ManagedFields[i]
			fields[i].APIVersion = d.APIVersion(fields[i].APIVersion)
		}
		out.ManagedFields = fields
	}
	out.Annotations = d.annotations(in.Annotations)
}

// annotations returns the annotations with group-carrying values translated, copying the map only when a
// value changes.
func (d Direction) annotations(in map[string]string) map[string]string {
	var out map[string]string
	for _, key := range upstream.GroupKindAnnotations {
		v, ok := in[key]
		if !ok {
			continue
		}
		if mapped := d.GroupKind(v); mapped != v {
			if out == nil {
				out = make(map[string]string, len(in))
				for k, v := range in {
					out[k] = v
				}
			}
			out[key] = mapped
		}
	}
	if out == nil {
		return in
	}
	return out
}

func groupKindAnnotations() []string { return upstream.GroupKindAnnotations }

// TypedLocalObjectReference translates a corev1.TypedLocalObjectReference (IPAM poolRef in v1alpha1 and
// v1beta1): its apiGroup carries the group of the referenced object.
func (d Direction) TypedLocalObjectReference(in, out *corev1.TypedLocalObjectReference) {
	*out = *in
	if in.APIGroup != nil {
		g := d.Group(*in.APIGroup)
		out.APIGroup = &g
	}
}
