// Package e2e drives the proxy with real clients against a real kube-apiserver, etcd and
// kube-controller-manager, with the private CRDs installed beside an older release of the upstream CAPI
// CRDs, as on a HyperShift management cluster where the platform runs its own CAPI.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	privclusterv1 "github.com/openshift/hypershift-capi-proxy/apis/private/core/v1beta2"
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
	upstreamScheme = runtime.NewScheme()
	privateScheme  = runtime.NewScheme()
)

func init() {
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, clusterv1.AddToScheme} {
		if err := add(upstreamScheme); err != nil {
			panic(err)
		}
	}
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, privclusterv1.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(privateScheme); err != nil {
			panic(err)
		}
	}
}

func TestMain(m *testing.M) {
	// Upstream's conversions, which tests run to compute what the proxy must answer, resolve references
	// with the getter the proxy installs.
	if _, err := convert.New(translate.NewTable(routes.Routes), routes.APIVersionGetterSetters); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	var err error
	if env, err = framework.StartEnv(); err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	keep := os.Getenv("E2E_KEEP") != ""
	failed := 1
	defer func() { env.Stop(keep || failed != 0) }()

	direct, err := client.New(env.DirectConfig(env.AdminToken), client.Options{Scheme: privateScheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	platform, err := framework.UpstreamCRDs("sigs.k8s.io/cluster-api", platformCAPI)
	if err != nil || len(platform) == 0 {
		fmt.Fprintln(os.Stderr, "no upstream CRDs found:", err)
		return 1
	}
	if err := env.InstallCRDs(ctx, direct, platform...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The proxy first: the private CRDs' conversion webhook points at it.
	if proxy, err = env.StartProxy(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer proxy.Stop()
	if err := proxy.InstallCRDs(ctx, filepath.Join(env.Root, "apis", "private", "crds")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	failed = m.Run()
	if failed != 0 {
		fmt.Fprintf(os.Stderr, "e2e failed; control plane state and logs kept in %s (proxy log: %s)\n", env.Dir, proxy.Log)
	}
	return failed
}
