package differential

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strings"

	"github.com/openshift/hypershift-capi-proxy/tests/framework"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	bootstrapv1beta1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta1"
	bootstrapv1beta2 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	"sigs.k8s.io/randfill"

	"github.com/openshift/hypershift-capi-proxy/translate"
	// Every route with its typed codecs (Object, List), also of the kinds that convert by apiVersion alone.
	_ "github.com/openshift/hypershift-capi-proxy/zz_generated/routes/codecs"
)

// generator makes randomized objects of the upstream Go types: randfill fills them, group-carrying fields
// get realistic values (mapped groups and others), metadata is made acceptable (so that the apiserver gets
// to validating the rest), and the encoded JSON then gets explicit false, 0, "", null, {} and [] at
// random fields, and now and then a field the type does not have.
type generator struct {
	rnd    *rand.Rand
	filler *randfill.Filler
}

func newGenerator(seed int64) *generator {
	return &generator{
		rnd: rand.New(rand.NewSource(seed)),
		filler: randfill.NewWithSeed(seed).NilChance(0.3).NumElements(0, 2).MaxDepth(6).Funcs(
			// Free-form JSON must hold valid JSON to survive an encode.
			func(j *json.RawMessage, c randfill.Continue) { *j = json.RawMessage(`{"a":1}`) },
			func(r *runtime.RawExtension, c randfill.Continue) { *r = runtime.RawExtension{Raw: []byte(`{"a":1}`)} },
			// kubeadm bootstrap tokens encode as "<id>.<secret>" and reject anything else.
			func(b *bootstrapv1beta1.BootstrapTokenString, c randfill.Continue) {
				b.ID, b.Secret = "abcdef", "0123456789abcdef"
			},
			func(b *bootstrapv1beta2.BootstrapTokenString, c randfill.Continue) {
				b.ID, b.Secret = "abcdef", "0123456789abcdef"
			},
			// Random label and annotation maps are mostly invalid keys; keep a valid one now and then.
			func(m *map[string]string, c randfill.Continue) {
				if c.Intn(3) == 0 {
					*m = map[string]string{"example.com/k": c.String(8)}
				}
			},
		),
	}
}

// object returns a randomized object of route r's upstream kind named name (a template: see request) in
// the side's namespace, as a decoded JSON document.
func (g *generator) object(r *translate.Route, name string) map[string]any {
	up, _ := r.Object.New()
	g.filler.Fill(up)
	g.sanitize(reflect.ValueOf(up).Elem())
	obj := up.(metav1.Object)
	meta := metav1.ObjectMeta{Name: name, Labels: obj.GetLabels(), Annotations: obj.GetAnnotations()}
	if r.Namespaced {
		meta.Namespace = nsPlaceholder
	}
	reflect.ValueOf(up).Elem().FieldByName("ObjectMeta").Set(reflect.ValueOf(meta))
	up.(runtime.Object).GetObjectKind().SetGroupVersionKind(r.UpstreamGVK())
	data, err := json.Marshal(up)
	if err != nil {
		panic(fmt.Sprintf("encoding a random %s: %v", r.UpstreamGVK(), err))
	}
	doc, err := decodeJSON(data)
	if err != nil {
		panic(err)
	}
	m := doc.(map[string]any)
	g.zeroes(m, reflect.TypeOf(up).Elem(), true)
	return m
}

// minimal returns the smallest object of route r: apiVersion, kind and metadata.
func minimal(r *translate.Route, name string) map[string]any {
	meta := map[string]any{"name": name}
	if r.Namespaced {
		meta["namespace"] = nsPlaceholder
	}
	return map[string]any{"apiVersion": r.Upstream.GroupVersion().String(), "kind": r.Kind, "metadata": meta}
}

