package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	endpointsdiscovery "k8s.io/apiserver/pkg/endpoints/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/proxy/discovery"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

const aggregatedV2 = "Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// TestDiscoveryLikeAPIServer compares what the proxy serves with what the apiserver serves for the
// private CRDs (and, where the platform's own upstream CRDs serve the same kind, for those): which
// versions exist, content negotiation, storageVersionHash and the ETag of aggregated discovery.
func TestDiscoveryLikeAPIServer(t *testing.T) {
	p, d := viaProxy(t), direct(t)

	t.Run("only versions the apiserver serves", func(t *testing.T) {
		// CAPA's v1beta1 is in upstream's CRDs, unserved; the private CRD has it unserved too. The proxy
		// serves AWSMachines at v1beta2 only, as the apiserver serving upstream's CRD would.
		d.mustDo(t, http.StatusNotFound, http.MethodGet, "/apis/infrastructure.cluster.hypershift.openshift.io/v1beta1/namespaces/default/awsmachines", "")
		d.mustDo(t, http.StatusOK, http.MethodGet, "/apis/infrastructure.cluster.hypershift.openshift.io/v1beta2/namespaces/default/awsmachines", "")
		p.mustDo(t, http.StatusNotFound, http.MethodGet, "/apis/infrastructure.cluster.x-k8s.io/v1beta1/namespaces/default/awsmachines", "")
		p.mustDo(t, http.StatusOK, http.MethodGet, "/apis/infrastructure.cluster.x-k8s.io/v1beta2/namespaces/default/awsmachines", "")

		var legacy metav1.APIResourceList
		mustJSON(t, p.mustDo(t, http.StatusOK, http.MethodGet, "/apis/infrastructure.cluster.x-k8s.io/v1beta1", ""), &legacy)
		for _, r := range legacy.APIResources {
			if strings.HasPrefix(r.Name, "awsmachines") {
				t.Errorf("legacy discovery of infrastructure.cluster.x-k8s.io/v1beta1 lists %s", r.Name)
			}
		}

		// Aggregated discovery: every mapped group shows exactly the routed versions and resources the
		// apiserver shows for its private group (other tests create CRDs of other names in the private
		// groups, which the proxy never shows).
		var viaProxyDoc, directDoc apidiscoveryv2.APIGroupDiscoveryList
		mustJSON(t, p.mustDo(t, http.StatusOK, http.MethodGet, "/apis", "", aggregatedV2), &viaProxyDoc)
		mustJSON(t, d.mustDo(t, http.StatusOK, http.MethodGet, "/apis", "", aggregatedV2), &directDoc)
		want, got := map[string][]string{}, map[string][]string{}
		routed := translate.NewTable(routes.Routes)
		for _, g := range directDoc.Items {
			if up, ok := upstream.UpstreamGroup(g.Name); ok {
				for _, vr := range versionResources(g) {
					version, resource, _ := strings.Cut(vr, "/")
					if _, ok := routed.ByPrivate(schema.GroupVersionResource{Group: g.Name, Version: version, Resource: resource}); ok {
						want[up] = append(want[up], vr)
					}
				}
			}
		}
		for _, g := range viaProxyDoc.Items {
			if _, ok := want[g.Name]; ok {
				got[g.Name] = versionResources(g)
			}
		}
		for group, w := range want {
			if strings.Join(got[group], " ") != strings.Join(w, " ") {
				t.Errorf("%s through the proxy:\n%v\nthe apiserver's private group:\n%v", group, got[group], w)
			}
		}
	})

	t.Run("content negotiation", func(t *testing.T) {
		const (
			table    = "as=Table;g=meta.k8s.io;v=v1"
			pom      = "as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
			protobuf = "application/vnd.kubernetes.protobuf"
		)
		for _, tc := range []struct {
			accept string
			code   int
			kind   string // of a 200 answer
		}{
			{"text/plain", http.StatusNotAcceptable, ""},
			{protobuf, http.StatusNotAcceptable, ""}, // custom resources are not served in protobuf
			{protobuf + ";" + table, http.StatusNotAcceptable, ""},
			{protobuf + ";" + table + ", application/json", http.StatusOK, "MachineList"},
			{protobuf + ";" + pom + ", application/json", http.StatusOK, "PartialObjectMetadataList"},
			{"", http.StatusOK, "MachineList"},
			{"*/*", http.StatusOK, "MachineList"},
			{"application/*", http.StatusOK, "MachineList"},
			{protobuf + ", */*", http.StatusOK, "MachineList"},
			{"text/plain, application/json;q=0.5", http.StatusOK, "MachineList"},
			{"application/json;" + table + ";q=0.5, application/json", http.StatusOK, "MachineList"},
			{"application/json;q=0.5, application/json;" + table, http.StatusOK, "Table"},
		} {
			var header []string
			if tc.accept != "" {
				header = []string{"Accept: " + tc.accept}
			}
			var privateContentType string
			for _, c := range []struct {
				name, path string
				client     *rawClient
			}{
				{"the apiserver (private CRD)", "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/default/machines", d},
				{"the proxy", "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/machines", p},
				{"the apiserver (platform's upstream CRD)", "/apis/cluster.x-k8s.io/v1beta1/namespaces/default/machines", d},
			} {
				resp, data := c.client.do(t, http.MethodGet, c.path, "", header...)
				if resp.StatusCode != tc.code {
					t.Errorf("Accept %q, %s: %d, want %d: %.300s", tc.accept, c.name, resp.StatusCode, tc.code, data)
					continue
				}
				// The apiserver may answer in protobuf (PartialObjectMetadataList, and a 406 to a client
				// asking for protobuf only); the proxy answers in the media type the apiserver answers in.
				contentType := resp.Header.Get("Content-Type")
				isJSON := strings.HasPrefix(contentType, "application/json")
				if c.client == d && privateContentType == "" {
					privateContentType = contentType
				}
				if c.client == p && contentType != privateContentType {
					t.Errorf("Accept %q, %s: %d in %s, the apiserver's in %s", tc.accept, c.name, resp.StatusCode, contentType, privateContentType)
					continue
				}
				var tm metav1.TypeMeta
				_ = json.Unmarshal(data, &tm)
				if want := tc.kind; isJSON && tc.code == http.StatusOK && tm.Kind != want {
					t.Errorf("Accept %q, %s: a %s, want a %s", tc.accept, c.name, tm.Kind, want)
				}
				if tc.kind == "Table" && resp.Header.Get("Content-Type") != "application/json" {
					// The shape is in the body only: in-process conversion cannot tell a Table by it.
					t.Errorf("Accept %q, %s: a Table as %q", tc.accept, c.name, resp.Header.Get("Content-Type"))
				}
				if isJSON && tc.code == http.StatusNotAcceptable && (tm.Kind != "Status" || !strings.Contains(string(data), "only the following media types are accepted")) {
					t.Errorf("Accept %q, %s: %s", tc.accept, c.name, data)
				}
			}
		}
		// The apiserver writes the errors of a request it refuses before negotiating (403) in the client's
		// media type where it can: through the proxy they come in the media type the apiserver writes them
		// in for the private CRD, translated.
		alice := newRawClient(t, proxy.Config(env.UserToken))
		aliceDirect := newRawClient(t, env.DirectConfig(env.UserToken))
		for _, accept := range []string{protobuf, protobuf + ";" + table, "application/yaml", "application/cbor"} {
			resp, data := alice.do(t, http.MethodGet, "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/machines", "", "Accept: "+accept)
			want, _ := aliceDirect.do(t, http.MethodGet, "/apis/cluster.hypershift.openshift.io/v1beta2/namespaces/default/machines", "", "Accept: "+accept)
			if resp.StatusCode != http.StatusForbidden || resp.StatusCode != want.StatusCode ||
				resp.Header.Get("Content-Type") != want.Header.Get("Content-Type") ||
				strings.Contains(string(data), "hypershift") || !strings.Contains(string(data), "cluster.x-k8s.io") {
				t.Errorf("alice, Accept %q: %d %s %q; the apiserver's %d %s", accept, resp.StatusCode, resp.Header.Get("Content-Type"), data,
					want.StatusCode, want.Header.Get("Content-Type"))
			}
		}

		// Discovery negotiates as the apiserver does, too, and answers in the media type it answers in,
		// protobuf and YAML alone included; the document is the JSON one, encoded so.
		jsonDoc := func(t *testing.T, c *rawClient, path string) string {
			t.Helper()
			return string(c.mustDo(t, http.StatusOK, http.MethodGet, path, ""))
		}
		for _, tc := range []struct{ proxied, direct, extra string }{
			{"/apis/cluster.x-k8s.io/v1beta2", "/apis/cluster.hypershift.openshift.io/v1beta2", ""},
			{"/apis/cluster.x-k8s.io", "/apis/cluster.hypershift.openshift.io", ""},
			{"/apis", "/apis", ""},
			{"/apis", "/apis", ";g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"},
		} {
			for _, accept := range []string{"text/plain", protobuf + ";" + table, protobuf + tc.extra, "application/yaml" + tc.extra, "application/json" + tc.extra} {
				resp, data := p.do(t, http.MethodGet, tc.proxied, "", "Accept: "+accept)
				want, _ := d.do(t, http.MethodGet, tc.direct, "", "Accept: "+accept)
				if resp.StatusCode != want.StatusCode || resp.Header.Get("Content-Type") != want.Header.Get("Content-Type") {
					t.Errorf("discovery of %s with Accept %q: %d %s, the apiserver's %d %s", tc.proxied, accept, resp.StatusCode,
						resp.Header.Get("Content-Type"), want.StatusCode, want.Header.Get("Content-Type"))
					continue
				}
				if resp.StatusCode != http.StatusOK || tc.extra != "" || tc.proxied == "/apis" {
					continue // the aggregated and /apis documents are compared elsewhere
				}
				var asJSON []byte
				switch mediaType, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";"); mediaType {
				case "application/yaml":
					asJSON, _ = yaml.YAMLToJSON(data)
				case protobuf:
					obj, _, err := clientgoscheme.Codecs.UniversalDeserializer().Decode(data, nil, nil)
					if err != nil {
						t.Fatalf("%s in protobuf: %v", tc.proxied, err)
					}
					asJSON, _ = json.Marshal(obj)
				default:
					asJSON = data
				}
				if got, want := normalJSON(t, asJSON), normalJSON(t, []byte(jsonDoc(t, p, tc.proxied))); got != want {
					t.Errorf("discovery of %s in %s:\n%s\nin JSON:\n%s", tc.proxied, accept, got, want)
				}
			}
		}
	})

	t.Run("storageVersionHash", func(t *testing.T) {
		c, err := env.AdminClient()
		if err != nil {
			t.Fatal(err)
		}
		crds := &apiextensionsv1.CustomResourceDefinitionList{}
		if err := c.List(context.Background(), crds); err != nil {
			t.Fatal(err)
		}
		storage := func(group, resource string) (string, string) {
			for _, crd := range crds.Items {
				if crd.Spec.Group == group && crd.Spec.Names.Plural == resource {
					for _, v := range crd.Spec.Versions {
						if v.Storage {
							return v.Name, crd.Spec.Names.Kind
						}
					}
				}
			}
			t.Fatalf("no CRD %s.%s", resource, group)
			return "", ""
		}
		hashOf := func(client *rawClient, gv, resource string) string {
			var l metav1.APIResourceList
			mustJSON(t, client.mustDo(t, http.StatusOK, http.MethodGet, "/apis/"+gv, ""), &l)
			for _, r := range l.APIResources {
				if r.Name == resource {
					return r.StorageVersionHash
				}
			}
			t.Fatalf("%s lists no %s", gv, resource)
			return ""
		}

		// The apiserver hashes group, storage version and kind of a CRD: the private one, and the
		// platform's upstream one (CAPI platformVersion, storing v1beta1 or v1beta2).
		private, kind := storage("cluster.hypershift.openshift.io", "machines")
		if got, want := hashOf(d, "cluster.hypershift.openshift.io/v1beta2", "machines"), endpointsdiscovery.StorageVersionHash("cluster.hypershift.openshift.io", private, kind); got != want {
			t.Fatalf("the apiserver's hash of the private Machines: %q, the library's %q", got, want)
		}
		platform, _ := storage("cluster.x-k8s.io", "machines")
		if got, want := hashOf(d, "cluster.x-k8s.io/v1beta1", "machines"), endpointsdiscovery.StorageVersionHash("cluster.x-k8s.io", platform, kind); got != want {
			t.Fatalf("the apiserver's hash of the platform's Machines: %q, the library's %q", got, want)
		}

		// Through the proxy: every mapped resource's hash is the upstream group's at the private CRD's
		// storage version, as the apiserver would show for upstream's CRD stored at that version.
		for _, g := range upstream.Groups {
			var l metav1.APIResourceList
			var group metav1.APIGroup
			resp, data := p.do(t, http.MethodGet, "/apis/"+g.Upstream, "")
			if resp.StatusCode == http.StatusNotFound {
				continue
			}
			mustJSON(t, data, &group)
			for _, v := range group.Versions {
				mustJSON(t, p.mustDo(t, http.StatusOK, http.MethodGet, "/apis/"+v.GroupVersion, ""), &l)
				for _, r := range l.APIResources {
					if strings.Contains(r.Name, "/") {
						continue
					}
					version, kind := storage(g.Private, r.Name)
					if want := endpointsdiscovery.StorageVersionHash(g.Upstream, version, kind); r.StorageVersionHash != want {
						t.Errorf("%s %s: storageVersionHash %q, want %q (%s/%s %s)", v.GroupVersion, r.Name, r.StorageVersionHash, want, g.Upstream, version, kind)
					}
				}
			}
		}
	})

	t.Run("ETag", func(t *testing.T) {
		// The apiserver's ETag is what discovery.ETag computes for its document.
		resp, data := d.do(t, http.MethodGet, "/apis", "", aggregatedV2)
		if want, ok := discovery.ETag(data); resp.StatusCode != http.StatusOK || !ok || resp.Header.Get("ETag") != want {
			t.Fatalf("the apiserver's ETag %q, computed %q", resp.Header.Get("ETag"), want)
		}
		directHeader := resp.Header

		// The proxy sends the ETag of its own document, and answers 304 to a client that has it. Another
		// test may change the CRDs in between (a changed document has a new ETag): then it tries again.
		err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			resp, data := p.do(t, http.MethodGet, "/apis", "", aggregatedV2)
			etag := resp.Header.Get("ETag")
			if want, ok := discovery.ETag(data); resp.StatusCode != http.StatusOK || !ok || etag != want {
				t.Fatalf("the proxy's ETag %q, computed %q over its document", etag, want)
			}
			for _, h := range []string{"Vary", "Cache-Control", "Content-Type"} {
				if resp.Header.Get(h) != directHeader.Get(h) {
					t.Errorf("%s: the proxy's %q, the apiserver's %q", h, resp.Header.Get(h), directHeader.Get(h))
				}
			}
			resp, data = p.do(t, http.MethodGet, "/apis", "", aggregatedV2, "If-None-Match: "+etag)
			if resp.StatusCode == http.StatusOK && resp.Header.Get("ETag") != etag {
				return false, nil // the document changed
			}
			if resp.StatusCode != http.StatusNotModified || len(data) != 0 || resp.Header.Get("ETag") != etag {
				t.Fatalf("If-None-Match: %d, ETag %q, body %.200s", resp.StatusCode, resp.Header.Get("ETag"), data)
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("the proxy's document never stayed the same for two requests: %v", err)
		}

		// Compressed as the apiserver compresses: gzip above 128 KiB, for a client that accepts it.
		for _, c := range []*rawClient{p, d} {
			resp, data := c.do(t, http.MethodGet, "/apis", "", aggregatedV2, "Accept-Encoding: gzip")
			if resp.Header.Get("Content-Encoding") == "gzip" {
				zr, err := gzip.NewReader(bytes.NewReader(data))
				if err != nil {
					t.Fatal(err)
				}
				if data, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			if gzipped := resp.Header.Get("Content-Encoding") == "gzip"; gzipped != (len(data) > 128<<10) {
				t.Errorf("%s: %d bytes, gzip %v", c.base, len(data), gzipped)
			}
			t.Logf("%s: aggregated discovery of %d bytes, Content-Encoding %q", c.base, len(data), resp.Header.Get("Content-Encoding"))
		}

		// Legacy discovery: an ETag exactly where the apiserver sends one (nowhere).
		for _, path := range [][2]string{{"/apis", "/apis"}, {"/apis/cluster.x-k8s.io", "/apis/cluster.hypershift.openshift.io"},
			{"/apis/cluster.x-k8s.io/v1beta2", "/apis/cluster.hypershift.openshift.io/v1beta2"}} {
			viaProxy, _ := p.do(t, http.MethodGet, path[0], "")
			want, _ := d.do(t, http.MethodGet, path[1], "")
			if (viaProxy.Header.Get("ETag") == "") != (want.Header.Get("ETag") == "") {
				t.Errorf("%s: ETag %q through the proxy, %q from the apiserver", path[0], viaProxy.Header.Get("ETag"), want.Header.Get("ETag"))
			}
		}
	})
}

// versionResources lists the "version/resource" pairs of an aggregated discovery group, sorted.
func versionResources(g apidiscoveryv2.APIGroupDiscovery) []string {
	var out []string
	for _, v := range g.Versions {
		for _, r := range v.Resources {
			out = append(out, v.Version+"/"+r.Resource)
		}
	}
	sort.Strings(out)
	return out
}

func mustJSON(t *testing.T, data []byte, into any) {
	t.Helper()
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatalf("decoding %.300s: %v", data, err)
	}
}

// normalJSON is a JSON object decoded and encoded again, without its kind and apiVersion (which a
// decoded protobuf document does not hold), so that two encodings of one document compare equal.
func normalJSON(t *testing.T, data []byte) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%v: %.200s", err, data)
	}
	delete(v, "kind")
	delete(v, "apiVersion")
	out, _ := json.Marshal(v)
	return string(out)
}
