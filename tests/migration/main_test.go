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
	"fmt"
	"os"
	"path/filepath"
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

// setup starts the upstream conversion webhook and installs the upstream CRDs pointing at it.
func setup(ctx context.Context, e *framework.Env) error {
	direct, err := e.AdminClient()
	if err != nil {
		return err
	}
	for _, set := range routes.APIVersionGetterSetters {
		set(framework.CAPIAPIVersionGetter(ctx, direct))
	}
	scheme, err := framework.NewUpstreamKindsScheme(routes.Routes)
	if err != nil {
		return err
	}
	if webhook, err = framework.StartConversionWebhook(scheme); err != nil {
		return err
	}
	files, err := framework.MirroredModuleCRDFiles()
	if err != nil {
		return err
	}
	agent, err := filepath.Glob(filepath.Join("..", "testdata", "agent-crds", "*.yaml"))
	if err != nil || len(agent) == 0 {
		return fmt.Errorf("no Agent CRDs in tests/testdata/agent-crds: %v", err)
	}
	published, err := framework.ReadCRDs(append(files, agent...)...)
	if err != nil {
		return err
	}
	crds, err := framework.UpstreamCRDsForRoutes(published, routes.Routes, webhook.URL, webhook.CABundle)
	if err != nil {
		return err
	}
	return e.InstallCRDObjects(ctx, crds...)
}
