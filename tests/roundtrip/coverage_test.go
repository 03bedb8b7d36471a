package roundtrip

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/randfill"
)

// watchedFields are fields a CAPI release added whose round trip through the conversions must be proven
// (CAPI v1.14: hack/bump-reports/capi-v1.14.2.txt), per "group Kind", as JSON paths ("[]" steps into every
// element of a list). TestConversionMatchesUpstream fails unless, for every version of the kind whose Go
// type has the field, an object it converted held a value there: a randomized object the fuzz never
// fills there would prove nothing about it. Versions without the field (older pins) are not checked.
var watchedFields = map[string][]string{
	"cluster.x-k8s.io Cluster": {
		"status.controlPlane.versions[].version", "status.controlPlane.versions[].replicas", "status.controlPlane.upgradePlan[].version",
		"status.workers.versions[].version", "status.workers.versions[].replicas", "status.workers.upgradePlan[].version",
		"status.v1beta2.controlPlane.versions[].version", "status.v1beta2.controlPlane.upgradePlan[].version",
		"status.v1beta2.workers.versions[].version", "status.v1beta2.workers.upgradePlan[].version",
	},
	"cluster.x-k8s.io MachineDeployment": {"status.versions[].version", "status.versions[].replicas"},
	"cluster.x-k8s.io MachineSet":        {"status.versions[].version", "status.versions[].replicas"},
	"cluster.x-k8s.io MachinePool":       {"status.versions[].version", "status.versions[].replicas"},
	"cluster.x-k8s.io Machine": {
		"status.deletion.waitForPreDrainHookStartTime", "status.deletion.waitForPreTerminateHookStartTime",
	},
	"controlplane.cluster.x-k8s.io KubeadmControlPlane": {
		"status.versions[].version", "status.versions[].replicas", "spec.kubeadmConfigSpec.files[].contentFormat",
	},
	"controlplane.cluster.x-k8s.io KubeadmControlPlaneTemplate": {"spec.template.spec.kubeadmConfigSpec.files[].contentFormat"},
	"bootstrap.cluster.x-k8s.io KubeadmConfig":                  {"spec.files[].contentFormat"},
	"bootstrap.cluster.x-k8s.io KubeadmConfigTemplate":          {"spec.template.spec.files[].contentFormat"},
}

// coverage records which of a kind's watched fields the objects of one fuzz run held a value in.
type coverage struct {
	paths   []string // the watched fields the Go type has
	reached map[string]bool
}

// newCoverage returns the coverage of the watched fields of group/kind that obj's Go type has.
func newCoverage(group, kind string, obj any) *coverage {
	c := &coverage{reached: map[string]bool{}}
	for _, p := range watchedFields[group+" "+kind] {
		if hasPath(reflect.TypeOf(obj), strings.Split(p, ".")) {
			c.paths = append(c.paths, p)
		}
	}
	return c
}

// add records the watched fields data (an object's JSON) holds a value in.
func (c *coverage) add(data []byte) {
	if len(c.paths) == 0 {
		return
	}
	var v any
	if json.Unmarshal(data, &v) != nil {
		return
	}
	for _, p := range c.paths {
		if !c.reached[p] && holds(v, strings.Split(p, ".")) {
			c.reached[p] = true
		}
	}
}

// missed returns the watched fields no recorded object held a value in.
func (c *coverage) missed() []string {
	var out []string
	for _, p := range c.paths {
		if !c.reached[p] {
			out = append(out, p)
		}
	}
	return out
}

// fillWatched fills, with filler, the parts of obj (a pointer to a Go type of group/kind) on the way to
// each of its watched fields that the fill left empty: a nil pointer gets a filled value, an empty list
// one filled element, a zero field a filled value. randfill stops at its depth limit and leaves
// metav1.Time zero without a fill function, so a field deep in a status (v1beta1's status.v1beta2...)
// would otherwise never hold a value.
func fillWatched(obj any, group, kind string, filler *randfill.Filler) {
	for _, p := range watchedFields[group+" "+kind] {
		if path := strings.Split(p, "."); hasPath(reflect.TypeOf(obj), path) {
			plant(reflect.ValueOf(obj), path, filler)
		}
	}
}

