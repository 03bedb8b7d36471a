// Package v1beta1 is a fixture API the generator cannot mirror.
// +groupName=bootstrap.cluster.x-k8s.io
package v1beta1
