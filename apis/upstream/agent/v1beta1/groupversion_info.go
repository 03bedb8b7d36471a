package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the types in this package.
	GroupVersion = schema.GroupVersion{Group: "capi-provider.agent-install.openshift.io", Version: "v1beta1"}

	// SchemeBuilder registers every kind of this package and its list with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this group version to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
