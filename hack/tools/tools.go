//go:build tools

// Package tools pins the generator-only tools in their own module, so their newer Kubernetes dependencies
// never reach the main go.mod. controller-gen is pinned to the version the pinned CAPI uses (its Makefile's
// CONTROLLER_GEN_VER; make bump moves it), which reproduces CAPI's CRDs byte for byte.
package tools

import (
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
