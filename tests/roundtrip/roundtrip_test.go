// Package roundtrip proves the generated converters lossless: for every kind and list at every version in
// the route table, randomized upstream objects go upstream -> private -> upstream and come back equal,
// every group-carrying field of the private object names a private group, and label and annotation keys
// and finalizers that merely look like a group come through unchanged.
package roundtrip

import (
	"encoding/json"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openshift/hypershift-capi-proxy/tests/framework"

	"github.com/google/go-cmp/cmp"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	bootstrapv1beta1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta1"
	bootstrapv1beta2 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	"sigs.k8s.io/randfill"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"

	// Every route with its typed codecs (Object, List), also of the kinds that convert by apiVersion alone.
	_ "github.com/openshift/hypershift-capi-proxy/zz_generated/routes/codecs"
)

const iterations = 30

var (
	apiVersions = []string{"cluster.x-k8s.io/v1beta2", "infrastructure.cluster.x-k8s.io/v1beta1",
		"bootstrap.cluster.x-k8s.io/v1beta2", "ipam.cluster.x-k8s.io/v1beta2", "v1", "apps/v1", "", "example.com/v1"}
	groups = []string{"cluster.x-k8s.io", "infrastructure.cluster.x-k8s.io", "controlplane.cluster.x-k8s.io",
		"", "apps", "example.com"}
	// Keys that look like a group but must never be rewritten.
	labelKey     = "cluster.x-k8s.io/cluster-name"
	annotKey     = "cluster.x-k8s.io/paused"
	finalizer    = "cluster.cluster.x-k8s.io"
	clonedFromGK = upstream.GroupKindAnnotations[0]
)

func TestRoundTrip(t *testing.T) {
	table := translate.NewTable(routes.Routes)
	if len(table.Routes()) == 0 {
		t.Fatal("the route table is empty")
	}
	for _, r := range table.Routes() {
		for _, c := range []struct {
			name  string
			codec translate.Kind
		}{{r.Kind, r.Object}, {r.ListKind, r.List}} {
			t.Run(r.Upstream.GroupVersion().String()+"/"+c.name, func(t *testing.T) {
				roundTrip(t, c.codec)
			})
		}
	}
}

func roundTrip(t *testing.T, codec translate.Kind) {
	seed := rand.Int63()
	rnd := rand.New(rand.NewSource(seed))
	filler := newFiller(seed)
	for i := 0; i < iterations; i++ {
		up, priv := codec.New()
		if reflect.TypeOf(up).Elem().Size() != reflect.TypeOf(priv).Elem().Size() {
			t.Fatalf("%T and %T differ in size: the twins must have the same layout", up, priv)
		}
		filler.Fill(up)
		sanitize(reflect.ValueOf(up).Elem(), rnd, nil)
		decorate(up)
		before := deepCopyJSON(t, up)

		codec.Convert(up, priv)
		checkPrivate(t, reflect.ValueOf(priv).Elem(), "")
		if !apiequality.Semantic.DeepEqual(before, deepCopyJSON(t, up)) {
			t.Fatalf("seed %d: converting modified its input", seed)
		}

		back, _ := codec.New()
		codec.Convert(priv, back)
		if !apiequality.Semantic.DeepEqual(up, back) {
			t.Fatalf("seed %d: round trip differs (-want +got):\n%s", seed, cmp.Diff(up, back, cmp.Exporter(func(reflect.Type) bool { return true })))
		}

		// The same through the JSON codec the proxy uses, from the object's canonical JSON (one decode and
		// encode first: random non-nil empty maps encode as {} and decode as zero values).
		data, err := json.Marshal(up)
		if err != nil {
			t.Fatal(err)
		}
		canonical, _ := codec.New()
		if err := json.Unmarshal(data, canonical); err != nil {
			t.Fatal(err)
		}
		if data, err = json.Marshal(canonical); err != nil {
			t.Fatal(err)
		}
		privJSON, _, err := codec.ToPrivate(data)
		if err != nil {
			t.Fatalf("seed %d: ToPrivate: %v", seed, err)
		}
		upJSON, _, err := codec.ToUpstream(privJSON)
		if err != nil {
			t.Fatalf("seed %d: ToUpstream: %v", seed, err)
		}
		var a, b any
		if err := json.Unmarshal(data, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(upJSON, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: JSON round trip differs (-want +got):\n%s", seed, cmp.Diff(a, b))
		}
	}
}

// fillFuncs keep randomized values encodable and valid where upstream's encoding insists.
var fillFuncs = []any{
	// Free-form JSON must hold valid JSON to survive an encode.
	func(j *json.RawMessage, c randfill.Continue) { *j = json.RawMessage(`{"a":1}`) },
	// Embedded objects of other APIs (nodeadm kubelet config, ASO resources) travel as raw JSON.
	func(r *runtime.RawExtension, c randfill.Continue) { *r = runtime.RawExtension{Raw: []byte(`{"a":1}`)} },
	// kubeadm bootstrap tokens encode as "<id>.<secret>" and reject anything else.
	func(b *bootstrapv1beta1.BootstrapTokenString, c randfill.Continue) {
		b.ID, b.Secret = "abcdef", "0123456789abcdef"
	},
	func(b *bootstrapv1beta2.BootstrapTokenString, c randfill.Continue) {
		b.ID, b.Secret = "abcdef", "0123456789abcdef"
	},
	// Times (randfill cannot set time.Time's unexported fields): whole seconds, as RFC 3339 keeps them.
	func(t *metav1.Time, c randfill.Continue) { *t = metav1.NewTime(time.Unix(c.Int63n(1<<32), 0)) },
}

func deepCopyJSON(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// decorate puts group look-alikes where they must survive untouched, and a cloned-from-groupkind
// annotation whose value must be translated, on every ObjectMeta of the object (top level or list items).
func decorate(obj any) {
	forEach(reflect.ValueOf(obj).Elem(), func(m *metav1.ObjectMeta) {
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Labels[labelKey] = "c1"
		m.Annotations[annotKey] = "true"
		m.Annotations[clonedFromGK] = "DockerMachineTemplate.infrastructure.cluster.x-k8s.io"
		m.Finalizers = append(m.Finalizers, finalizer)
	})
}

func forEach(v reflect.Value, fn func(*metav1.ObjectMeta)) {
	if passedThrough(v.Type()) {
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		if m, ok := addr(v).(*metav1.ObjectMeta); ok {
			fn(m)
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				forEach(v.Field(i), fn)
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			forEach(v.Index(i), fn)
		}
	}
}

// sanitize walks a filled value: group-carrying strings (JSON name apiVersion/apiGroup) get a realistic
// value, some mapped and some not; free-form JSON gets valid JSON.
func sanitize(v reflect.Value, rnd *rand.Rand, owner reflect.Type) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			sanitize(v.Elem(), rnd, owner)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			fv := v.Field(i)
			if kind := framework.GroupFieldKind(v.Type(), f); kind != "" {
				setString(fv, pick(rnd, kind))
				continue
			}
			if f.Name == "Raw" && fv.Type() == reflect.TypeOf([]byte(nil)) {
				fv.SetBytes([]byte(`{"a":"b"}`))
				continue
			}
			sanitize(fv, rnd, v.Type())
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			sanitize(v.Index(i), rnd, owner)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			sanitize(e, rnd, owner)
			v.SetMapIndex(k, e)
		}
	}
}

