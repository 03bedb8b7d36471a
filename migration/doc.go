// Package migration moves one hosted-control-plane namespace's Cluster API objects between the upstream
// groups (cluster.x-k8s.io & co.) and HyperShift's private groups (cluster.hypershift.openshift.io & co.),
// while every CAPI controller keeps running through the proxy, and back (rollback).
//
// It talks straight to kube-apiserver (a rest.Config that is not the proxy's): the proxy hides the private
// groups, and the migration must see both. Every mapped kind comes from the generated route table
// (zz_generated/routes); objects are copied as unstructured JSON with their group-carrying fields translated
// along the route's translate.Node tree, never through a typed decode.
//
// A move of one namespace (Migrator.Migrate, and Migrator.Rollback the other way) follows the phase
// contract of package migration/serving, whose Namespace label every proxy follows:
//
//  1. Pausing (label: the source mode): every object of a mapped kind gets CAPI's cluster.x-k8s.io/paused
//     annotation (which CAPI's and every provider's controllers honour, annotations.IsPaused) and the
//     migration's PausedAnnotation, unless it was paused already.
//  2. Copying (label: the source's held mode, writes answered 429 by the proxies; once every proxy
//     acknowledged the label, or after a grace period for their informers at most: see below): every object is created in its twin group at the source CRD's storage version,
//     owners first, then its status through the status subresource; a copy carries SourceUIDAnnotation and
//     SourceResourceVersionAnnotation. Every ownerReference in the namespace to a source object (in the
//     copies, in Secrets, ConfigMaps and every other namespaced resource the server lists) is re-pointed to
//     the copy: its apiVersion in the twin group, its UID, controller and blockOwnerDeletion kept. Before
//     leaving the phase the sources' resourceVersions are compared with what was copied, and whatever
//     changed is copied again.
//  3. Retiring (label: the destination's held mode): a source whose content changed since it was copied
//     (a write through a proxy slower than the grace period) is copied again, ownerReferences are checked
//     once more, then every source object loses its finalizers (no deletion logic of CAPI or a provider
//     runs) and is deleted with propagationPolicy=Orphan and a UID precondition. Writes stay held until
//     Options.RelistGrace after the proxies followed the label (DefaultRelistGrace, 3 s; the retirement
//     runs inside it), for the clients whose watches the proxies then ended to list the namespace again
//     from the copies: a controller acting on caches of both sides would point references at retired
//     objects. The proxies end a namespace's watches only when the groups it is served from change, so
//     this is the one end, and the one relist, a move causes.
//  4. Resuming (label: the destination mode): the copies the migration paused are unpaused, and its
//     annotations removed; once the garbage collector has removed the retired objects (it completes
//     orphan deletions at its client's rate limit: writes are not held meanwhile) the phase is Complete.
//
// After each of the two label changes that hold writes (to the source's and to the destination's held
// mode) the migration waits for the proxies: until every live acknowledging Lease (package
// migration/serving) reports the Namespace's resourceVersion after the change, bounded by the grace
// period, which it waits whole when no proxy acknowledges or a Lease expired (Options.Grace,
// Options.IgnoreAcknowledgements).
//
// Migrator.MigrateNamespaces (and RollbackNamespaces) moves several namespaces one after the other, and
// begins the next one while the garbage collector finishes the previous one's retired objects: one
// namespace's writes are held at a time, and the garbage collector's work overlaps the next moves.
//
// The phase and direction are annotations of the Namespace (PhaseAnnotation, DirectionAnnotation); with the
// label and the copies' annotations they are all a re-run needs: a run killed between any two API calls
// is finished by the next one. Nothing is ever deleted but the retired sources, and only after every
// reference was re-pointed to their copies.
package migration
