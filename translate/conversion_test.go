package translate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Gear is a fixture kind with a hub (GearHub) and two spokes (GearA, GearB) whose Go types convert
// themselves. A conversion fails where the object's annotation "fail" says: "to" fails ConvertTo, "from"
// (carried to the hub) fails ConvertFrom.
type GearHub struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

type GearA struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

type GearB struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (g *GearHub) DeepCopyObject() runtime.Object { c := *g; return &c }
func (g *GearA) DeepCopyObject() runtime.Object   { c := *g; return &c }
func (g *GearB) DeepCopyObject() runtime.Object   { c := *g; return &c }

func (*GearHub) Hub() {}

func toHub(spoke *metav1.ObjectMeta, hub conversion.Hub) error {
	if spoke.Annotations["fail"] == "to" {
		return errors.New("boom to")
	}
	hub.(*GearHub).ObjectMeta = *spoke
	return nil
}

func fromHub(hub conversion.Hub, spoke *metav1.ObjectMeta) error {
	if hub.(*GearHub).Annotations["fail"] == "from" {
		return errors.New("boom from")
	}
	*spoke = hub.(*GearHub).ObjectMeta
	return nil
}

func (g *GearA) ConvertTo(hub conversion.Hub) error   { return toHub(&g.ObjectMeta, hub) }
func (g *GearB) ConvertTo(hub conversion.Hub) error   { return toHub(&g.ObjectMeta, hub) }
func (g *GearA) ConvertFrom(hub conversion.Hub) error { return fromHub(hub, &g.ObjectMeta) }
func (g *GearB) ConvertFrom(hub conversion.Hub) error { return fromHub(hub, &g.ObjectMeta) }

var (
	gearHub = schema.GroupVersionKind{Group: "example.x-k8s.io", Version: "v1beta2", Kind: "Gear"}
	gearA   = schema.GroupVersionKind{Group: "example.x-k8s.io", Version: "v1alpha1", Kind: "Gear"}
	gearB   = schema.GroupVersionKind{Group: "example.x-k8s.io", Version: "v1beta1", Kind: "Gear"}
)

func gearScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	s.AddKnownTypeWithName(gearHub, &GearHub{})
	s.AddKnownTypeWithName(gearA, &GearA{})
	s.AddKnownTypeWithName(gearB, &GearB{})
	return s
}

// convertReview posts one object to a controller-runtime conversion webhook handler and returns the failure
// message of its answer ("" for a success).
func convertReview(t *testing.T, h http.Handler, obj string, desired schema.GroupVersion) string {
	t.Helper()
	body, _ := json.Marshal(apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request: &apiextensionsv1.ConversionRequest{UID: "u1", DesiredAPIVersion: desired.String(),
			Objects: []runtime.RawExtension{{Raw: []byte(obj)}}},
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/convert", bytes.NewReader(body)))
	var out apiextensionsv1.ConversionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
		t.Fatalf("webhook answered %d %s", rec.Code, rec.Body)
	}
	if out.Response.Result.Status == metav1.StatusSuccess {
		return ""
	}
	return out.Response.Result.Message
}

