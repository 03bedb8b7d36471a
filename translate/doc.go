// Package translate holds what the generated converters (zz_generated/convert) and the proxy share to move
// a value between an upstream API group and its private twin:
//
//   - Direction: ToPrivate and ToUpstream map groups, apiVersions ("group/version") and "Kind.group"
//     values with the table in apis/upstream, and translate the group-carrying parts of the shared
//     Kubernetes types (ObjectMeta, ObjectReference, TypeMeta) that the generated code cannot own.
//   - Kind: the typed JSON codec of one kind at one version, built from its pair of generated converters.
//   - Node: the tree of JSON paths that can carry a group inside one kind, generated from the same type
//     model, for bodies that are not whole objects (merge patches, json-patch values) and for non-CAPI
//     objects whose ownerReferences point at a mapped group.
//   - Route and Table: the generated route table (upstream GVR/GVK <-> private GVR/GVK) with its indexes;
//     on each spoke, upstream's conversions to and from the hub as two plain functions (Route.ToHub,
//     Route.FromHub), adapted by ConvertFunc, ConvertToMethod and ConvertFromMethod from wherever upstream
//     keeps them, and the words controller-runtime wraps their failures with (Route.ViaHubError).
//
// Nothing here knows a provider or a kind: everything specific comes from the generated tables.
package translate