var (
	apiVersions = []string{"cluster.x-k8s.io/v1beta2", "cluster.x-k8s.io/v1beta1", "infrastructure.cluster.x-k8s.io/v1beta1",
		"infrastructure.cluster.x-k8s.io/v1beta2", "bootstrap.cluster.x-k8s.io/v1beta2", "controlplane.cluster.x-k8s.io/v1beta1",
		"ipam.cluster.x-k8s.io/v1beta2", "v1", "apps/v1", "", "example.com/v1"}
	groups = []string{"cluster.x-k8s.io", "infrastructure.cluster.x-k8s.io", "controlplane.cluster.x-k8s.io",
		"bootstrap.cluster.x-k8s.io", "", "apps", "example.com"}
	jsonMarshaler = reflect.TypeOf((*json.Marshaler)(nil)).Elem()
)

// sanitize gives group-carrying strings (JSON name apiVersion or apiGroup, as the generator classifies
// them) realistic values and free-form JSON valid JSON, as tests/roundtrip does.
func (g *generator) sanitize(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			g.sanitize(v.Elem())
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			fv := v.Field(i)
			if kind := framework.GroupFieldKind(v.Type(), f); kind != "" {
				s := fv
				if s.Kind() == reflect.Pointer {
					if s.IsNil() {
						continue
					}
					s = s.Elem()
				}
				if kind == "apiVersion" {
					s.SetString(apiVersions[g.rnd.Intn(len(apiVersions))])
				} else {
					s.SetString(groups[g.rnd.Intn(len(groups))])
				}
				continue
			}
			g.sanitize(fv)
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			g.sanitize(v.Index(i))
		}
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		for _, k := range keys {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			g.sanitize(e)
			v.SetMapIndex(k, e)
		}
	}
}

// jsonField is a field of a Go struct as encoding/json sees it.
type jsonField struct {
	name string
	typ  reflect.Type
}

// jsonFields lists the JSON fields of struct type t, embedded structs' fields inlined.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		ft := f.Type
		if (f.Anonymous && name == "") || strings.Contains(opts, "inline") {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				out = append(out, jsonFields(ft)...)
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name: name, typ: ft})
	}
	return out
}

// leaf reports whether t encodes itself (metav1.Time, resource.Quantity, intstr.IntOrString, ...).
func leaf(t reflect.Type) bool {
	return t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler)
}

// zeroes walks doc, the JSON of a value of type t: an absent field gets an explicit zero of its type now
// and then (false, 0, "", {}, [] or null), a present one null now and then, and an object now and then a
// field t does not have. top skips apiVersion, kind and metadata of the top-level object.
func (g *generator) zeroes(doc map[string]any, t reflect.Type, top bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || leaf(t) {
		return
	}
	fields := jsonFields(t)
	sort.Slice(fields, func(i, j int) bool { return fields[i].name < fields[j].name })
	for _, f := range fields {
		if top && (f.name == "apiVersion" || f.name == "kind" || f.name == "metadata") {
			continue
		}
		v, present := doc[f.name]
		switch {
		case !present && g.rnd.Intn(8) == 0:
			doc[f.name] = g.zero(f.typ)
		case present && v != nil && g.rnd.Intn(40) == 0:
			doc[f.name] = nil
		case present:
			g.walk(v, f.typ)
		}
	}
	if !top && g.rnd.Intn(60) == 0 {
		doc["differentialUnknown"] = g.rnd.Intn(3)
	}
}

func (g *generator) walk(v any, t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if leaf(t) {
		return
	}
	switch d := v.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Struct:
			g.zeroes(d, t, false)
		case reflect.Map:
			for _, k := range sortedKeys(d) {
				g.walk(d[k], t.Elem())
			}
		}
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for _, e := range d {
				g.walk(e, t.Elem())
			}
		}
	}
}

// zero returns an explicit zero JSON value of Go type t (null for a pointer now and then).
func (g *generator) zero(t reflect.Type) any {
	if t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface {
		if g.rnd.Intn(4) == 0 {
			return nil
		}
		if t.Kind() == reflect.Interface {
			return map[string]any{}
		}
		t = t.Elem()
	}
	if leaf(t) {
		switch t.Kind() {
		case reflect.Struct, reflect.String:
			return ""
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return false
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return json.Number("0")
	case reflect.String:
		return ""
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return ""
		}
		return []any{}
	default:
		return map[string]any{}
	}
}
