// Package convert converts objects of mapped kinds between the versions of their kind, exactly as upstream
// converts them: with upstream's own hub and spoke conversions, composed with the generated typed
// converters between the upstream and private groups:
//
//	private JSON -> private Go type -> <Kind>ToUpstream -> upstream spoke -> ToHub -> upstream hub
//	             -> FromHub -> upstream spoke -> <Kind>ToPrivate -> private JSON
//
// Private serves the conversion webhook (package proxy/webhook/conversion), which the apiserver calls
// with objects of the private CRDs; Upstream serves the proxy's in-process conversion (package
// proxy/adapt), whose objects are already upstream. Everything per kind comes from the generated route table: which version is the
// hub and which are spokes (translate.Route.Conversion), and on each spoke upstream's conversions to and
// from the hub (Route.ToHub, Route.FromHub), whether upstream keeps them as methods of its Go types
// (controller-runtime's conversion.Convertible, e.g. (*v1beta1.Machine).ConvertTo in
// sigs.k8s.io/cluster-api/api/core/v1beta1, CAPI v1.13) or as functions of a conversion package (CAPI
// v1.14's ConvertMachineV1Beta1ToHub in sigs.k8s.io/cluster-api/core/webhooks/conversion): the generator
// found them, and this package calls them without knowing which, passing the caller's context (the
// webhook request's) through to upstream's functions. Kinds whose versions share one schema
// (translate.NoConversion) convert by changing apiVersion only, as the apiserver does for their CRDs
// (strategy None).
//
// # The conversion-data annotation
//
// A spoke cannot hold everything the hub holds; upstream's ConvertFrom keeps the whole hub (without
// metadata) as JSON in the annotation cluster.x-k8s.io/conversion-data of the spoke, and ConvertTo restores
// from it. Since conversion always runs on upstream types, that JSON names upstream groups
// (infrastructure.cluster.x-k8s.io), also where the backend stores it (a spoke object written in
// in-process mode; a hub never keeps it). It is not translated, in either direction: only conversion code
// reads it, and all of it runs in upstream terms, so a client of the proxy reads exactly what upstream
// would have written, and what it writes back restores exactly. A reader of the backend that bypasses the
// proxy sees upstream group names inside that one annotation value, which names no owner and grants
// nothing (the garbage collector and RBAC never read it).
//
// # The apiVersion getter
//
// Converting a v1beta2 reference (apiGroup, kind, name) to v1beta1 (apiVersion, kind, name) needs the
// version of the referenced kind. Upstream's conversions ask a process-wide getter for it
// (SetAPIVersionGetter in sigs.k8s.io/cluster-api/api/core/v1beta1 and .../controlplane/kubeadm/v1beta1
// with CAPI v1.13, in the conversion packages with a context from v1.14; the generated
// routes.APIVersionGetterSetters lists them with one signature); New installs Converter.APIVersion there, which answers by CAPI's own rule from the contract labels of
// the referenced kind's CRD, as CAPI's getter does (see APIVersion): read from a watch-backed metadata
// cache of the backend's CRDs (ResolveWithCRDs, package crdcache), the private twin of the CRD for a kind
// of a mapped group, whether a route serves the kind or not (HyperShift's HostedControlPlane has none).
// A proxy without that cache (no identity of its own) answers from the labels the generator wrote into
// the route table, for routed kinds only. Where the CRD is not installed or unlabelled, converting an
// object that references the kind fails with upstream's error, prefixed with the field.
package convert

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	kjson "sigs.k8s.io/json"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/jsonx"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Converter converts objects between the versions of their kind. It is safe for concurrent use.
type Converter struct {
	table *translate.Table
	// hubs maps an upstream kind that converts by hub and spoke to the route of its hub.
	hubs map[schema.GroupKind]*translate.Route
	// crds resolves the apiVersion of referenced kinds (ResolveWithCRDs); nil resolves routed kinds from
	// the route table, and none other.
	crds CRDs
}

