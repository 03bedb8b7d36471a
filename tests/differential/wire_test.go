package differential

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

// wireKinds are the kind versions the content-type and malformed-body cases run on: CAPI's hub, a spoke
// served through the conversion webhooks, a provider's kind and a cluster-scoped provider kind.
// Each with a valid spec, so that the objects are created.
var wireKinds = map[string]map[string]any{
	"cluster.x-k8s.io/v1beta2, Resource=clusters":                                  {"paused": false},
	"cluster.x-k8s.io/v1beta1, Resource=clusters":                                  {"paused": false},
	"infrastructure.cluster.x-k8s.io/v1beta2, Resource=awsmachines":                {"instanceType": "m5.large"},
	"infrastructure.cluster.x-k8s.io/v1beta2, Resource=awsclusterstaticidentities": {"secretRef": "s"},
}

// wireObject is the object of route r named name (a template) with its valid spec.
func wireObject(r *translate.Route, name string) map[string]any {
	obj := minimal(r, name)
	obj["spec"] = wireKinds[r.Upstream.String()]
	return obj
}

func wireRoutes(t *testing.T) []*translate.Route {
	t.Helper()
	var out []*translate.Route
	for _, want := range sortedKeys(wireKinds) {
		found := false
		for i := range routes.Routes {
			if routes.Routes[i].Upstream.String() == want {
				out = append(out, &routes.Routes[i])
				found = true
			}
		}
		if !found {
			t.Fatalf("no route %s", want)
		}
	}
	return out
}

// accepts are Accept headers clients send: JSON, YAML, protobuf (which custom resources do not serve),
// CBOR, text/plain alone (406), wildcards, and the Table and PartialObjectMetadata transformations.
var accepts = []string{
	"",
	"application/json",
	"application/yaml",
	"application/vnd.kubernetes.protobuf",
	"application/vnd.kubernetes.protobuf, application/json",
	"application/cbor",
	"application/cbor, application/json",
	"text/plain",
	"text/plain, */*",
	"*/*",
	"application/json;as=Table;v=v1;g=meta.k8s.io",
	"application/json;as=Table;v=v1;g=meta.k8s.io, application/json",
	"application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io",
	"application/yaml;as=Table;v=v1;g=meta.k8s.io",
	"application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
	"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
	"application/json;as=PartialObjectMetadata;v=v1beta1;g=meta.k8s.io",
	"application/json;as=Unknown;v=v1;g=meta.k8s.io",
}

// testWire sends objects in every content type and reads them with every Accept header.
func testWire(t *testing.T) {
	for _, r := range wireRoutes(t) {
		k := pathsOf(r)
		t.Run(r.Upstream.Group+"/"+r.Upstream.Version+"/"+r.Upstream.Resource, func(t *testing.T) {
			st := newState()
			obj := wireObject(r, k.name("wire"))
			js := mustJSON(t, obj)
			ya, err := yaml.JSONToYAML([]byte(js))
			if err != nil {
				t.Fatal(err)
			}
			cb, err := cbordirect.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct{ name, ct, body, accept string }{
				{"create-yaml", "application/yaml", string(ya), ""},
				{"create-yaml-accept-yaml", "application/yaml", strings.ReplaceAll(string(ya), "wire", "wire-y"), "application/yaml"},
				{"create-no-content-type", "", strings.ReplaceAll(js, "wire", "wire-n"), ""},
				{"create-json-charset", "application/json; charset=utf-8", strings.ReplaceAll(js, "wire", "wire-c"), ""},
				{"create-protobuf", "application/vnd.kubernetes.protobuf", "k8s\x00\x0a\x04junk", ""},
				{"create-cbor", "application/cbor", string(cb), ""},
				{"create-text-plain", "text/plain", js, ""},
				{"create-accept-text-plain", "application/json", strings.ReplaceAll(js, "wire", "wire-t"), "text/plain"},
				{"create-accept-table", "application/json", strings.ReplaceAll(js, "wire", "wire-tb"), "application/json;as=Table;v=v1;g=meta.k8s.io"},
			} {
				var header []string
				if c.ct != "" {
					header = append(header, "Content-Type: "+c.ct)
				}
				if c.accept != "" {
					header = append(header, "Accept: "+c.accept)
				}
				pair(t, st, k.caseName(c.name), "", request{method: http.MethodPost, path: k.collection, body: c.body, header: header})
			}
			for i, a := range accepts {
				var header []string
				if a != "" {
					header = []string{"Accept: " + a}
				}
				pair(t, st, k.caseName(fmt.Sprintf("get-accept-%d", i)), "", request{method: http.MethodGet, path: k.item("wire"), header: header})
				pair(t, st, k.caseName(fmt.Sprintf("list-accept-%d", i)), "", request{method: http.MethodGet, path: k.collection, header: header})
			}
			pair(t, st, k.caseName("list-table-include-object"), "", request{method: http.MethodGet,
				path: k.collection + "?includeObject=Object", header: []string{"Accept: application/json;as=Table;v=v1;g=meta.k8s.io"}})
			pair(t, st, k.caseName("list-limit"), "", request{method: http.MethodGet, path: k.collection + "?limit=1"})
		})
	}
}

