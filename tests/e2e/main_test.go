// Package e2e drives the proxy with real clients against a real kube-apiserver, etcd and
// kube-controller-manager, with the private CRDs installed beside the upstream CAPI CRDs of the
// platform's release (platformCAPI, or E2E_PLATFORM_CAPI), as on a HyperShift management cluster where
// the platform runs its own CAPI.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openshift/hypershift-capi-proxy/proxy/convert"
	"github.com/openshift/hypershift-capi-proxy/tests/framework"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

// platformCAPI is the release whose CRDs stand for the platform's own CAPI by default (another version
// than ours): what OCP 4.22 installs, serving cluster.x-k8s.io v1beta1 only.
//
// E2E_PLATFORM_CAPI names another release; such a run is of platformTests only, unless -run names
// others. make test-e2e runs them again with what newer platforms install (PLATFORM_CAPI_NEWER: CAPI
// v1.13, serving v1beta1 and v1beta2 and storing v1beta2), so that the boundary is tested against both
// without running every test twice.
const platformCAPI = "v1.10.10"

// platformTests are the tests of the boundary with the platform's own CAPI: those that read or write the
// platform's CRDs, APIServices, schemas or objects straight on the backend, or compare the proxy's answers
// with the apiserver's where the platform's CRDs serve the upstream groups.
var platformTests = []string{
	"TestAccessReviewsFollowServing", "TestAdmissionRulesThroughTheProxy", "TestAPIServices",
	"TestBuiltinKindsPointingAtCAPI", "TestCRDIsolation", "TestCustomResourceDefinitions", "TestCutover",
	"TestDecisionsMatchDirect", "TestDiscoveryLikeAPIServer", "TestMutatingAdmissionPolicyThroughTheProxy",
	"TestOpenAPI", "TestPlatformCAPIUntouched", "TestResourceQuotaThroughTheProxy",
	"TestRolesGrantThroughTheProxy", "TestServingLabelGuard", "TestUpgradeHeadersAreIgnored",
}

// platformVersion is the release whose CRDs the platform's are in this run: E2E_PLATFORM_CAPI, or
// platformCAPI.
var platformVersion = platformRelease()

func platformRelease() string {
	if v := os.Getenv("E2E_PLATFORM_CAPI"); v != "" {
		return v
	}
	return platformCAPI
}

var (
	env   *framework.Env
	proxy *framework.Proxy

	// upstreamScheme is what a CAPI controller uses; privateScheme reads the backend directly.
	upstreamScheme = framework.UpstreamScheme
	privateScheme  = framework.PrivateScheme
)

func TestMain(m *testing.M) {
	flag.Parse()
	if platformVersion != platformCAPI && flag.Lookup("test.run").Value.String() == "" {
		if err := flag.Set("test.run", "^("+strings.Join(platformTests, "|")+")$"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "e2e: platform CAPI %s: running the tests of the boundary only (platformTests)\n", platformVersion)
	}
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
	crds, err := framework.UpstreamCRDs("sigs.k8s.io/cluster-api", platformVersion)
	if err != nil {
		return fmt.Errorf("no upstream CRDs of CAPI %s found: %w", platformVersion, err)
	}
	if len(crds) == 0 {
		return fmt.Errorf("no upstream CRDs of CAPI %s found", platformVersion)
	}
	fmt.Fprintf(os.Stderr, "e2e: the platform's own CAPI CRDs are those of CAPI %s\n", platformVersion)
	// The private CRDs come after the proxy (framework.Main): their conversion webhook points at it.
	return e.InstallCRDs(ctx, direct, crds...)
}

// TestPlatformTestsExist: every name in platformTests is a test of this package, so that a renamed test
// does not silently drop out of the runs against other platform releases.
func TestPlatformTestsExist(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
				tests[fn.Name.Name] = true
			}
		}
	}
	for _, name := range platformTests {
		if !tests[name] {
			t.Errorf("platformTests names %s, which is no test of this package", name)
		}
	}
}