// New returns a Converter for the routes of table, and installs its APIVersion as the apiVersion getter of
// upstream's conversions with every function of setters (routes.APIVersionGetterSetters). The getter is
// process-wide: the Converter made last wins. It fails if a route that converts by hub and spoke lacks
// what converting needs (its typed codec; on a spoke, upstream's conversions ToHub and FromHub and the
// wording ViaHubError), or a kind has no hub or two.
func New(table *translate.Table, setters []func(func(context.Context, schema.GroupKind) (string, error))) (*Converter, error) {
	c := &Converter{table: table, hubs: map[schema.GroupKind]*translate.Route{}}
	var problems []string
	for _, r := range table.Routes() {
		if r.Conversion == translate.NoConversion {
			continue // converted by apiVersion alone; the route table has no typed codec for it
		}
		if r.Object == nil {
			problems = append(problems, fmt.Sprintf("%s: converts by hub and spoke, but the route has no typed codec", r.Upstream))
			continue
		}
		gk := r.UpstreamGVK().GroupKind()
		switch r.Conversion {
		case translate.Hub:
			if prev, dup := c.hubs[gk]; dup {
				problems = append(problems, fmt.Sprintf("%s: two hubs, %s and %s", gk, prev.Upstream.Version, r.Upstream.Version))
			}
			c.hubs[gk] = r
		case translate.Spoke:
			if r.ToHub == nil || r.FromHub == nil || r.ViaHubError == nil {
				problems = append(problems, fmt.Sprintf("%s: a spoke without upstream's conversions to and from the hub", r.Upstream))
			}
		}
	}
	for _, r := range table.Routes() {
		if r.Conversion == translate.Spoke && c.hubs[r.UpstreamGVK().GroupKind()] == nil {
			problems = append(problems, fmt.Sprintf("%s: a spoke without a hub", r.Upstream))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("convert: the route table cannot convert:\n  %s", strings.Join(problems, "\n  "))
	}
	for _, set := range setters {
		set(func(_ context.Context, gk schema.GroupKind) (string, error) { return c.APIVersion(gk) })
	}
	return c, nil
}

// Table returns the route table the Converter works with.
func (c *Converter) Table() *translate.Table { return c.table }

// Private converts one private object (JSON, as the apiserver sends it in a ConversionReview) to the private
// apiVersion apiVersion ("cluster.hypershift.openshift.io/v1beta1") of its kind, and returns its JSON. ctx
// reaches upstream's conversion functions (the webhook request's context). An object already at
// apiVersion is returned as it is. It fails with an *Error for an object of a kind or
// version without a route, malformed JSON, fields the proxy's Go types lack (the backend's CRD is newer
// than the proxy: converting would drop them), or a failing upstream conversion.
func (c *Converter) Private(ctx context.Context, data []byte, apiVersion string) ([]byte, error) {
	from, err := c.routeOf(data, c.table.ByPrivateKind)
	if err != nil {
		return nil, err
	}
	if from.Private.GroupVersion().String() == apiVersion {
		return data, nil
	}
	to, err := c.target(from, apiVersion, (*translate.Route).PrivateGVK)
	if err != nil {
		return nil, err
	}
	if from.Conversion == translate.NoConversion {
		return c.withAPIVersion(from, to, data, apiVersion)
	}
	up, priv := from.Object.New()
	if unknown, err := kjson.UnmarshalStrict(data, priv); err != nil {
		return nil, c.fail(from, to, nil, fmt.Errorf("decoding: %w", err))
	} else if len(unknown) > 0 {
		return nil, c.fail(from, to, priv, unknownFields(unknown))
	}
	from.Object.Convert(priv, up)
	out, err := c.convert(ctx, up, from, to)
	if err != nil {
		return nil, err
	}
	_, privOut := to.Object.New()
	to.Object.Convert(out, privOut)
	b, err := json.Marshal(privOut)
	if err != nil {
		return nil, c.fail(from, to, up, fmt.Errorf("encoding: %w", err))
	}
	return b, nil
}

// Upstream converts one upstream object (JSON, as a client or the proxy's translated response carries it)
// to the upstream apiVersion apiVersion ("cluster.x-k8s.io/v1beta1") of its kind, and returns its JSON.
// unknown lists the fields of data that the Go type does not have: they are not in out, and the caller
// decides what they mean (a request's fieldValidation). ctx reaches upstream's conversion functions (the
// client request's context). An object already at apiVersion is returned as it is. It fails with an
// *Error as Private does.
func (c *Converter) Upstream(ctx context.Context, data []byte, apiVersion string) (out []byte, unknown []error, err error) {
	from, err := c.routeOf(data, c.table.ByUpstreamKind)
	if err != nil {
		return nil, nil, err
	}
	if from.Upstream.GroupVersion().String() == apiVersion {
		return data, nil, nil
	}
	to, err := c.target(from, apiVersion, (*translate.Route).UpstreamGVK)
	if err != nil {
		return nil, nil, err
	}
	if from.Conversion == translate.NoConversion {
		out, err := c.withAPIVersion(from, to, data, apiVersion)
		return out, nil, err
	}
	up, _ := from.Object.New()
	unknown, err = kjson.UnmarshalStrict(data, up)
	if err != nil {
		return nil, nil, c.fail(from, to, nil, fmt.Errorf("decoding: %w", err))
	}
	converted, err := c.convert(ctx, up, from, to)
	if err != nil {
		return nil, nil, err
	}
	if out, err = json.Marshal(converted); err != nil {
		return nil, nil, c.fail(from, to, up, fmt.Errorf("encoding: %w", err))
	}
	return out, unknown, nil
}

// routeOf finds the route of an object by its apiVersion and kind, in one of the table's kind indexes.
func (c *Converter) routeOf(data []byte, byKind func(schema.GroupVersionKind) (*translate.Route, bool)) (*translate.Route, error) {
	var tm metav1.TypeMeta
	if err := json.Unmarshal(data, &tm); err != nil {
		return nil, &Error{Err: fmt.Errorf("decoding the object's apiVersion and kind: %w", err)}
	}
	gvk := schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind)
	r, ok := byKind(gvk)
	if !ok {
		return nil, &Error{GroupKind: gvk.GroupKind(), From: gvk.Version,
			Err: fmt.Errorf("no route for %s (apiVersion %q, kind %q): the proxy does not serve this kind at this version", gvk.GroupKind(), tm.APIVersion, tm.Kind)}
	}
	return r, nil
}

