// Package conversion holds the fixture badconv API's conversion functions, each kind's broken in one way
// (see the kinds' comments), and a SetAPIVersionGetter of neither of upstream's shapes.
package conversion

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openshift/hypershift-capi-proxy/generator/testdata/apis/badconv/v1alpha1"
	"github.com/openshift/hypershift-capi-proxy/generator/testdata/apis/badconv/v1beta1"
	"github.com/openshift/hypershift-capi-proxy/generator/testdata/apis/badconv/v1beta2"
)

// SetAPIVersionGetter takes a getter that returns no error: neither CAPI v1.13's shape nor v1.14's.
func SetAPIVersionGetter(func(schema.GroupKind) string) {}

// ConvertPartialV1Beta1ToHub converts a v1beta1 Partial to v1beta2.
func ConvertPartialV1Beta1ToHub(context.Context, *v1beta1.Partial, *v1beta2.Partial) error {
	return nil
}

// ConvertTwiceV1Beta1ToHub converts a v1beta1 Twice to v1beta2.
func ConvertTwiceV1Beta1ToHub(context.Context, *v1beta1.Twice, *v1beta2.Twice) error { return nil }

// ConvertTwiceV1Beta1ToHubAgain converts a v1beta1 Twice to v1beta2.
func ConvertTwiceV1Beta1ToHubAgain(context.Context, *v1beta1.Twice, *v1beta2.Twice) error { return nil }

// ConvertTwiceHubToV1Beta1 converts a v1beta2 Twice to v1beta1.
func ConvertTwiceHubToV1Beta1(context.Context, *v1beta2.Twice, *v1beta1.Twice) error { return nil }

// ConvertMixedV1Beta1ToHub converts a v1beta1 Mixed to v1beta2.
func ConvertMixedV1Beta1ToHub(context.Context, *v1beta1.Mixed, *v1beta2.Mixed) error { return nil }

// ConvertMixedHubToV1Beta1 converts a v1beta2 Mixed to v1beta1.
func ConvertMixedHubToV1Beta1(context.Context, *v1beta2.Mixed, *v1beta1.Mixed) error { return nil }

// ConvertSidewaysV1Alpha1ToHub converts a v1alpha1 Sideways to v1beta2.
func ConvertSidewaysV1Alpha1ToHub(context.Context, *v1alpha1.Sideways, *v1beta2.Sideways) error {
	return nil
}

// ConvertSidewaysHubToV1Alpha1 converts a v1beta2 Sideways to v1alpha1.
func ConvertSidewaysHubToV1Alpha1(context.Context, *v1beta2.Sideways, *v1alpha1.Sideways) error {
	return nil
}

// ConvertSidewaysV1Beta1ToHub converts a v1beta1 Sideways to v1beta2.
func ConvertSidewaysV1Beta1ToHub(context.Context, *v1beta1.Sideways, *v1beta2.Sideways) error {
	return nil
}

// ConvertSidewaysHubToV1Beta1 converts a v1beta2 Sideways to v1beta1.
func ConvertSidewaysHubToV1Beta1(context.Context, *v1beta2.Sideways, *v1beta1.Sideways) error {
	return nil
}

// ConvertSidewaysV1Alpha1ToV1Beta1 converts a v1alpha1 Sideways to v1beta1.
func ConvertSidewaysV1Alpha1ToV1Beta1(context.Context, *v1alpha1.Sideways, *v1beta1.Sideways) error {
	return nil
}

// ConvertUnstoredV1Beta1ToV1Beta2 converts a v1beta1 Unstored to v1beta2.
func ConvertUnstoredV1Beta1ToV1Beta2(context.Context, *v1beta1.Unstored, *v1beta2.Unstored) error {
	return nil
}

// ConvertUnstoredV1Beta2ToV1Beta1 converts a v1beta2 Unstored to v1beta1.
func ConvertUnstoredV1Beta2ToV1Beta1(context.Context, *v1beta2.Unstored, *v1beta1.Unstored) error {
	return nil
}
