// Package migration drives package migration against a real kube-apiserver, etcd and
// kube-controller-manager (whose garbage collector acts on every ownerReference the migration re-points):
// HyperShift-shaped namespaces are created in the upstream groups, then migrated to the private groups,
// killed and resumed, rolled back, and planned.
//
// The apiserver holds the upstream CRDs at exactly the versions the private CRDs mirror (the published
// bases of the modules go.mod pins, Agent's from tests/testdata), with a conversion webhook served in this
// test binary by controller-runtime's handler over the upstream Go types (as in tests/differential), and
// the private CRDs with their conversion webhook at the proxy (framework.Main).
package migration

import (
	"context"
	"os"
	"testing"

	"github.com/openshift/hypershift-capi-proxy/tests/framework"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

var (
	env   *framework.Env
	proxy *framework.Proxy
	// webhook converts the upstream CRDs' objects.
	webhook *framework.ConversionWebhook
)

func TestMain(m *testing.M) {
	code := framework.Main(m, setup, &env, &proxy)
	if webhook != nil {
		webhook.Stop()
	}
	os.Exit(code)
}

// setup installs the upstream CRDs with their conversion webhook (framework.Env.InstallUpstreamCRDs).
func setup(ctx context.Context, e *framework.Env) (err error) {
	webhook, err = e.InstallUpstreamCRDs(ctx, routes.Routes, routes.APIVersionGetterSetters)
	return err
}
