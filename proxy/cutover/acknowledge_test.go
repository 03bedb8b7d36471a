package cutover_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/openshift/hypershift-capi-proxy/migration/serving"
	"github.com/openshift/hypershift-capi-proxy/proxy/cutover"
)

// acknowledger records what Namespaces tells it.
type acknowledger struct{ calls []string }

func (a *acknowledger) Applied(rv string, changed bool) {
	a.calls = append(a.calls, fmt.Sprintf("%s %v", rv, changed))
}

func (a *acknowledger) Register(context.Context) error { return nil }

// Every Namespace applied is told, after its mode is in effect; a prompt write is asked for only where a
// namespace's mode changed or its writes are held (a migration moving it).
func TestAcknowledgerIsToldWhatWasApplied(t *testing.T) {
	ns := cutover.NewNamespaces(nil)
	a := &acknowledger{}
	ns.Acknowledge(a)
	ns.SetGuarded(true, "1")
	label := func(m serving.Mode) map[string]string { return map[string]string{serving.Label: string(m)} }

	ns.Set("unrelated", "10", nil)
	ns.Set("hcp", "11", label(serving.Upstream))
	ns.Set("unrelated", "12", map[string]string{"team": "a"})
	ns.Set("hcp", "13", label(serving.UpstreamHeld))
	if !ns.Upstream("hcp") {
		t.Error("hcp is not served from the upstream groups after UpstreamHeld")
	}
	ns.Set("hcp", "14", label(serving.UpstreamHeld)) // the phase annotation of a resumed run
	ns.Set("hcp", "15", label(serving.PrivateHeld))
	ns.Set("hcp", "16", label(serving.Private))
	ns.Set("hcp", "17", label(serving.Private))
	ns.Delete("hcp", "18")
	ns.Delete("unrelated", "19")

	want := []string{"10 false", "11 true", "12 false", "13 true", "14 true", "15 true", "16 true", "17 false", "18 false", "19 false"}
	if !slices.Equal(a.calls, want) {
		t.Errorf("Applied calls:\n got %q\nwant %q", a.calls, want)
	}
}