// target returns the route of from's kind at apiVersion, in the terms gvkOf gives (upstream or private).
func (c *Converter) target(from *translate.Route, apiVersion string, gvkOf func(*translate.Route) schema.GroupVersionKind) (*translate.Route, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err == nil {
		want := gv.WithKind(from.Kind)
		for _, r := range c.table.Versions(from.UpstreamGVK().GroupKind()) {
			if gvkOf(r) == want {
				return r, nil
			}
		}
	}
	return nil, &Error{GroupKind: from.UpstreamGVK().GroupKind(), From: from.Upstream.Version, To: apiVersion,
		Err: fmt.Errorf("no version %q of kind %s", apiVersion, from.Kind)}
}

// convert converts an upstream object of from's version (a pointer made by from.Object.New) to to's
// version, as controller-runtime's conversion webhook does (sigs.k8s.io/controller-runtime/pkg/webhook/
// conversion: webhook.convertObject for Go types that convert themselves, the hub-and-spoke converter
// upstream registers otherwise): straight to or from the hub, or through it between two spokes (the hub
// then has no apiVersion and kind, as controller-runtime's has none). The result has to's upstream
// apiVersion and kind. Its errors are *Error whose Err reads as controller-runtime's webhook reports the
// same failure (see Error.Message; between two spokes, wrapped by the routes' ViaHubError); a panic of
// upstream code is one too, logged with its stack.
func (c *Converter) convert(ctx context.Context, in any, from, to *translate.Route) (out any, err error) {
	if from == to {
		return in, nil
	}
	defer func() {
		if r := recover(); r != nil {
			klog.ErrorS(fmt.Errorf("%v", r), "Upstream conversion panicked", "from", from.Upstream, "to", to.Upstream, "stack", string(debug.Stack()))
			e := c.upstreamFail(from, to, in, nil, errInternal)
			e.Panic = r
			out, err = nil, e
		}
	}()
	dst, _ := to.Object.New()
	setKind(dst, to.UpstreamGVK())
	switch {
	case from.Conversion == translate.NoConversion || to.Conversion == translate.NoConversion:
		return nil, c.fail(from, to, in, errors.New("the kind does not convert by hub and spoke"))
	case from.Conversion == translate.Hub:
		if err = to.FromHub(ctx, in, dst); err != nil {
			// Down from the hub, a reference the getter cannot resolve is in the input.
			return nil, c.upstreamFail(from, to, in, c.unresolved(from, in), err)
		}
	case to.Conversion == translate.Hub:
		if err = from.ToHub(ctx, in, dst); err != nil {
			return nil, c.upstreamFail(from, to, in, c.unresolved(from, in), err)
		}
	default:
		hubRoute := c.hubs[from.UpstreamGVK().GroupKind()]
		hub, _ := hubRoute.Object.New()
		if err = from.ToHub(ctx, in, hub); err != nil {
			return nil, c.upstreamFail(from, to, in, c.unresolved(from, in),
				from.ViaHubError(true, in, hub, from.UpstreamGVK(), hubRoute.UpstreamGVK(), err))
		}
		if err = to.FromHub(ctx, hub, dst); err != nil {
			return nil, c.upstreamFail(from, to, in, c.unresolved(hubRoute, hub),
				to.ViaHubError(false, dst, hub, to.UpstreamGVK(), hubRoute.UpstreamGVK(), err))
		}
	}
	return dst, nil
}

// errInternal is controller-runtime's error for a conversion that panicked (webhook.handleConvertRequest).
var errInternal = errors.New("internal error occurred during conversion")