// passedThrough reports whether values of t travel untouched: listed in upstream.OpaqueTypes or
// upstream.ForeignTypes.
func passedThrough(t reflect.Type) bool {
	key := t.PkgPath() + "." + t.Name()
	_, opaque := upstream.OpaqueTypes[key]
	_, foreign := upstream.ForeignTypes[key]
	return opaque || foreign
}

func pick(rnd *rand.Rand, kind string) string {
	if kind == "apiVersion" {
		return apiVersions[rnd.Intn(len(apiVersions))]
	}
	return groups[rnd.Intn(len(groups))]
}

func setString(v reflect.Value, s string) {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	v.SetString(s)
}

// checkPrivate fails if any group-carrying field of a private object still names an upstream group, or
// if a group look-alike key was rewritten.
func checkPrivate(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	if passedThrough(v.Type()) {
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			checkPrivate(t, v.Elem(), path)
		}
	case reflect.Struct:
		if m, ok := addr(v).(*metav1.ObjectMeta); ok {
			if m.Labels[labelKey] != "c1" || m.Annotations[annotKey] != "true" || !contains(m.Finalizers, finalizer) {
				t.Fatalf("%s: a label, annotation key or finalizer that looks like a group was changed: %v %v %v",
					path, m.Labels, m.Annotations, m.Finalizers)
			}
			if got := m.Annotations[clonedFromGK]; got != "DockerMachineTemplate.infrastructure.cluster.hypershift.openshift.io" {
				t.Fatalf("%s: %s = %q, want the private group", path, clonedFromGK, got)
			}
		}
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
				g := s.String()
				if kind == "apiVersion" {
					g, _, _ = strings.Cut(g, "/")
					if !strings.Contains(s.String(), "/") {
						g = ""
					}
				}
				if translate.ToPrivate.Maps(g) {
					t.Fatalf("%s.%s = %q: an upstream group reached the private object", path, f.Name, s.String())
				}
				continue
			}
			checkPrivate(t, fv, path+"."+f.Name)
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			checkPrivate(t, v.Index(i), path+"[]")
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			checkPrivate(t, v.MapIndex(k), path+"{}")
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// addr returns a pointer to v's value (a copy where v is not addressable, such as a map value).
func addr(v reflect.Value) any {
	if v.CanAddr() {
		return v.Addr().Interface()
	}
	p := reflect.New(v.Type())
	p.Elem().Set(v)
	return p.Interface()
}