func plant(v reflect.Value, path []string, filler *randfill.Filler) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	if len(path) == 0 {
		if v.IsZero() {
			filler.Fill(v.Addr().Interface())
		}
		return
	}
	if v.Kind() != reflect.Struct {
		return
	}
	name, list := strings.CutSuffix(path[0], "[]")
	f, ok := jsonField(v, name)
	if !ok {
		return
	}
	if !list {
		plant(f, path[1:], filler)
		return
	}
	if f.Kind() != reflect.Slice {
		return
	}
	if f.Len() == 0 {
		f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		filler.Fill(f.Index(0).Addr().Interface())
	}
	plant(f.Index(0), path[1:], filler)
}

// jsonField returns the field of struct v whose JSON name is name, looking into inline structs.
func jsonField(v reflect.Value, name string) (reflect.Value, bool) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && tag == "" && strings.Contains(opts, "inline") {
			if fv, ok := jsonField(v.Field(i), name); ok {
				return fv, true
			}
			continue
		}
		if tag == name && f.IsExported() {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// hasPath reports whether Go type t has the JSON path (struct fields by their JSON names, inline structs
// looked into, "x[]" a list field).
func hasPath(t reflect.Type, path []string) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if len(path) == 0 {
		return true
	}
	if t.Kind() != reflect.Struct {
		return false
	}
	name, list := strings.CutSuffix(path[0], "[]")
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && tag == "" && strings.Contains(opts, "inline") {
			if hasPath(f.Type, path) {
				return true
			}
			continue
		}
		if tag != name {
			continue
		}
		ft := f.Type
		if list {
			if ft.Kind() != reflect.Slice {
				return false
			}
			ft = ft.Elem()
		}
		return hasPath(ft, path[1:])
	}
	return false
}

// holds reports whether the decoded JSON v has a value other than null, "", 0, false, [] or {} at path.
func holds(v any, path []string) bool {
	if len(path) == 0 {
		switch x := v.(type) {
		case nil:
			return false
		case string:
			return x != ""
		case float64:
			return x != 0
		case bool:
			return x
		case []any:
			return len(x) > 0
		case map[string]any:
			return len(x) > 0
		}
		return true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	name, list := strings.CutSuffix(path[0], "[]")
	next, ok := m[name]
	if !ok {
		return false
	}
	if !list {
		return holds(next, path[1:])
	}
	items, _ := next.([]any)
	for _, item := range items {
		if holds(item, path[1:]) {
			return true
		}
	}
	return false
}

// TestHasPath checks the Go-type side of the coverage on a type of this package's shape.
func TestHasPath(t *testing.T) {
	type file struct {
		ContentFormat string `json:"contentFormat,omitempty"`
	}
	type spec struct {
		Files []file `json:"files,omitempty"`
	}
	type inline struct {
		Spec *spec `json:"spec,omitempty"`
	}
	type kind struct {
		inline `json:",inline"`
	}
	for path, want := range map[string]bool{
		"spec.files[].contentFormat": true,
		"spec.files[]":               true,
		"spec.files.contentFormat":   false,
		"spec.files[].absent":        false,
		"spec.absent":                false,
	} {
		if got := hasPath(reflect.TypeOf(&kind{}), strings.Split(path, ".")); got != want {
			t.Errorf("hasPath(%s) = %t", path, got)
		}
	}
	data := []byte(`{"spec":{"files":[{},{"contentFormat":"cloud-config"}],"empty":[],"zero":0}}`)
	var v any
	_ = json.Unmarshal(data, &v)
	for path, want := range map[string]bool{
		"spec.files[].contentFormat": true, "spec.empty": false, "spec.zero": false, "spec.files": true, "spec.absent": false,
	} {
		if got := holds(v, strings.Split(path, ".")); got != want {
			t.Errorf("holds(%s) = %t", path, got)
		}
	}
}
