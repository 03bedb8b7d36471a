package main

import (
	"maps"
	"slices"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/openshift/hypershift-capi-proxy/proxy/crdcache"
	"github.com/openshift/hypershift-capi-proxy/proxy/cutover"
	"github.com/openshift/hypershift-capi-proxy/proxy/health"
)

// TestReadyChecks: /readyz has the checks package health lists, by their names, and only those; the
// caches' only when the proxy has them.
func TestReadyChecks(t *testing.T) {
	crds, err := crdcache.New(&rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range health.Checks {
		if c.Endpoint == health.Readyz {
			want = append(want, c.Name)
		}
	}
	slices.Sort(want)
	got := slices.Sorted(maps.Keys(readyChecks(nil, func() bool { return false }, cutover.NewNamespaces(nil), crds)))
	if !slices.Equal(got, want) {
		t.Errorf("/readyz checks %q, package health lists %q", got, want)
	}
	got = slices.Sorted(maps.Keys(readyChecks(nil, func() bool { return true }, nil, nil)))
	if want := []string{health.Backend, health.Shutdown}; !slices.Equal(got, want) {
		t.Errorf("without the caches: %q, want %q", got, want)
	}
	if err := readyChecks(nil, func() bool { return true }, nil, nil)[health.Shutdown](nil); err == nil {
		t.Error("shutdown passes while shutting down")
	}
}
