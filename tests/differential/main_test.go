// Package differential proves that a client of the proxy cannot tell it from a kube-apiserver serving the
// upstream CRDs. One real kube-apiserver holds both:
//
//   - the upstream CRDs at exactly the versions the private CRDs mirror (the published bases of the modules
//     go.mod pins, Agent's from testdata), with CAPI's contract labels and, for kinds that convert by hub and
//     spoke, a conversion webhook served in this test binary by controller-runtime's conversion webhook
//     handler over the upstream Go types, with CAPI's apiVersion getter, as a provider's manager serves it;
//   - the private CRDs and the proxy in front of the apiserver, as framework.Main sets them up.
//
// Every scripted request is sent twice as raw HTTP with the same user: straight to the apiserver (upstream
// group, namespace nsDirect) and through the proxy (upstream group, namespace nsProxied). Status code,
// client-visible headers and the whole body must be equal once namespace names, UIDs, timestamps,
// resourceVersions and generateName suffixes are normalised (see normalise).
package differential

import (
	"context"
	"flag"
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
	// The requests of a test are mostly waiting on the apiserver: run more subtests at once than there are
	// cores, unless -parallel was given.
	flag.Parse()
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet {
		_ = flag.Set("test.parallel", "8")
	}
	code := framework.Main(m, setup, &env, &proxy)
	if webhook != nil {
		webhook.Stop()
	}
	os.Exit(code)
}

// setup starts the upstream conversion webhook and installs the upstream CRDs pointing at it.
func setup(ctx context.Context, e *framework.Env) error {
	// The upstream conversions of the webhook resolve references as CAPI's managers do: from the contract
	// labels of the referenced kind's upstream CRD (UpstreamCRDsForRoutes puts them there).
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
