package roundtrip

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/randfill"

	"github.com/openshift/hypershift-capi-proxy/proxy/convert"
	"github.com/openshift/hypershift-capi-proxy/proxy/webhook/conversion"
	"github.com/openshift/hypershift-capi-proxy/tests/framework"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

// TestConversionMatchesUpstream proves the proxy's conversion webhook equal to upstream's: for every kind
// that converts by hub and spoke and every pair of its versions, randomized upstream objects are converted
// twice, by controller-runtime's conversion webhook over the upstream Go types (what a provider deploys,
// with the converters upstream registers: framework.UpstreamConversionHandler) and by the proxy's webhook
// over their private twins, and the two answers, translated back to the upstream groups, must be equal; so must the answers to converting each result back (the round trip that
// relies on the conversion-data annotation), and so must failures. The fields of watchedFields must each
// have held a value in an object that converted. References are mostly to kinds the
// apiVersion getter resolves (their CRDs carry contract labels), sometimes to one it cannot.
func TestConversionMatchesUpstream(t *testing.T) {
	table := translate.NewTable(routes.Routes)
	converter, err := convert.New(table, routes.APIVersionGetterSetters)
	if err != nil {
		t.Fatal(err)
	}
	ours := conversion.New(converter, conversion.Options{})
	scheme := runtime.NewScheme()
	var contractKinds [][2]string // group, kind of every kind with contract labels
	seen := map[string]bool{}
	for _, r := range table.Routes() {
		up, _ := r.Object.New()
		scheme.AddKnownTypeWithName(r.UpstreamGVK(), up.(runtime.Object))
		if key := r.Upstream.Group + "/" + r.Kind; r.ContractLabels != nil && !seen[key] {
			seen[key] = true
			contractKinds = append(contractKinds, [2]string{r.Upstream.Group, r.Kind})
		}
	}
	theirs, err := framework.UpstreamConversionHandler(scheme, routes.Routes)
	if err != nil {
		t.Fatal(err)
	}

	var kinds int
	for _, from := range table.Routes() {
		if from.Conversion == translate.NoConversion {
			continue
		}
		kinds++
		for _, to := range table.Versions(from.UpstreamGVK().GroupKind()) {
			if to == from {
				continue
			}
			t.Run(from.Upstream.GroupVersion().String()+"/"+from.Kind+"->"+to.Upstream.Version, func(t *testing.T) {
				compareConversions(t, from, to, ours, theirs, contractKinds)
			})
		}
	}
	if kinds == 0 {
		t.Fatal("no kind converts by hub and spoke")
	}
}

func compareConversions(t *testing.T, from, to *translate.Route, ours, theirs http.Handler, contractKinds [][2]string) {
	seed := rand.Int63()
	rnd := rand.New(rand.NewSource(seed))
	filler := newFiller(seed)
	probe, _ := from.Object.New()
	cov := newCoverage(from.Upstream.Group, from.Kind, probe)
	var converted int
	for i := 0; i < iterations; i++ {
		up, _ := from.Object.New()
		filler.Fill(up)
		if i%2 == 1 {
			fillWatched(up, from.Upstream.Group, from.Kind, filler)
		}
		sanitize(reflect.ValueOf(up).Elem(), rnd, nil)
		resolvable(reflect.ValueOf(up).Elem(), rnd, contractKinds)
		decorate(up)
		setGVK(up, from)
		data, err := json.Marshal(up)
		if err != nil {
			t.Fatal(err)
		}

		want, wantErr := review(t, theirs, data, to.Upstream.GroupVersion().String())
		privData, _, err := from.Object.ToPrivate(data)
		if err != nil {
			t.Fatal(err)
		}
		gotPriv, gotErr := review(t, ours, privData, to.Private.GroupVersion().String())
		if (wantErr != "") != (gotErr != "") {
			t.Fatalf("seed %d: upstream's webhook says %q, the proxy's %q", seed, wantErr, gotErr)
		}
		if wantErr != "" {
			continue
		}
		converted++
		cov.add(data)
		got, _, err := to.Object.ToUpstream(gotPriv)
		if err != nil {
			t.Fatal(err)
		}
		assertSameObject(t, seed, to, want, got)

		// And back, through the annotation the first conversion may have written.
		back, backErr := review(t, theirs, want, from.Upstream.GroupVersion().String())
		gotBackPriv, gotBackErr := review(t, ours, gotPriv, from.Private.GroupVersion().String())
		if (backErr != "") != (gotBackErr != "") {
			t.Fatalf("seed %d: back: upstream's webhook says %q, the proxy's %q", seed, backErr, gotBackErr)
		}
		if backErr != "" {
			continue
		}
		gotBack, _, err := from.Object.ToUpstream(gotBackPriv)
		if err != nil {
			t.Fatal(err)
		}
		assertSameObject(t, seed, from, back, gotBack)
	}
	if converted == 0 {
		t.Errorf("seed %d: no random object converted; the comparison proved nothing", seed)
	}
	if missed := cov.missed(); len(missed) > 0 {
		t.Errorf("seed %d: no object that converted held a value in %s (watchedFields); the comparison proved nothing about them", seed, strings.Join(missed, ", "))
	}
	t.Logf("seed %d: %d of %d random objects converted, the rest failed alike", seed, converted, iterations)
}

