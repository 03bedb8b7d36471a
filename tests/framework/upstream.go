package framework

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	certutil "k8s.io/client-go/util/cert"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	capicontract "sigs.k8s.io/cluster-api/util/contract"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crconversion "sigs.k8s.io/controller-runtime/pkg/conversion"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/translate"

	// Every route with its typed codecs (Object, List), also of the kinds that convert by apiVersion alone.
	_ "github.com/openshift/hypershift-capi-proxy/zz_generated/routes/codecs"
)

// NewUpstreamKindsScheme returns a scheme holding the upstream Go type of every kind and list kind of routes
// at its upstream GroupVersionKind (the types CAPI's and the providers' managers register), with the
// meta/v1 kinds of each group version, for controller-runtime's conversion webhook (see
// UpstreamConversionHandler).
func NewUpstreamKindsScheme(routes []translate.Route) (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, r := range routes {
		for kind, codec := range map[string]translate.Kind{r.Kind: r.Object, r.ListKind: r.List} {
			up, _ := codec.New()
			obj, ok := up.(runtime.Object)
			if !ok {
				return nil, fmt.Errorf("%T (%s) is not a runtime.Object", up, r.Upstream)
			}
			s.AddKnownTypeWithName(r.Upstream.GroupVersion().WithKind(kind), obj)
		}
		metav1.AddToGroupVersion(s, r.Upstream.GroupVersion())
	}
	return s, nil
}

// MirroredModuleCRDFiles returns the published CRD files of every Go module holding a package of
// upstream.Packages, and of every required module whose path is a prefix of such a module's (CAPI
// publishes its CRDs in sigs.k8s.io/cluster-api, its API packages are in sigs.k8s.io/cluster-api/api from
// v1.14), from the Go module cache: upstream.PublishedCRDFiles of each module. Packages of this repository (Agent's hand-written types)
// have no published CRDs in a module and are skipped: their CRDs come from test data.
func MirroredModuleCRDFiles() ([]string, error) {
	var paths []string
	for _, p := range upstream.Packages {
		if !strings.HasPrefix(p.Path, "github.com/openshift/hypershift-capi-proxy/") {
			paths = append(paths, p.Path)
		}
	}
	out, err := exec.Command("go", append([]string{"list", "-f", "{{.Module.Path}} {{.Module.Dir}}"}, paths...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	var dirs, parents []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		mod, dir, _ := strings.Cut(l, " ")
		dirs = append(dirs, dir)
		for p := path.Dir(mod); strings.Contains(p, "/"); p = path.Dir(p) {
			parents = append(parents, p)
		}
	}
	if len(parents) > 0 {
		slices.Sort(parents)
		// -e: a prefix that is no required module has no directory.
		out, err := exec.Command("go", append([]string{"list", "-m", "-e", "-f", "{{.Dir}}"}, slices.Compact(parents)...)...).Output()
		if err != nil {
			return nil, fmt.Errorf("go list -m: %w", err)
		}
		dirs = append(dirs, strings.Fields(string(out))...)
	}
	slices.Sort(dirs)
	var files []string
	for _, dir := range slices.Compact(dirs) {
		published, err := upstream.PublishedCRDFiles(dir)
		if err != nil {
			return nil, err
		}
		files = append(files, published...)
	}
	return files, nil
}

// ReadCRDs decodes every CustomResourceDefinition document of the YAML files (documents of other kinds are
// skipped), strictly.
func ReadCRDs(files ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, doc := range strings.Split(string(data), "\n---") {
			if strings.TrimSpace(strings.TrimPrefix(doc, "---")) == "" {
				continue
			}
			var meta metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if meta.Kind != "CustomResourceDefinition" {
				continue
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.UnmarshalStrict([]byte(doc), crd); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			crds = append(crds, crd)
		}
	}
	return crds, nil
}

// UpstreamCRDsForRoutes returns, of crds (upstream's published CRDs), those of the kinds routes serve, made
// what a provider's manager installs: CAPI's contract labels of the kind (which upstream's kustomize adds,
// and the route table repeats) and, for a kind that converts by hub and spoke, a conversion webhook at
// webhookURL trusting caBundle for ConversionReview v1 and v1beta1 (upstream's kustomize webhook patch;
// the published bases leave conversion out). Kinds without hub and spoke keep strategy None. It fails if
// a route has no CRD among crds.
func UpstreamCRDsForRoutes(crds []*apiextensionsv1.CustomResourceDefinition, routes []translate.Route, webhookURL string, caBundle []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	byName := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, crd := range crds {
		byName[crd.Name] = crd
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	seen := map[string]bool{}
	for _, r := range routes {
		name := r.Upstream.Resource + "." + r.Upstream.Group
		crd, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("no upstream CRD %s for route %s", name, r.Upstream)
		}
		if !seen[name] {
			seen[name] = true
			crd = crd.DeepCopy()
			out = append(out, crd)
			byName[name] = crd
		}
		for k, v := range r.ContractLabels {
			if crd.Labels == nil {
				crd.Labels = map[string]string{}
			}
			crd.Labels[k] = v
		}
		if r.Conversion != translate.NoConversion {
			url := webhookURL
			crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
				Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
					ConversionReviewVersions: []string{"v1", "v1beta1"},
				},
			}
		}
	}
	return out, nil
}

