// Package serving is the contract between the migration and every proxy: a label on each
// hosted-control-plane Namespace says from which API groups the proxy serves that namespace's mapped
// kinds, and whether it holds writes to them while objects are copied between the groups.
//
// The migration (package migration) is the only writer of the label; proxies watch Namespaces'
// metadata and follow it. A Namespace without the label is served from the private groups, which is
// what every hosted cluster created after the proxy was installed uses.
package serving

import "fmt"

// Label is the Namespace label that carries the Mode. Who may update Namespaces may change what the
// proxy serves for that namespace: grant it as such.
const Label = "capi-proxy.hypershift.openshift.io/serve-from"

// Mode is the value of Label.
type Mode string

const (
	// Private serves the namespace from the private groups. The default when Label is absent.
	Private Mode = "private"
	// Upstream serves the namespace from the upstream groups as they are (cluster.x-k8s.io & co.),
	// untranslated: a hosted cluster that was not migrated yet.
	Upstream Mode = "upstream"
	// UpstreamHeld serves reads from the upstream groups and answers writes to mapped kinds with
	// 429 Too Many Requests and Retry-After: the migration copies to the private groups.
	UpstreamHeld Mode = "upstream-held"
	// PrivateHeld serves reads from the private groups and holds writes: a rollback copies back to
	// the upstream groups.
	PrivateHeld Mode = "private-held"
)

// Modes lists every Mode.
var Modes = []Mode{Private, Upstream, UpstreamHeld, PrivateHeld}

// ModeOf reads the Mode from a Namespace's labels. A missing label is Private; an unknown value is an
// error, and the proxy holds writes of such a namespace (it cannot tell where they belong).
func ModeOf(labels map[string]string) (Mode, error) {
	v, ok := labels[Label]
	if !ok {
		return Private, nil
	}
	for _, m := range Modes {
		if Mode(v) == m {
			return m, nil
		}
	}
	return "", fmt.Errorf("namespace label %s=%q: want one of %v", Label, v, Modes)
}

// Upstream reports whether reads are served from the upstream groups.
func (m Mode) Upstream() bool { return m == Upstream || m == UpstreamHeld }

// Held reports whether writes to mapped kinds are held.
func (m Mode) Held() bool { return m == UpstreamHeld || m == PrivateHeld }
