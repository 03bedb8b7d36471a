//go:build tools

// Package tools pins the Cluster API managers that hack/build-capi.sh builds for the e2e tests: the
// core manager and the kubeadm bootstrap and control plane managers, at the version the root module's
// API packages come from.
package tools

import (
	_ "sigs.k8s.io/cluster-api/bootstrap/kubeadm"
	_ "sigs.k8s.io/cluster-api/controlplane/kubeadm"
	_ "sigs.k8s.io/cluster-api/core"
)
