package differential

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

// defaultSeed fixes the randomized bodies; DIFFERENTIAL_SEED overrides it (a failure names its seed).
const defaultSeed = 20261124

// randomObjects is how many randomized objects each kind version is created with.
const randomObjects = 2

func seed(t *testing.T) int64 {
	if s := os.Getenv("DIFFERENTIAL_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("DIFFERENTIAL_SEED=%q: %v", s, err)
		}
		return n
	}
	return defaultSeed
}

// kindPaths are the paths of one kind version in the upstream group, as templates.
type kindPaths struct {
	route      *translate.Route
	collection string
}

func pathsOf(r *translate.Route) kindPaths {
	p := "/apis/" + r.Upstream.Group + "/" + r.Upstream.Version
	if r.Namespaced {
		p += "/namespaces/" + nsPlaceholder
	}
	return kindPaths{route: r, collection: p + "/" + r.Upstream.Resource}
}

// name is the template of object n's name: cluster-scoped objects carry the side's namespace, so that
// the two sides' objects have distinct names.
// The version leads the name: the versions of a kind share their objects.
func (k kindPaths) name(n string) string {
	n = k.route.Upstream.Version + "-" + n
	if k.route.Namespaced {
		return n
	}
	return n + "-" + nsPlaceholder
}

func (k kindPaths) item(n string) string { return k.collection + "/" + k.name(n) }

// caseName names a case of the kind: "<group>/<version>/<resource>/<step>".
func (k kindPaths) caseName(step string) string {
	return k.route.Upstream.Group + "/" + k.route.Upstream.Version + "/" + k.route.Upstream.Resource + "/" + step
}

// testRandomized runs the write script on every kind at every version the route table serves. The
// versions of a kind run one after another (they share objects, and a list at one version shows what
// another wrote); kinds run in parallel.
func testRandomized(t *testing.T) {
	base := seed(t)
	t.Logf("seed %d (set DIFFERENTIAL_SEED to replay another)", base)
	var kinds [][]*translate.Route
	byGR := map[string]int{}
	for i := range routes.Routes {
		r := &routes.Routes[i]
		gr := r.Upstream.GroupResource().String()
		if _, ok := byGR[gr]; !ok {
			byGR[gr] = len(kinds)
			kinds = append(kinds, nil)
		}
		kinds[byGR[gr]] = append(kinds[byGR[gr]], r)
	}
	for _, versions := range kinds {
		t.Run(versions[0].Upstream.GroupResource().String(), func(t *testing.T) {
			t.Parallel()
			for _, r := range versions {
				t.Run(r.Upstream.Version, func(t *testing.T) {
					h := fnv.New64a()
					h.Write([]byte(r.Upstream.String()))
					script(t, pathsOf(r), newGenerator(base^int64(h.Sum64()>>1)))
				})
			}
		})
	}
}

var fieldValidations = []string{"Strict", "Warn", "Ignore", ""}