// withAPIVersion converts an object of a kind whose versions share one schema, as the apiserver does for
// its CRD (strategy None): by setting apiVersion, and nothing else.
func (c *Converter) withAPIVersion(from, to *translate.Route, data []byte, apiVersion string) ([]byte, error) {
	v, err := jsonx.Decode(data)
	if err != nil {
		return nil, c.fail(from, to, nil, fmt.Errorf("decoding: %w", err))
	}
	obj := v.(map[string]any) // routeOf decoded a TypeMeta from it: it is an object
	obj["apiVersion"] = apiVersion
	return jsonx.Encode(obj)
}

// setKind sets the apiVersion and kind of a typed object.
func setKind(obj any, gvk schema.GroupVersionKind) {
	if o, ok := obj.(interface{ GetObjectKind() schema.ObjectKind }); ok {
		o.GetObjectKind().SetGroupVersionKind(gvk)
	}
}

// unknownFields is the error for fields the proxy's Go types lack in an object from the backend.
func unknownFields(unknown []error) error {
	msgs := make([]string, len(unknown))
	for i, u := range unknown {
		msgs[i] = u.Error()
	}
	return fmt.Errorf("the object has fields the proxy's Go types lack (is the CRD newer than the proxy?); converting would drop them: %s",
		strings.Join(msgs, "; "))
}

// Error is a failed conversion of one object. Its message says which object, from and to which version,
// and where the conversion can tell, which fields:
//
//	converting Machine.cluster.x-k8s.io "ns/m1" from v1beta2 to v1beta1: spec.infrastructureRef: ...
//
// The conversion webhook answers the apiserver with Message instead, which for a failure of upstream's
// conversion is exactly what controller-runtime's conversion webhook answers for the same object.
type Error struct {
	// GroupKind is the upstream kind; From and To the versions (To may be a whole apiVersion when it names
	// no version of the kind).
	GroupKind schema.GroupKind
	From, To  string
	// Namespace and Name identify the object, where it could be decoded.
	Namespace, Name string
	// Fields are the references of the object whose kind the apiVersion getter cannot resolve, where they
	// explain the failure ("spec.infrastructureRef"). Upstream's conversions wrap the getter's error as
	// text, so they are found again rather than carried (see unresolved).
	Fields []string
	// Upstream is set when Err is the failure of upstream's conversion, worded as controller-runtime's
	// conversion webhook words it: the error of upstream's conversion to or from the hub as it is, wrapped
	// between two spokes as controller-runtime wraps it on upstream's path (translate.Route.ViaHubError),
	// or "internal error occurred during conversion" for a panic. Otherwise Err is the proxy's own (an object it cannot decode or would lose fields of,
	// a kind or version without a route).
	Upstream bool
	// Panic is the value a panicking conversion panicked with, or nil.
	Panic any
	Err   error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("converting")
	if !e.GroupKind.Empty() {
		b.WriteString(" " + e.GroupKind.String())
	}
	if e.Name != "" {
		name := e.Name
		if e.Namespace != "" {
			name = e.Namespace + "/" + e.Name
		}
		fmt.Fprintf(&b, " %q", name)
	}
	if e.From != "" {
		b.WriteString(" from " + e.From)
	}
	if e.To != "" {
		b.WriteString(" to " + e.To)
	}
	b.WriteString(": ")
	if len(e.Fields) > 0 {
		b.WriteString(strings.Join(e.Fields, ", ") + ": ")
	}
	if e.Panic != nil {
		fmt.Fprintf(&b, "%v: %v", e.Err, e.Panic)
	} else {
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Message is the message of the Failure result a conversion webhook answers for e: for a failure of
// upstream's conversion (Upstream), Err's alone, as controller-runtime's conversion webhook answers it
// (the apiserver quotes it to its client as "conversion webhook for <gvk> failed: <message>", so a client
// of the proxy reads what a client of upstream's webhook reads); for the proxy's own errors, the whole
// Error.
func (e *Error) Message() string {
	if e.Upstream {
		return e.Err.Error()
	}
	return e.Error()
}

// fail wraps err into an *Error for obj (a typed object, or nil when it could not be decoded).
func (c *Converter) fail(from, to *translate.Route, obj any, err error) *Error {
	var already *Error
	if errors.As(err, &already) {
		return already
	}
	e := &Error{GroupKind: from.UpstreamGVK().GroupKind(), From: from.Upstream.Version, To: to.Upstream.Version, Err: err}
	if m, ok := obj.(metav1.Object); ok {
		e.Namespace, e.Name = m.GetNamespace(), m.GetName()
	}
	return e
}

// upstreamFail is fail for err, a failure of upstream's conversion (Error.Upstream) of obj that fields
// explain.
func (c *Converter) upstreamFail(from, to *translate.Route, obj any, fields []string, err error) *Error {
	e := c.fail(from, to, obj, err)
	e.Upstream, e.Fields = true, fields
	return e
}