// newFiller is the randfill set-up of TestRoundTrip.
func newFiller(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.2).NumElements(0, 2).MaxDepth(8).Funcs(fillFuncs...)
}

// review posts a one-object ConversionReview to h and returns the converted object, or the failure
// message.
func review(t *testing.T, h http.Handler, obj []byte, desired string) ([]byte, string) {
	t.Helper()
	body, err := json.Marshal(apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request: &apiextensionsv1.ConversionRequest{UID: types.UID("u1"), DesiredAPIVersion: desired,
			Objects: []runtime.RawExtension{{Raw: obj}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, conversion.Path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("webhook answered %d: %s", rec.Code, rec.Body)
	}
	var out apiextensionsv1.ConversionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if out.Response == nil || out.Response.UID != "u1" {
		t.Fatalf("response without the request's UID: %s", rec.Body)
	}
	if out.Response.Result.Status != metav1.StatusSuccess {
		return nil, out.Response.Result.Message
	}
	if len(out.Response.ConvertedObjects) != 1 {
		t.Fatalf("want one converted object, got %s", rec.Body)
	}
	return out.Response.ConvertedObjects[0].Raw, ""
}

// assertSameObject decodes two upstream objects of route r and fails if they differ.
func assertSameObject(t *testing.T, seed int64, r *translate.Route, want, got []byte) {
	t.Helper()
	w, _ := r.Object.New()
	g, _ := r.Object.New()
	if err := json.Unmarshal(want, w); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, g); err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(w, g) {
		t.Fatalf("seed %d: the proxy's conversion differs from upstream's (-upstream +proxy):\n%s", seed,
			cmp.Diff(w, g, cmp.Exporter(func(reflect.Type) bool { return true })))
	}
}

func setGVK(obj any, r *translate.Route) {
	obj.(runtime.Object).GetObjectKind().SetGroupVersionKind(r.UpstreamGVK())
}

// resolvable points most references by apiGroup and kind (v1beta2's ContractVersionedObjectReference and
// its kin) at kinds whose CRDs carry contract labels, so that down-conversion can resolve their version;
// the rest keep the random kind sanitize left, which no getter resolves.
func resolvable(v reflect.Value, rnd *rand.Rand, contractKinds [][2]string) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			resolvable(v.Elem(), rnd, contractKinds)
		}
	case reflect.Struct:
		group, kind := -1, -1
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			switch strings.Split(f.Tag.Get("json"), ",")[0] {
			case "apiGroup":
				group = i
			case "kind":
				kind = i
			}
			resolvable(v.Field(i), rnd, contractKinds)
		}
		if group >= 0 && kind >= 0 && v.Field(group).Kind() == reflect.String && v.Field(kind).Kind() == reflect.String &&
			rnd.Intn(10) > 0 {
			gk := contractKinds[rnd.Intn(len(contractKinds))]
			v.Field(group).SetString(gk[0])
			v.Field(kind).SetString(gk[1])
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			resolvable(v.Index(i), rnd, contractKinds)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			resolvable(e, rnd, contractKinds)
			v.SetMapIndex(k, e)
		}
	}
}
