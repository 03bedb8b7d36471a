package main

import (
	"context"
	"runtime/debug"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/pageout"
	"github.com/openshift/hypershift-capi-proxy/proxy/loglevel"
)

// startupSyncPoll is how often releaseStartupMemory looks whether the proxy's caches have their first
// lists; it gives up waiting for them after startupSyncTimeout and returns the memory anyway.
// startupSettle is how long after that it waits for the first requests that readiness lets in.
const (
	startupSyncPoll    = 100 * time.Millisecond
	startupSyncTimeout = 2 * time.Minute
	startupSettle      = 10 * time.Second
)

// releaseStartupMemory returns to the operating system the memory that starting took, once every
// synced (the first lists of the Namespaces and CRD metadata informers) reports true, or ctx ends.
//
// Package initialisation of the libraries the proxy links (schemes of every built-in and provider API
// group, protobuf descriptors, inflection tables, metric collectors) allocates about 11 MB, of which
// about 4.5 MB stay live; the first lists add their own garbage. The Go heap keeps the pages that garbage
// occupied, and its background scavenger returns them only slowly, and only after a collection, which an
// idle proxy may not run for minutes: without this an idle sidecar keeps twice its live heap resident.
// debug.FreeOSMemory collects and returns every free page at once. With pageOut, the pages of the
// executable that starting touched are returned too (pageout.Executable).
//
// It waits startupSettle after the first lists: the proxy turns ready with them, and the first requests
// follow at once (the kubelet's probes, a TLS handshake per client connection, each client informer's
// first LIST and WATCH). Their code mostly does not run again while the connections stay open; paged
// out before them, it stayed resident (in make bench-idle, whose readiness checks come in that window:
// the TLS handshake's and the proxied request's code).
func releaseStartupMemory(ctx context.Context, pageOut bool, synced ...func() bool) {
	allSynced := func(context.Context) (bool, error) {
		for _, s := range synced {
			if !s() {
				return false, nil
			}
		}
		return true, nil
	}
	waitCtx, cancel := context.WithTimeout(ctx, startupSyncTimeout)
	defer cancel()
	if err := wait.PollUntilContextCancel(waitCtx, startupSyncPoll, true, allSynced); err != nil && ctx.Err() != nil {
		return // shutting down
	}
	select {
	case <-time.After(startupSettle):
	case <-ctx.Done():
		return
	}
	debug.FreeOSMemory()
	// Logged before the page-out, not after: in make bench-idle, the line logged after it came with up to
	// 2.5 MiB of the binary faulted back in (read-only data mostly), which an idle proxy then kept.
	klog.V(loglevel.Unusual).InfoS("Returning the memory of startup to the operating system", "pageOutExecutable", pageOut)
	if pageOut {
		if _, err := pageout.Executable(); err != nil {
			klog.ErrorS(err, "Could not return the pages of the executable that starting touched")
		}
	}
}