// testMalformed sends invalid and malformed bodies.
func testMalformed(t *testing.T) {
	for _, r := range wireRoutes(t) {
		k := pathsOf(r)
		t.Run(r.Upstream.Group+"/"+r.Upstream.Version+"/"+r.Upstream.Resource, func(t *testing.T) {
			st := newState()
			good := mustJSON(t, wireObject(r, k.name("mal")))
			withName := func(s, name string) string { return strings.Replace(s, k.name("mal"), k.name(name), 1) }
			otherKind := mustJSON(t, map[string]any{"apiVersion": r.Upstream.GroupVersion().String(), "kind": "MachinePool",
				"metadata": map[string]any{"name": k.name("wrongkind")}})
			coreKind := mustJSON(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": k.name("core")}})
			privateGroup := strings.Replace(good, r.Upstream.Group, strings.Replace(r.Upstream.Group, "x-k8s.io", "hypershift.openshift.io", 1), 1)
			otherVersion := strings.Replace(good, "/"+r.Upstream.Version+`"`, `/v9"`, 1)
			unknown := strings.Replace(good, `"kind"`, `"spec":{"unknownA":1,"nested":{"unknownB":true}},"unknownTop":"x","kind"`, 1)
			duplicate := strings.Replace(good, `"kind":"`+r.Kind+`"`, `"kind":"`+r.Kind+`","kind":"`+r.Kind+`","metadata":{"name":"dup"}`, 1)
			post := func(name, query, body string, header ...string) {
				if len(header) == 0 {
					header = []string{jsonCT}
				}
				pair(t, st, k.caseName(name), "", request{method: http.MethodPost, path: k.collection + query, body: body, header: header})
			}
			post("malformed-json", "", `{"apiVersion":`)
			post("truncated-json", "", good[:len(good)/2])
			post("trailing-garbage", "", withName(good, "trail")+"}x")
			post("not-an-object", "", `[1,2]`)
			post("null", "", `null`)
			post("string", "", `"x"`)
			post("empty-body", "", "")
			post("empty-object", "", "{}")
			post("wrong-kind", "", otherKind)
			post("core-kind", "", coreKind)
			post("private-group", "", withName(privateGroup, "priv"))
			post("other-version", "", withName(otherVersion, "v9"))
			post("no-kind", "", strings.Replace(withName(good, "nokind"), `"kind":"`+r.Kind+`",`, "", 1))
			post("no-apiversion", "", strings.Replace(withName(good, "noapi"), `"apiVersion":"`+r.Upstream.GroupVersion().String()+`",`, "", 1))
			for _, fv := range []string{"Strict", "Warn", "Ignore", ""} {
				suffix := strings.ToLower(fv)
				post("unknown-fields-"+suffix, "?fieldValidation="+fv, withName(unknown, "unk-"+suffix))
				post("duplicate-fields-"+suffix, "?fieldValidation="+fv, withName(duplicate, "dup-"+suffix))
			}
			post("invalid-field-validation", "?fieldValidation=Bogus", withName(good, "bogus"))
			if r.Namespaced {
				post("namespace-mismatch", "", strings.Replace(withName(good, "nsm"), `"namespace":"`+nsPlaceholder+`"`, `"namespace":"other"`, 1))
			}
			post("dry-run", "?dryRun=All", withName(good, "dry"))
			post("generate-name", "", strings.Replace(good, `"name":"`+k.name("mal")+`"`, `"generateName":"`+k.name("gen")+`-"`, 1))
			post("create", "", good)
			post("already-exists", "", good)

			item := k.item("mal")
			pairs := []struct{ name, method, path, body, ct string }{
				{"put-malformed", http.MethodPut, item, `{"metadata":`, jsonCT},
				{"put-name-mismatch", http.MethodPut, item, withName(good, "other"), jsonCT},
				{"put-empty", http.MethodPut, item, "", jsonCT},
				{"put-stale-resourceversion", http.MethodPut, item, strings.Replace(good, `"metadata":{`, `"metadata":{"resourceVersion":"1",`, 1), jsonCT},
				{"put-bad-resourceversion", http.MethodPut, item, strings.Replace(good, `"metadata":{`, `"metadata":{"resourceVersion":"x",`, 1), jsonCT},
				{"merge-patch-malformed", http.MethodPatch, item, `{"spec":`, mergeCT},
				{"merge-patch-array", http.MethodPatch, item, `[]`, mergeCT},
				{"merge-patch-null", http.MethodPatch, item, `null`, mergeCT},
				{"merge-patch-change-kind", http.MethodPatch, item, `{"kind":"Machine"}`, mergeCT},
				{"merge-patch-change-apiversion", http.MethodPatch, item, `{"apiVersion":"cluster.x-k8s.io/v1beta1"}`, mergeCT},
				{"merge-patch-unknown-strict", http.MethodPatch, item + "?fieldValidation=Strict", `{"spec":{"unknownA":1}}`, mergeCT},
				{"merge-patch-unknown-warn", http.MethodPatch, item + "?fieldValidation=Warn", `{"spec":{"unknownA":1}}`, mergeCT},
				{"json-patch-not-array", http.MethodPatch, item, `{"op":"add"}`, "Content-Type: application/json-patch+json"},
				{"json-patch-bad-op", http.MethodPatch, item, `[{"op":"frobnicate","path":"/spec"}]`, "Content-Type: application/json-patch+json"},
				{"json-patch-missing-path", http.MethodPatch, item, `[{"op":"remove","path":"/spec/nothing/here"}]`, "Content-Type: application/json-patch+json"},
				{"json-patch-test-fails", http.MethodPatch, item, `[{"op":"test","path":"/kind","value":"Other"}]`, "Content-Type: application/json-patch+json"},
				{"json-patch-change-apiversion", http.MethodPatch, item, `[{"op":"replace","path":"/apiVersion","value":"example.com/v1"}]`, "Content-Type: application/json-patch+json"},
				{"json-patch-empty", http.MethodPatch, item, `[]`, "Content-Type: application/json-patch+json"},
				{"apply-malformed-yaml", http.MethodPatch, item + "?fieldManager=differential", "a: [", applyCT},
				{"apply-without-field-manager", http.MethodPatch, item, "apiVersion: " + r.Upstream.GroupVersion().String() + "\nkind: " + r.Kind + "\nmetadata:\n  name: " + k.name("mal") + "\n", applyCT},
				{"apply-wrong-kind", http.MethodPatch, item + "?fieldManager=differential", "apiVersion: " + r.Upstream.GroupVersion().String() + "\nkind: Other\nmetadata:\n  name: " + k.name("mal") + "\n", applyCT},
				{"apply-json", http.MethodPatch, item + "?fieldManager=differential", withName(good, "mal"), applyCT},
				{"patch-no-content-type", http.MethodPatch, item, `{}`, ""},
				{"patch-unsupported", http.MethodPatch, item, `{}`, "Content-Type: text/plain"},
				{"delete-malformed-options", http.MethodDelete, item, `{"kind":`, jsonCT},
				{"delete-wrong-precondition", http.MethodDelete, item, `{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"00000000-0000-0000-0000-000000000000"}}`, jsonCT},
				{"get-missing", http.MethodGet, k.item("missing"), "", ""},
				{"delete-missing", http.MethodDelete, k.item("missing"), "", ""},
				{"post-to-item", http.MethodPost, item, good, jsonCT},
				{"delete", http.MethodDelete, item, "", ""},
			}
			for _, c := range pairs {
				var header []string
				if c.ct != "" {
					header = []string{c.ct}
				}
				pair(t, st, k.caseName(c.name), "", request{method: c.method, path: c.path, body: c.body, header: header})
			}
		})
	}
}
