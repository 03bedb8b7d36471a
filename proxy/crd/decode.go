package crd

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"
)

// scheme holds the apiextensions.k8s.io/v1 types with their defaults: the only version kube-apiserver
// serves CustomResourceDefinitions in, and the only one it accepts in a body sent to that version.
var scheme = runtime.NewScheme()

func init() {
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
}

// decodeJSON decodes a CustomResourceDefinition from JSON as kube-apiserver's JSON serializer does when
// it is not strict (sigs.k8s.io/json's UnmarshalCaseSensitivePreserveInts): member names match exactly,
// and a repeated member is decoded again over the earlier one (the last value wins, objects merge), then
// sets the defaults the apiserver sets.
func decodeJSON(data []byte) (*apiextensionsv1.CustomResourceDefinition, error) {
	c := &apiextensionsv1.CustomResourceDefinition{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, c); err != nil {
		return nil, err
	}
	scheme.Default(c)
	return c, nil
}
