package framework

import (
	"reflect"
	"strings"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
)

// GroupFieldKind classifies a field of a Go struct as the generator classifies group-carrying fields
// (generator/model), re-derived on reflect types so that tests check the generator independently:
// "apiVersion" for a string field named apiVersion in JSON, "group" for one named apiGroup, "" for any
// other field and for those upstream.NotGroupFields lists.
func GroupFieldKind(owner reflect.Type, f reflect.StructField) string {
	if _, ok := upstream.NotGroupFields[owner.PkgPath()+"."+owner.Name()+"."+f.Name]; ok {
		return ""
	}
	t := f.Type
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.String {
		return ""
	}
	switch strings.Split(f.Tag.Get("json"), ",")[0] {
	case "apiVersion":
		return "apiVersion"
	case "apiGroup":
		return "group"
	}
	return ""
}
