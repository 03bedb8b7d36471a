// Package e2e drives the proxy with real clients against a real kube-apiserver, etcd and
// kube-controller-manager, with the private CRDs installed beside an older release of the upstream CAPI
// CRDs, as on a HyperShift management cluster where the platform runs its own CAPI.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/openshift/hypershift-capi-proxy/proxy/convert"
	"github.com/openshift/hypershift-capi-proxy/tests/framework"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

// platformCAPI is the release whose CRDs stand for the platform's own CAPI (another version than ours).
const platformCAPI = "v1.10.10"

var (
	env   *framework.Env
	proxy *framework.Proxy

	// upstreamScheme is what a CAPI controller uses; privateScheme reads the backend directly.
	upstreamScheme = framework.UpstreamScheme
	privateScheme  = framework.PrivateScheme
)

func TestMain(m *testing.M) {
	// Upstream's conversions, which tests run to compute what the proxy must answer, resolve references
	// with the getter the proxy installs.
	if _, err := convert.New(translate.NewTable(routes.Routes), routes.APIVersionGetterSetters); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(framework.Main(m, setup, &env, &proxy))
}

// setup installs the platform's own CAPI CRDs, which the private ones are installed beside.
func setup(ctx context.Context, e *framework.Env) error {
	direct, err := e.AdminClient()
	if err != nil {
		return err
	}
	platform, err := framework.UpstreamCRDs("sigs.k8s.io/cluster-api", platformCAPI)
	if err != nil {
		return fmt.Errorf("no upstream CRDs found: %w", err)
	}
	if len(platform) == 0 {
		return errors.New("no upstream CRDs found")
	}
	// The private CRDs come after the proxy (framework.Main): their conversion webhook points at it.
	return e.InstallCRDs(ctx, direct, platform...)
}
