// Package conversion converts the fixture gizmo API between its versions, the way CAPI v1.14's
// core/webhooks/conversion does: exported spoke functions (which upstream's manager registers with
// controller-runtime's conversion.NewHubSpokeConverter) and SetAPIVersionGetter with a context. The
// functions that are not whole-object conversions of a mirrored kind must be ignored.
package conversion

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openshift/hypershift-capi-proxy/generator/testdata/apis/gizmo/v1beta1"
	"github.com/openshift/hypershift-capi-proxy/generator/testdata/apis/gizmo/v1beta2"
)

var apiVersionGetter = func(context.Context, schema.GroupKind) (string, error) {
	return "", errors.New("apiVersionGetter not set")
}

// SetAPIVersionGetter sets the getter ConvertGizmoHubToV1Beta1 resolves references with.
func SetAPIVersionGetter(f func(ctx context.Context, gk schema.GroupKind) (string, error)) {
	apiVersionGetter = f
}

// ConvertGizmoV1Beta1ToHub converts a v1beta1 Gizmo to the hub.
func ConvertGizmoV1Beta1ToHub(_ context.Context, src *v1beta1.Gizmo, dst *v1beta2.Gizmo) error {
	dst.ObjectMeta = src.ObjectMeta
	return nil
}

// ConvertGizmoHubToV1Beta1 converts a hub Gizmo to v1beta1.
func ConvertGizmoHubToV1Beta1(ctx context.Context, src *v1beta2.Gizmo, dst *v1beta1.Gizmo) error {
	dst.ObjectMeta = src.ObjectMeta
	_, err := apiVersionGetter(ctx, schema.GroupKind{Group: src.Spec.ConfigRef.APIGroup, Kind: src.Spec.ConfigRef.Kind})
	return err
}

// ConvertGizmoSpecV1Beta1ToHub converts a part of a Gizmo, not a kind: not a whole-object conversion.
func ConvertGizmoSpecV1Beta1ToHub(_ context.Context, _ *v1beta1.GizmoSpec, _ *v1beta2.GizmoSpec) error {
	return nil
}

// RestoreGizmo has no context and no error: not a whole-object conversion.
func RestoreGizmo(_ *v1beta2.Gizmo, _ *v1beta1.Gizmo) {}

// convertGizmoHubToV1Beta1 is not exported.
func convertGizmoHubToV1Beta1(_ context.Context, _ *v1beta2.Gizmo, _ *v1beta1.Gizmo) error {
	return nil
}

var _ = convertGizmoHubToV1Beta1
