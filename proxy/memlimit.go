package main

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/klog/v2"

	"github.com/openshift/hypershift-capi-proxy/proxy/loglevel"
)

// memoryLimitFraction is the share of the container's memory limit the Go heap is held to
// (debug.SetMemoryLimit): the rest is the binary's mapped pages, goroutine stacks and what the
// runtime has not returned yet.
const memoryLimitFraction = 0.9

// cgroupMemoryLimits are where the container's memory limit is read from: cgroup v2, then v1.
var cgroupMemoryLimits = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// setMemoryLimit makes the Go runtime's soft memory limit follow the container's, unless GOMEMLIMIT
// sets it: near the limit the garbage collector runs more often and returns memory sooner, instead of
// the container being killed. Without a limit ("max", or v1's huge sentinel) nothing changes.
func setMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	for _, path := range cgroupMemoryLimits {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		limit, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil || limit <= 0 || limit >= 1<<60 {
			return // "max", or cgroup v1's "unlimited"
		}
		goLimit := int64(float64(limit) * memoryLimitFraction)
		debug.SetMemoryLimit(goLimit)
		klog.V(loglevel.Setup).InfoS("Holding the Go heap to the container's memory limit", "containerLimit", limit, "goMemoryLimit", goLimit)
		return
	}
}