// UpstreamConversionHandler is controller-runtime's conversion webhook handler
// (sigs.k8s.io/controller-runtime/pkg/webhook/conversion.NewWebhookHandler) over scheme (made by
// NewUpstreamKindsScheme for routes), converting as upstream's managers do, whichever way the pinned
// versions keep their conversions: a kind whose upstream Go types convert themselves (conversion.Hub and
// conversion.Convertible) is left to the handler, which finds their methods; for any other kind that
// converts by hub and spoke, the registry holds controller-runtime's hub-and-spoke converter
// (conversion.NewHubSpokeConverter) over upstream's spoke functions as the route table has them
// (translate.Route.ToHub, FromHub), as upstream's manager registers it (WithConverter). It fails if a
// kind's types are no client.Object or controller-runtime refuses the converter.
func UpstreamConversionHandler(scheme *runtime.Scheme, routes []translate.Route) (http.Handler, error) {
	registry := conversion.NewRegistry()
	var order []schema.GroupKind
	byKind := map[schema.GroupKind][]*translate.Route{}
	for i := range routes {
		r := &routes[i]
		if r.Conversion == translate.NoConversion {
			continue
		}
		gk := r.UpstreamGVK().GroupKind()
		if byKind[gk] == nil {
			order = append(order, gk)
		}
		byKind[gk] = append(byKind[gk], r)
	}
	for _, gk := range order {
		var hub client.Object
		var spokes []conversion.SpokeConverter[client.Object]
		var selfConverting bool
		for _, r := range byKind[gk] {
			up, _ := r.Object.New()
			obj, ok := up.(client.Object)
			if !ok {
				return nil, fmt.Errorf("%T (%s) is not a client.Object", up, r.Upstream)
			}
			switch r.Conversion {
			case translate.Hub:
				hub = obj
			case translate.Spoke:
				if _, ok := up.(crconversion.Convertible); ok {
					selfConverting = true
					continue
				}
				toHub, fromHub := r.ToHub, r.FromHub
				spokes = append(spokes, conversion.NewSpokeConverter(obj,
					func(ctx context.Context, hub, spoke client.Object) error { return fromHub(ctx, hub, spoke) },
					func(ctx context.Context, spoke, hub client.Object) error { return toHub(ctx, spoke, hub) }))
			}
		}
		if selfConverting || len(spokes) == 0 {
			continue
		}
		if hub == nil {
			return nil, fmt.Errorf("%s: spokes without a hub", gk)
		}
		c, err := conversion.NewHubSpokeConverter(hub, spokes...)(scheme)
		if err == nil {
			err = registry.RegisterConverter(gk, c)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", gk, err)
		}
	}
	return conversion.NewWebhookHandler(scheme, registry), nil
}

// ConversionWebhook is controller-runtime's conversion webhook handler serving TLS on loopback, as a
// provider's manager serves it.
type ConversionWebhook struct {
	// URL is https://127.0.0.1:<port>/convert; CABundle the PEM certificate it serves (self-signed).
	URL      string
	CABundle []byte
	srv      *http.Server
	// stopCache stops the cache the apiVersion getter reads CRDs from (InstallUpstreamCRDs), if any.
	stopCache func()
}

// StartConversionWebhook serves UpstreamConversionHandler over scheme and routes at /convert on a free
// loopback port.
func StartConversionWebhook(scheme *runtime.Scheme, routes []translate.Route) (*ConversionWebhook, error) {
	handler, err := UpstreamConversionHandler(scheme, routes)
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/convert", handler)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	go func() { _ = srv.ServeTLS(l, "", "") }()
	return &ConversionWebhook{URL: fmt.Sprintf("https://%s/convert", l.Addr()), CABundle: certPEM, srv: srv}, nil
}

// Stop closes the webhook's server, and stops the CRD cache of the apiVersion getter InstallUpstreamCRDs
// installed.
func (w *ConversionWebhook) Stop() {
	_ = w.srv.Close()
	if w.stopCache != nil {
		w.stopCache()
	}
}