// script creates, reads, updates, patches (merge, JSON patch with every operation, server-side apply)
// and deletes objects of one kind version, minimal and randomized, on both sides.
func script(t *testing.T, k kindPaths, g *generator) {
	r := k.route
	st := newState()
	jsonCT := "Content-Type: application/json"
	fv := func() string {
		if v := fieldValidations[g.rnd.Intn(len(fieldValidations))]; v != "" {
			return "?fieldValidation=" + v
		}
		return ""
	}

	pair(t, st, k.caseName("create-minimal"), "m", request{method: http.MethodPost, path: k.collection,
		body: mustJSON(t, minimal(r, k.name("m"))), header: []string{jsonCT}})

	for i := 1; i <= randomObjects; i++ {
		n := fmt.Sprintf("r%d", i)
		obj := g.object(r, k.name(n))
		query := fv()
		for attempt := 0; ; attempt++ {
			ex := pair(t, st, k.caseName(fmt.Sprintf("create-random-%d-%d", i, attempt)), n, request{method: http.MethodPost,
				path: k.collection + query, body: mustJSON(t, obj), header: []string{jsonCT}})
			// Retry without the fields the apiserver rejected, to get randomized objects stored too.
			if ex[0].status != http.StatusUnprocessableEntity || attempt == 2 || !removeCauses(obj, ex[0].body) {
				break
			}
		}
	}

	get := pair(t, st, k.caseName("get-m"), "m", request{method: http.MethodGet, path: k.item("m")})
	pair(t, st, k.caseName("list"), "", request{method: http.MethodGet, path: k.collection})

	// PUT: a randomized object in place of m, with and without the resourceVersion it must carry.
	put := g.object(r, k.name("m"))
	put["metadata"].(map[string]any)["resourceVersion"] = "@RV:m@"
	pair(t, st, k.caseName("put-m"), "m", request{method: http.MethodPut, path: k.item("m") + fv(),
		body: mustJSON(t, put), header: []string{jsonCT}})
	delete(put["metadata"].(map[string]any), "resourceVersion")
	pair(t, st, k.caseName("put-m-without-resourceversion"), "m", request{method: http.MethodPut, path: k.item("m"),
		body: mustJSON(t, put), header: []string{jsonCT}})

	// Merge patch: some top-level fields of a randomized object, and null for one the object may have.
	patch := map[string]any{}
	src := g.object(r, k.name("m"))
	for _, key := range sortedKeys(src) {
		if key != "apiVersion" && key != "kind" && key != "metadata" && g.rnd.Intn(2) == 0 {
			patch[key] = src[key]
		}
	}
	patch["metadata"] = map[string]any{"labels": map[string]any{"example.com/merge": "x"}, "annotations": nil}
	pair(t, st, k.caseName("merge-patch-m"), "m", request{method: http.MethodPatch, path: k.item("m") + fv(),
		body: mustJSON(t, patch), header: []string{"Content-Type: application/merge-patch+json"}})

	// JSON patch: every operation on annotations, which must succeed wherever m exists.
	ops := []map[string]any{
		{"op": "add", "path": "/metadata/annotations", "value": map[string]any{"example.com/a": "1"}},
		{"op": "copy", "from": "/metadata/annotations/example.com~1a", "path": "/metadata/annotations/example.com~1b"},
		{"op": "move", "from": "/metadata/annotations/example.com~1b", "path": "/metadata/annotations/example.com~1c"},
		{"op": "test", "path": "/metadata/annotations/example.com~1c", "value": "1"},
		{"op": "replace", "path": "/metadata/annotations/example.com~1c", "value": "2"},
		{"op": "remove", "path": "/metadata/annotations/example.com~1a"},
	}
	pair(t, st, k.caseName("json-patch-annotations"), "m", request{method: http.MethodPatch, path: k.item("m"),
		body: mustJSON(t, ops), header: []string{"Content-Type: application/json-patch+json"}})

	// JSON patch: every operation at random fields of m as the direct side read it.
	var current any
	if get[0].status == http.StatusOK {
		// The values the patches take from it name the namespace as the placeholder, for each side its own.
		current, _ = decodeJSON(bytes.ReplaceAll(get[0].body, []byte(nsDirect), []byte(nsPlaceholder)))
	}
	for i, ops := range g.randomOps(current, g.object(r, k.name("m"))) {
		pair(t, st, k.caseName(fmt.Sprintf("json-patch-random-%d", i)), "m", request{method: http.MethodPatch,
			path: k.item("m") + fv(), body: mustJSON(t, ops), header: []string{"Content-Type: application/json-patch+json"}})
	}

	// Server-side apply: creating a randomized object, and taking over m with force.
	applied, err := yaml.JSONToYAML([]byte(mustJSON(t, g.object(r, k.name("a")))))
	if err != nil {
		t.Fatal(err)
	}
	pair(t, st, k.caseName("apply-create-a"), "a", request{method: http.MethodPatch,
		path: k.item("a") + "?fieldManager=differential" + strings.Replace(fv(), "?", "&", 1),
		body: string(applied), header: []string{"Content-Type: application/apply-patch+yaml"}})
	m := minimal(r, k.name("m"))
	m["metadata"].(map[string]any)["labels"] = map[string]any{"example.com/applied": "yes"}
	if spec, ok := g.object(r, k.name("m"))["spec"]; ok {
		m["spec"] = spec
	}
	applied, err = yaml.JSONToYAML([]byte(mustJSON(t, m)))
	if err != nil {
		t.Fatal(err)
	}
	pair(t, st, k.caseName("apply-m-force"), "m", request{method: http.MethodPatch,
		path: k.item("m") + "?fieldManager=differential&force=true", body: string(applied),
		header: []string{"Content-Type: application/apply-patch+yaml"}})

	// Strategic merge patch is not served for custom resources.
	pair(t, st, k.caseName("strategic-merge-patch-m"), "m", request{method: http.MethodPatch, path: k.item("m"),
		body: `{"metadata":{"labels":{"example.com/s":"x"}}}`, header: []string{"Content-Type: application/strategic-merge-patch+json"}})

	pair(t, st, k.caseName("delete-r1"), "", request{method: http.MethodDelete, path: k.item("r1")})
	pair(t, st, k.caseName("get-m-final"), "m", request{method: http.MethodGet, path: k.item("m")})
}

