// Package v1beta2 is a version of the fixture badconv API, whose kinds' conversions (package
// badconv/conversion) are each broken in one way.
// +groupName=ipam.cluster.x-k8s.io
package v1beta2
