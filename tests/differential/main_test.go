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

// setup installs the upstream CRDs with their conversion webhook (framework.Env.InstallUpstreamCRDs).
func setup(ctx context.Context, e *framework.Env) (err error) {
	webhook, err = e.InstallUpstreamCRDs(ctx, routes.Routes, routes.APIVersionGetterSetters)
	return err
}
