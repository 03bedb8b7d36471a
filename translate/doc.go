// Package translate holds what the generated converters (zz_generated/convert) and the proxy share to move
// a value between an upstream API group and its private twin:
//
//   - Direction: ToPrivate and ToUpstream map groups, apiVersions ("group/version") and "Kind.group"
//     values with the table in apis/upstream, translate the group-carrying parts of the shared
//     Kubernetes types (ObjectMeta, ObjectReference, TypeMeta) that the generated code cannot own, and
//     the whole group names in free text (Text: Status messages, Warnings, Table cells). ToUnserved and
//     FromUnserved name a private group the client sent where the backend must refuse it.
//   - Node and Direction.Rewrite: the tree of JSON paths that can carry a group inside one kind,
//     generated from the same type model as the converters, and the rewrite along it that the proxy
//     applies to every JSON body, whole objects, list items, watch events and patches alike: only the
//     values at those paths change, every other byte is kept (AppendRewriteValidTypeMetaFirst and
//     AppendRewriteTypeMetaFirst walk a list item once, validating as they go).
//   - Scan and Valid: JSON validation that accepts exactly what encoding/json's Valid accepts, without
//     allocating, and finds where a value ends; EachMember, LeadingTypeMeta and TopLevelStrings read a
//     JSON object's members without decoding it.
//   - PointerTokens and ArrayIndex: JSON pointers and array indices read as kube-apiserver's JSON patch
//     library reads them.
//   - Kind: the typed JSON codec of one kind at one version, built from its pair of generated
//     converters. The route table holds one only where the kind converts by hub and spoke (the proxy's
//     conversions run it); zz_generated/routes/codecs adds the others, for tests.
//   - Route and Table: the generated route table (upstream GVR/GVK <-> private GVR/GVK) with its
//     indexes; NewTable shares the subtrees the routes' Paths have in common. On each spoke, upstream's
//     conversions to and from the hub are two plain functions (Route.ToHub, Route.FromHub), adapted by
//     ConvertFunc, ConvertToMethod and ConvertFromMethod from wherever upstream keeps them, with the
//     words controller-runtime wraps their failures with (Route.ViaHubError).
//   - PrivatePolicyRules and RuleCoversCRDs: RBAC rules on the upstream groups mirrored onto the
//     private ones.
//
// Nothing here knows a provider or a kind: everything specific comes from the generated tables.
package translate