// TestViaHubErrorsAreControllerRuntimes: between two spokes, MethodsViaHubError and ConverterViaHubError
// word a failed leg exactly as controller-runtime's conversion webhook does, for Go types that convert
// themselves and for a registered hub-and-spoke converter over the adapters of the generated routes.
func TestViaHubErrorsAreControllerRuntimes(t *testing.T) {
	scheme := gearScheme()
	methods := crwebhook.NewWebhookHandler(scheme, crwebhook.NewRegistry())

	// The converter runs the same methods through the route adapters, as the route table would give them.
	aTo, aFrom := translate.ConvertToMethod((*GearA).ConvertTo), translate.ConvertFromMethod((*GearA).ConvertFrom)
	bTo, bFrom := translate.ConvertToMethod((*GearB).ConvertTo), translate.ConvertFromMethod((*GearB).ConvertFrom)
	registry := crwebhook.NewRegistry()
	c, err := crwebhook.NewHubSpokeConverter(&GearHub{},
		crwebhook.NewSpokeConverter(&GearA{},
			func(ctx context.Context, hub *GearHub, spoke *GearA) error { return aFrom(ctx, hub, spoke) },
			func(ctx context.Context, spoke *GearA, hub *GearHub) error { return aTo(ctx, spoke, hub) }),
		crwebhook.NewSpokeConverter(&GearB{},
			func(ctx context.Context, hub *GearHub, spoke *GearB) error { return bFrom(ctx, hub, spoke) },
			func(ctx context.Context, spoke *GearB, hub *GearHub) error { return bTo(ctx, spoke, hub) }),
	)(scheme)
	if err != nil {
		t.Fatal(err)
	}
	if err := registry.RegisterConverter(gearHub.GroupKind(), c); err != nil {
		t.Fatal(err)
	}
	converter := crwebhook.NewWebhookHandler(scheme, registry)

	for _, tc := range []struct {
		name    string
		handler http.Handler
		words   translate.ViaHubError
	}{
		{"methods", methods, translate.MethodsViaHubError},
		{"converter", converter, translate.ConverterViaHubError},
	} {
		for _, leg := range []struct {
			fail  string
			toHub bool
			spoke any
			gvk   schema.GroupVersionKind
			err   error
		}{
			{"to", true, &GearA{}, gearA, errors.New("boom to")},
			{"from", false, &GearB{}, gearB, errors.New("boom from")},
		} {
			obj := `{"apiVersion":"example.x-k8s.io/v1alpha1","kind":"Gear","metadata":{"name":"g","annotations":{"fail":"` + leg.fail + `"}}}`
			got := convertReview(t, tc.handler, obj, gearB.GroupVersion())
			want := tc.words(leg.toHub, leg.spoke, &GearHub{}, leg.gvk, gearHub, leg.err).Error()
			if got != want {
				t.Errorf("%s, failing %s: controller-runtime says %q, translate %q", tc.name, leg.fail, got, want)
			}
		}
		// Straight to the hub, the error is not wrapped.
		obj := `{"apiVersion":"example.x-k8s.io/v1alpha1","kind":"Gear","metadata":{"name":"g","annotations":{"fail":"to"}}}`
		if got := convertReview(t, tc.handler, obj, gearHub.GroupVersion()); got != "boom to" {
			t.Errorf("%s, to the hub: %q", tc.name, got)
		}
		// And a success through the hub.
		obj = `{"apiVersion":"example.x-k8s.io/v1alpha1","kind":"Gear","metadata":{"name":"g"}}`
		if got := convertReview(t, tc.handler, obj, gearB.GroupVersion()); got != "" {
			t.Errorf("%s: %q", tc.name, got)
		}
	}
}

type ctxKey struct{}

// TestConvertFuncPassesContext: ConvertFunc hands the caller's context to upstream's function, with typed
// arguments.
func TestConvertFuncPassesContext(t *testing.T) {
	fn := translate.ConvertFunc(func(ctx context.Context, in *GearA, out *GearHub) error {
		out.Name = in.Name + "/" + ctx.Value(ctxKey{}).(string)
		return nil
	})
	hub := &GearHub{}
	if err := fn(context.WithValue(context.Background(), ctxKey{}, "c"), &GearA{ObjectMeta: metav1.ObjectMeta{Name: "g"}}, hub); err != nil || hub.Name != "g/c" {
		t.Errorf("ConvertFunc: %v, %q", err, hub.Name)
	}
}

// TestGetterSetterWithoutContext: a getter with a context, installed through a setter whose getter takes
// none, is called with context.Background().
func TestGetterSetterWithoutContext(t *testing.T) {
	var installed func(schema.GroupKind) (string, error)
	set := translate.GetterSetterWithoutContext(func(get func(schema.GroupKind) (string, error)) { installed = get })
	set(func(ctx context.Context, gk schema.GroupKind) (string, error) {
		if ctx != context.Background() {
			t.Errorf("the getter got %v", ctx)
		}
		return gk.Group + "/v9", nil
	})
	if got, err := installed(schema.GroupKind{Group: "g", Kind: "K"}); err != nil || got != "g/v9" {
		t.Errorf("installed getter: %q, %v", got, err)
	}
}
