package roundtrip

import (
	"encoding/json"
	"math/rand"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

// TestPathsAgreeWithConverters proves every route's Paths complete: the proxy translates the objects
// the backend sends along them, byte for byte (translate.Direction.Rewrite), so for randomized objects of
// every kind at every version the path rewrite must say exactly what the typed converters say, both
// ways.
func TestPathsAgreeWithConverters(t *testing.T) {
	for _, r := range translate.NewTable(routes.Routes).Routes() {
		t.Run(r.Upstream.GroupVersion().String()+"/"+r.Kind, func(t *testing.T) {
			seed := rand.Int63()
			rnd := rand.New(rand.NewSource(seed))
			filler := newFiller(seed)
			for i := 0; i < iterations; i++ {
				up, _ := r.Object.New()
				filler.Fill(up)
				sanitize(reflect.ValueOf(up).Elem(), rnd, nil)
				decorate(up)
				// The canonical JSON of the object (see roundTrip).
				data, err := json.Marshal(up)
				if err != nil {
					t.Fatal(err)
				}
				canonical, _ := r.Object.New()
				if err := json.Unmarshal(data, canonical); err != nil {
					t.Fatal(err)
				}
				if data, err = json.Marshal(canonical); err != nil {
					t.Fatal(err)
				}

				typed, _, err := r.Object.ToPrivate(data)
				if err != nil {
					t.Fatalf("seed %d: ToPrivate: %v", seed, err)
				}
				rewritten, err := translate.ToPrivate.Rewrite(r.Paths, data)
				if err != nil {
					t.Fatalf("seed %d: Rewrite: %v", seed, err)
				}
				sameJSON(t, seed, "to private", typed, rewritten)

				back, err := translate.ToUpstream.Rewrite(r.Paths, typed)
				if err != nil {
					t.Fatalf("seed %d: Rewrite: %v", seed, err)
				}
				typedBack, _, err := r.Object.ToUpstream(typed)
				if err != nil {
					t.Fatalf("seed %d: ToUpstream: %v", seed, err)
				}
				sameJSON(t, seed, "to upstream", typedBack, back)
			}
		})
	}
}

func sameJSON(t *testing.T, seed int64, what string, typed, rewritten []byte) {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(typed, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(rewritten, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("seed %d: %s: the path rewrite differs from the typed converter (-typed +rewrite):\n%s", seed, what, cmp.Diff(a, b))
	}
}
