package translate

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The generated route table (zz_generated/routes) fills Route.ToHub and Route.FromHub with these adapters,
// so that whoever runs a conversion calls two plain functions and never needs to know where upstream
// keeps it. Each panics if its arguments are not pointers to the Go types it adapts (the caller passes
// values made by the routes' Object.New; a panic there is a bug of the caller or of the table).

// ConvertFunc adapts a typed conversion function of upstream's, func(ctx, *In, *Out) error (CAPI's
// ConvertMachineV1Beta1ToHub and ConvertMachineHubToV1Beta1 in sigs.k8s.io/cluster-api/core/webhooks/
// conversion), to Route.ToHub (In the spoke, Out the hub) or Route.FromHub (In the hub, Out the spoke).
func ConvertFunc[In, Out any](fn func(context.Context, *In, *Out) error) func(ctx context.Context, in, out any) error {
	return func(ctx context.Context, in, out any) error { return fn(ctx, in.(*In), out.(*Out)) }
}

// ConvertToMethod adapts the ConvertTo method of a spoke's Go type, as a method expression
// ((*v1beta1.Machine).ConvertTo, H controller-runtime's conversion.Hub), to Route.ToHub: ToHub(ctx, spoke,
// hub) calls spoke.ConvertTo(hub). ctx is not passed on.
func ConvertToMethod[S, H any](convertTo func(*S, H) error) func(ctx context.Context, spoke, hub any) error {
	return func(_ context.Context, spoke, hub any) error { return convertTo(spoke.(*S), hub.(H)) }
}

// ConvertFromMethod adapts the ConvertFrom method of a spoke's Go type ((*v1beta1.Machine).ConvertFrom)
// to Route.FromHub: FromHub(ctx, hub, spoke) calls spoke.ConvertFrom(hub). ctx is not passed on.
func ConvertFromMethod[S, H any](convertFrom func(*S, H) error) func(ctx context.Context, hub, spoke any) error {
	return func(_ context.Context, hub, spoke any) error { return convertFrom(spoke.(*S), hub.(H)) }
}

// ViaHubError wraps err, the failure of one leg of a conversion between two spokes of a kind through its
// hub: of ToHub (toHub; spoke is the object converted from) or of FromHub (spoke is the object converted
// to). spoke and hub are the typed upstream objects, spokeGVK and hubGVK their upstream kinds.
type ViaHubError func(toHub bool, spoke, hub any, spokeGVK, hubGVK schema.GroupVersionKind, err error) error

// MethodsViaHubError words the failure as controller-runtime's conversion webhook does for Go types that
// convert themselves (sigs.k8s.io/controller-runtime/pkg/webhook/conversion, webhook.convertViaHub), with
// the Go types:
//
//	*v1beta1.Machine failed to convert to hub version *v1beta2.Machine : <err>
//	*v1alpha1.IPAddress failed to convert from hub version *v1beta2.IPAddress : <err>
func MethodsViaHubError(toHub bool, spoke, hub any, _, _ schema.GroupVersionKind, err error) error {
	if toHub {
		return fmt.Errorf("%T failed to convert to hub version %T : %w", spoke, hub, err)
	}
	return fmt.Errorf("%T failed to convert from hub version %T : %w", spoke, hub, err)
}

// ConverterViaHubError words the failure as controller-runtime's hub-and-spoke converter does
// (conversion.NewHubSpokeConverter, whose ConvertObject upstream's webhook calls for a kind upstream
// registers it for), with the kinds:
//
//	failed to convert spoke ipam.cluster.x-k8s.io/v1alpha1, Kind=IPAddress to hub ipam.cluster.x-k8s.io/v1beta2, Kind=IPAddress : <err>
//	failed to convert hub ipam.cluster.x-k8s.io/v1beta2, Kind=IPAddress to spoke ipam.cluster.x-k8s.io/v1beta1, Kind=IPAddress : <err>
func ConverterViaHubError(toHub bool, _, _ any, spokeGVK, hubGVK schema.GroupVersionKind, err error) error {
	if toHub {
		return fmt.Errorf("failed to convert spoke %s to hub %s : %w", spokeGVK, hubGVK, err)
	}
	return fmt.Errorf("failed to convert hub %s to spoke %s : %w", hubGVK, spokeGVK, err)
}

// GetterSetterWithoutContext adapts an upstream SetAPIVersionGetter whose getter takes no context
// (func(func(schema.GroupKind) (string, error)); CAPI v1.13's in its v1beta1 API packages) to the one
// signature of the generated routes.APIVersionGetterSetters, whose getters take one (CAPI v1.14's): the
// getter it installs calls the given one with context.Background().
func GetterSetterWithoutContext(set func(func(schema.GroupKind) (string, error))) func(func(context.Context, schema.GroupKind) (string, error)) {
	return func(get func(context.Context, schema.GroupKind) (string, error)) {
		set(func(gk schema.GroupKind) (string, error) { return get(context.Background(), gk) })
	}
}
