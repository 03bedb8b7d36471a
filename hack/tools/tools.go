//go:build tools

// Package tools pins the generator-only tools in their own module, so their newer Kubernetes dependencies
// never reach the main go.mod. controller-gen is pinned to a version that reproduces the CRDs every
// mirrored module publishes (tests/conformance compares them), whatever controller-gen each module
// generated them with; make bump keeps it unless CONTROLLER_GEN_VERSION names another, and its report
// lists those versions.
package tools

import (
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
