// Package model loads the upstream API packages listed in apis/upstream with k8s.io/gengo/v2 and builds
// the type model every emitter works from: for each package its group and version, its kinds with their
// resource names (from +kubebuilder markers), the named types reachable from the kinds, and for every
// struct field whether and how it can carry an API group.
//
// Whole-object conversions between a kind's versions are found in the loaded packages, not by the
// version of a module: beside the API packages, gengo loads the candidate conversion packages of
// apis/upstream.ConversionPackages that exist at the pinned versions, and a kind converts either by the
// methods of its Go types (Hub, ConvertTo, ConvertFrom: controller-runtime's conversion.Hub and
// conversion.Convertible, CAPI v1.13) or by exported functions of a conversion package,
// func(context.Context, *Spoke, *Hub) error and func(context.Context, *Hub, *Spoke) error (the spoke
// functions of CAPI v1.14's conversion.NewHubSpokeConverter values), with the storage version as the hub.
// Partial or ambiguous conversions fail, naming the kind (see Model.conversions). SetAPIVersionGetter is
// taken from an API or a conversion package, with or without a context (Model.APIVersionGetterSetters).
//
// Classification is by Go type and JSON name, never by string search:
//   - a string (or *string) field whose JSON name is "apiVersion" carries "group/version", "apiGroup" a
//     bare group;
//   - metav1.ObjectMeta, metav1.TypeMeta and corev1.ObjectReference carry groups and are translated by
//     helpers in package translate;
//   - a type that encodes itself (has MarshalJSON) must be a known scalar (metav1.Time, resource.Quantity,
//     ...) or be listed in upstream.OpaqueTypes with the reason it never needs translating; an interface or
//     any other self-encoding type is an error, reported with the field path that reaches it.
package model