// InstallCRDObjects creates the CRDs with the admin's credentials, then waits until each is Established.
func (e *Env) InstallCRDObjects(ctx context.Context, crds ...*apiextensionsv1.CustomResourceDefinition) error {
	c, err := e.AdminClient()
	if err != nil {
		return err
	}
	for _, crd := range crds {
		if err := c.Create(ctx, crd.DeepCopy()); err != nil {
			return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		if err := waitEstablished(ctx, c, crd.DeepCopy()); err != nil {
			return err
		}
	}
	return nil
}

// CAPIAPIVersionGetter returns the apiVersion getter Cluster API's managers install for the conversions of
// their v1beta1 APIs (sigs.k8s.io/cluster-api main.go, core/main.go from v1.14: SetAPIVersionGetter with
// internal/contract.GetAPIVersion over the manager's client), rewritten here because that package is
// internal, with its error texts: it reads the metadata of the kind's CRD (named by
// util/contract.CalculateCRDName) with the context it is given (v1.14's getter gets the conversion's;
// v1.13's takes none, and routes.APIVersionGetterSetters gives it context.Background()) and picks, of
// the contracts compatible with CAPI's (v1beta2, then v1beta1), the newest one the CRD labels, and of
// its versions the newest.
func CAPIAPIVersionGetter(c client.Reader) func(context.Context, schema.GroupKind) (string, error) {
	return func(ctx context.Context, gk schema.GroupKind) (string, error) {
		meta := &metav1.PartialObjectMetadata{}
		meta.SetName(capicontract.CalculateCRDName(gk.Group, gk.Kind))
		meta.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		if err := c.Get(ctx, client.ObjectKeyFromObject(meta), meta); err != nil {
			return "", fmt.Errorf("failed to get apiVersion for kind %s: failed to get CustomResourceDefinition metadata: %w", gk.Kind, err)
		}
		contracts := []string{"v1beta2", "v1beta1"}
		for _, contract := range contracts {
			supported := meta.GetLabels()[clusterv1.GroupVersion.Group+"/"+contract]
			if supported == "" {
				continue
			}
			versions := strings.Split(supported, "_")
			sort.Slice(versions, func(i, j int) bool {
				return version.CompareKubeAwareVersionStrings(versions[i], versions[j]) < 0
			})
			return schema.GroupVersion{Group: gk.Group, Version: versions[len(versions)-1]}.String(), nil
		}
		return "", fmt.Errorf("failed to get apiVersion for kind %s: cannot find any versions matching contract versions %q for CRD %v as contract version label(s) are either missing or empty (see https://cluster-api.sigs.k8s.io/developer/providers/contracts/overview.html#api-version-labels)",
			gk.Kind, contracts, meta.GetName())
	}
}

// InstallUpstreamCRDs installs, as a platform would, the upstream CRDs of every kind routes serve (the
// published CRDs of every mirrored module and tests/testdata/agent-crds, made by UpstreamCRDsForRoutes),
// with their conversion webhook served in this process by controller-runtime's handler over the upstream
// Go types (UpstreamConversionHandler). The upstream conversions resolve references as CAPI's managers do, from the contract labels of
// the referenced kind's upstream CRD, read from a cache of the CRDs' metadata as a manager's client reads
// it: each of setters (routes.APIVersionGetterSetters) gets that getter. The caller stops the returned
// webhook (and so the cache) after its tests.
func (e *Env) InstallUpstreamCRDs(ctx context.Context, routes []translate.Route, setters []func(func(context.Context, schema.GroupKind) (string, error))) (*ConversionWebhook, error) {
	scheme, err := NewUpstreamKindsScheme(routes)
	if err != nil {
		return nil, err
	}
	files, err := MirroredModuleCRDFiles()
	if err != nil {
		return nil, err
	}
	agent, err := filepath.Glob(filepath.Join(e.Root, "tests", "testdata", "agent-crds", "*.yaml"))
	if err != nil || len(agent) == 0 {
		return nil, fmt.Errorf("no Agent CRDs in tests/testdata/agent-crds: %w", err)
	}
	published, err := ReadCRDs(append(files, agent...)...)
	if err != nil {
		return nil, err
	}
	webhook, err := StartConversionWebhook(scheme, routes)
	if err != nil {
		return nil, err
	}
	crds, err := UpstreamCRDsForRoutes(published, routes, webhook.URL, webhook.CABundle)
	if err == nil {
		err = e.InstallCRDObjects(ctx, crds...)
	}
	if err == nil {
		// Read after the install, so that the cache holds every CRD from the first conversion on.
		var reader client.Reader
		reader, webhook.stopCache, err = e.crdMetadataCache(ctx)
		for _, set := range setters {
			set(CAPIAPIVersionGetter(reader))
		}
	}
	if err != nil {
		webhook.Stop()
		return nil, err
	}
	return webhook, nil
}

// crdMetadataCache starts a controller-runtime cache of the env's CustomResourceDefinitions' metadata and
// waits until it holds them all: CAPI's managers read CRDs through their manager's client, which reads
// PartialObjectMetadata from the manager's cache (so its NotFound names the kind,
// CustomResourceDefinition.apiextensions.k8s.io, where the apiserver's names the resource). It returns
// the cache and the function that stops it.
func (e *Env) crdMetadataCache(ctx context.Context) (client.Reader, func(), error) {
	c, err := cache.New(e.DirectConfig(e.AdminToken), cache.Options{Scheme: PrivateScheme})
	if err != nil {
		return nil, nil, err
	}
	cacheCtx, stop := context.WithCancel(context.Background())
	go func() { _ = c.Start(cacheCtx) }()
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if _, err := c.GetInformer(ctx, meta); err != nil {
		stop()
		return nil, nil, err
	}
	if !c.WaitForCacheSync(ctx) {
		stop()
		return nil, nil, fmt.Errorf("the CustomResourceDefinitions' metadata cache did not sync")
	}
	return c, stop, nil
}