// randomOps returns JSON patches using every operation at random fields of current (nil: m does not
// exist; the patches then go to paths that do not exist either), with values from another randomized
// object or explicit zeros.
func (g *generator) randomOps(current any, other map[string]any) [][]map[string]any {
	var paths []string
	var collect func(v any, p string)
	collect = func(v any, p string) {
		if p != "" && !strings.HasPrefix(p, "/metadata") {
			paths = append(paths, p)
		}
		switch d := v.(type) {
		case map[string]any:
			for _, k := range sortedKeys(d) {
				if p == "" && (k == "apiVersion" || k == "kind" || k == "metadata" || k == "status") {
					continue
				}
				collect(d[k], p+"/"+strings.NewReplacer("~", "~0", "/", "~1").Replace(k))
			}
		case []any:
			for i, e := range d {
				collect(e, p+"/"+strconv.Itoa(i))
			}
		}
	}
	collect(current, "")
	if len(paths) == 0 {
		paths = []string{"/spec", "/spec/differential"}
	}
	pick := func() string { return paths[g.rnd.Intn(len(paths))] }
	valueAt := func(doc any, p string) any {
		for _, seg := range strings.Split(p, "/")[1:] {
			seg = strings.NewReplacer("~1", "/", "~0", "~").Replace(seg)
			switch d := doc.(type) {
			case map[string]any:
				doc = d[seg]
			case []any:
				i, err := strconv.Atoi(seg)
				if err != nil || i >= len(d) {
					return nil
				}
				doc = d[i]
			default:
				return nil
			}
		}
		return doc
	}
	zeros := []any{false, json.Number("0"), "", nil, map[string]any{}, []any{}}
	value := func(p string) any {
		if v := valueAt(other, p); v != nil && g.rnd.Intn(2) == 0 {
			return v
		}
		return zeros[g.rnd.Intn(len(zeros))]
	}
	p1, p2, p3 := pick(), pick(), pick()
	return [][]map[string]any{
		{{"op": "test", "path": p1, "value": valueAt(current, p1)}, {"op": "replace", "path": p1, "value": value(p1)}},
		{{"op": "add", "path": p2, "value": value(p2)}, {"op": "remove", "path": p3}},
		{{"op": "copy", "from": p1, "path": p2}, {"op": "move", "from": p3, "path": p1}},
		{{"op": "test", "path": p2, "value": value(p2)}},
	}
}

var fieldPathSegment = regexp.MustCompile(`([^.\[\]]+)|\[([^\]]*)\]`)

// removeCauses removes from obj the fields the causes of a 422 Status name (apimachinery field paths,
// "spec.a[0].b", "spec.m[key]"), and reports whether it removed any.
func removeCauses(obj map[string]any, statusBody []byte) bool {
	var s metav1.Status
	if json.Unmarshal(statusBody, &s) != nil || s.Details == nil {
		return false
	}
	removed := false
	for _, c := range s.Details.Causes {
		var segs []string
		for _, m := range fieldPathSegment.FindAllStringSubmatch(c.Field, -1) {
			if m[1] != "" {
				segs = append(segs, m[1])
			} else {
				segs = append(segs, m[2])
			}
		}
		if len(segs) < 2 || segs[0] == "metadata" || segs[0] == "apiVersion" || segs[0] == "kind" {
			continue
		}
		removed = removeAt(obj, segs) || removed
	}
	return removed
}

func removeAt(doc any, segs []string) bool {
	for i, seg := range segs {
		last := i == len(segs)-1
		switch d := doc.(type) {
		case map[string]any:
			if _, ok := d[seg]; !ok {
				return false
			}
			if last {
				delete(d, seg)
				return true
			}
			doc = d[seg]
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n >= len(d) {
				return false
			}
			if last {
				// Emptied rather than removed: the indexes of the other causes stay valid.
				d[n] = nil
				return true
			}
			doc = d[n]
		default:
			return false
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
