// Package errors is sigs.k8s.io/cluster-api/errors for the providers whose newest release the module
// proxy serves still imports it, built from the package's new home: Cluster API v1.14 moved it into its API
// module as sigs.k8s.io/cluster-api/api/deprecated/errors and no longer ships the old path.
//
// CAPV v1.16.1 (api/govmomi, api/supervisor: VSphereMachine and VSphereVM status failureReason) and CAPK
// v0.11.2 (api/v1alpha1: KubevirtMachine status failureReason) import the old path. This module, written
// for this project, declares every exported name of the new home as an alias of it (the same types, so
// the providers' Go types and their private twins stay convertible to and from CAPI's), and nothing else.
// The helpers CAPI v1.13 kept in errors/pointer.go (MachineStatusErrorPtr, ...) are gone with v1.14 and
// are not provided: no mirrored API package uses them.
//
// The root go.mod names it with a replace (sigs.k8s.io/cluster-api/errors => ./hack/compat/cluster-api-errors),
// which hack/bump.sh writes when the pinned CAPI module has no errors package and a mirrored API package
// still imports it, and drops otherwise: a bump to provider releases that import the new home (or back to
// a CAPI that has the old one) drops the replace, and this directory can then go.
package errors
