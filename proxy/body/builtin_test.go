package body

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/backendtesting"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/routestesting"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// TestBuiltinPathsMatchTheGoTypes walks the paths of every built-in kind through its Go type in every
// version client-go's scheme knows, so that a misspelled or moved field fails here: each field must
// exist (by its exact JSON name, embedded structs included), arrays and maps must be where the tree says,
// leaves and map keys must be strings, and rules must be structs with apiGroups.
func TestBuiltinPathsMatchTheGoTypes(t *testing.T) {
	for _, k := range builtinKinds {
		versions := 0
		for gvk, typ := range scheme.Scheme.AllKnownTypes() {
			if gvk.GroupKind() != k.kind || gvk.Version == "__internal" {
				continue
			}
			versions++
			for name, n := range k.paths.Fields {
				if name == "metadata" || name == "apiVersion" {
					continue // ObjectMeta and TypeMeta: translate's own tests
				}
				checkPaths(t, gvk.String()+"."+name, n, fieldType(typ, name))
			}
		}
		if versions == 0 {
			t.Errorf("%s is not a kind client-go knows", k.kind)
		}
	}
}

func checkPaths(t *testing.T, at string, n *translate.Node, typ reflect.Type) {
	t.Helper()
	if typ == nil {
		t.Errorf("%s: no such field", at)
		return
	}
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch n.Value {
	case translate.NoValue:
	case translate.RuleValue:
		if typ.Kind() != reflect.Struct || fieldType(typ, "apiGroups") == nil || fieldType(typ, "resources") == nil {
			t.Errorf("%s: a rule is a %s without apiGroups and resources", at, typ)
		}
	case translate.ResourceAttributesValue:
		if typ.Kind() != reflect.Struct || fieldType(typ, "group") == nil || fieldType(typ, "resource") == nil || fieldType(typ, "name") == nil {
			t.Errorf("%s: resource attributes are a %s without group, resource and name", at, typ)
		}
	default:
		if typ.Kind() != reflect.String {
			t.Errorf("%s: a value kind %d on a %s", at, n.Value, typ)
		}
	}
	if n.Keys != translate.NoValue && (typ.Kind() != reflect.Map || typ.Key().Kind() != reflect.String) {
		t.Errorf("%s: keys on a %s", at, typ)
	}
	if n.Items != nil {
		if typ.Kind() != reflect.Slice {
			t.Errorf("%s: items of a %s", at, typ)
			return
		}
		checkPaths(t, at+"[]", n.Items, typ.Elem())
	}
	if n.Values != nil {
		if typ.Kind() != reflect.Map {
			t.Errorf("%s: values of a %s", at, typ)
			return
		}
		checkPaths(t, at+"{}", n.Values, typ.Elem())
	}
	for name, c := range n.Fields {
		if typ.Kind() != reflect.Struct {
			t.Errorf("%s: field %q of a %s", at, name, typ)
			continue
		}
		checkPaths(t, at+"."+name, c, fieldType(typ, name))
	}
}

// fieldType returns the type of the field of struct typ whose JSON name is name, looking into embedded and
// inline structs, or nil.
func fieldType(typ reflect.Type, name string) reflect.Type {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct {
		return nil
	}
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == name {
			return f.Type
		}
		if tag == "" && (f.Anonymous || strings.Contains(opts, "inline")) {
			if ft := fieldType(f.Type, name); ft != nil {
				return ft
			}
		}
	}
	return nil
}

// TestBuiltinRulesAndQuotas translates the bodies of Roles, ClusterRoles, admission configurations and
// ResourceQuotas to the private groups (requests) and back (responses, with and without kind), byte for
// byte.
func TestBuiltinRulesAndQuotas(t *testing.T) {
	tr := New(routestesting.Table())
	for _, tc := range []struct {
		resource     schema.GroupResource
		upstream, pv string
	}{
		{schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "roles"},
			`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"r","namespace":"ns"},"rules":[` +
				`{"apiGroups":["cluster.x-k8s.io","infrastructure.cluster.x-k8s.io"],"resources":["machines","machines/status"],"verbs":["get","list"]},` +
				`{"apiGroups":["*"],"resources":["*"],"verbs":["watch"]},{"apiGroups":[""],"resources":["secrets"],"resourceNames":["cluster.x-k8s.io"],"verbs":["get"]}]}`,
			`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"r","namespace":"ns"},"rules":[` +
				`{"apiGroups":["cluster.hypershift.openshift.io","infrastructure.cluster.hypershift.openshift.io"],"resources":["machines","machines/status"],"verbs":["get","list"]},` +
				`{"apiGroups":["*"],"resources":["*"],"verbs":["watch"]},{"apiGroups":[""],"resources":["secrets"],"resourceNames":["cluster.x-k8s.io"],"verbs":["get"]}]}`},
		{schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
			`{"kind":"ClusterRole","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"name":"c","labels":{"cluster.x-k8s.io/aggregate-to-manager":"true"}},` +
				`"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"cluster.x-k8s.io/aggregate-to-manager":"true"}}]},"rules":[` +
				`{"verbs":["patch"],"apiGroups":["apiextensions.k8s.io"],"resources":["customresourcedefinitions"],"resourceNames":["machines.cluster.x-k8s.io","widgets.example.com"]},` +
				`{"nonResourceURLs":["/apis/cluster.x-k8s.io"],"verbs":["get"]}]}`,
			`{"kind":"ClusterRole","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"name":"c","labels":{"cluster.x-k8s.io/aggregate-to-manager":"true"}},` +
				`"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"cluster.x-k8s.io/aggregate-to-manager":"true"}}]},"rules":[` +
				`{"verbs":["patch"],"apiGroups":["apiextensions.k8s.io"],"resources":["customresourcedefinitions"],"resourceNames":["machines.cluster.hypershift.openshift.io","widgets.example.com"]},` +
				`{"nonResourceURLs":["/apis/cluster.x-k8s.io"],"verbs":["get"]}]}`},
		{schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"},
			`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"w"},"webhooks":[{"name":"w.cluster.x-k8s.io",` +
				`"clientConfig":{"url":"https://cluster.x-k8s.io/validate"},"rules":[{"operations":["CREATE"],"apiGroups":["cluster.x-k8s.io"],"apiVersions":["v1beta2"],"resources":["machines"]}],` +
				`"matchConditions":[{"name":"m","expression":"object.apiVersion == 'cluster.x-k8s.io/v1beta2'"}]}]}`,
			`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"w"},"webhooks":[{"name":"w.cluster.x-k8s.io",` +
				`"clientConfig":{"url":"https://cluster.x-k8s.io/validate"},"rules":[{"operations":["CREATE"],"apiGroups":["cluster.hypershift.openshift.io"],"apiVersions":["v1beta2"],"resources":["machines"]}],` +
				`"matchConditions":[{"name":"m","expression":"object.apiVersion == 'cluster.x-k8s.io/v1beta2'"}]}]}`},
		{schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"},
			`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingWebhookConfiguration","webhooks":[{"rules":[{"apiGroups":["bootstrap.cluster.x-k8s.io"]}]}]}`,
			`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingWebhookConfiguration","webhooks":[{"rules":[{"apiGroups":["bootstrap.cluster.hypershift.openshift.io"]}]}]}`},
		{schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"},
			`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","spec":{"paramKind":{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster"},` +
				`"matchConstraints":{"resourceRules":[{"apiGroups":["cluster.x-k8s.io"],"apiVersions":["*"],"operations":["*"],"resources":["machines"]}],` +
				`"excludeResourceRules":[{"apiGroups":["apiextensions.k8s.io"],"resources":["customresourcedefinitions"],"resourceNames":["machines.cluster.x-k8s.io"]}]},` +
				`"validations":[{"expression":"true"}]}}`,
			`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","spec":{"paramKind":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Cluster"},` +
				`"matchConstraints":{"resourceRules":[{"apiGroups":["cluster.hypershift.openshift.io"],"apiVersions":["*"],"operations":["*"],"resources":["machines"]}],` +
				`"excludeResourceRules":[{"apiGroups":["apiextensions.k8s.io"],"resources":["customresourcedefinitions"],"resourceNames":["machines.cluster.hypershift.openshift.io"]}]},` +
				`"validations":[{"expression":"true"}]}}`},
		{schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicybindings"},
			`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding","spec":{"policyName":"p","paramRef":{"name":"cluster.x-k8s.io"},` +
				`"matchResources":{"resourceRules":[{"apiGroups":["cluster.x-k8s.io"]}],"excludeResourceRules":[{"apiGroups":["ipam.cluster.x-k8s.io"]}]}}}`,
			`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding","spec":{"policyName":"p","paramRef":{"name":"cluster.x-k8s.io"},` +
				`"matchResources":{"resourceRules":[{"apiGroups":["cluster.hypershift.openshift.io"]}],"excludeResourceRules":[{"apiGroups":["ipam.cluster.hypershift.openshift.io"]}]}}}`},
		{schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicies"},
			`{"apiVersion":"admissionregistration.k8s.io/v1beta1","kind":"MutatingAdmissionPolicy","spec":{"paramKind":{"apiVersion":"cluster.x-k8s.io/v1beta2"},"matchConstraints":{"resourceRules":[{"apiGroups":["cluster.x-k8s.io"]}]}}}`,
			`{"apiVersion":"admissionregistration.k8s.io/v1beta1","kind":"MutatingAdmissionPolicy","spec":{"paramKind":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2"},"matchConstraints":{"resourceRules":[{"apiGroups":["cluster.hypershift.openshift.io"]}]}}}`},
		{schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicybindings"},
			`{"apiVersion":"admissionregistration.k8s.io/v1alpha1","kind":"MutatingAdmissionPolicyBinding","spec":{"matchResources":{"excludeResourceRules":[{"apiGroups":["cluster.x-k8s.io"]}]}}}`,
			`{"apiVersion":"admissionregistration.k8s.io/v1alpha1","kind":"MutatingAdmissionPolicyBinding","spec":{"matchResources":{"excludeResourceRules":[{"apiGroups":["cluster.hypershift.openshift.io"]}]}}}`},
		{schema.GroupResource{Resource: "resourcequotas"},
			`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q","managedFields":[{"manager":"m","operation":"Apply","apiVersion":"v1","fieldsType":"FieldsV1",` +
				`"fieldsV1":{"f:spec":{"f:hard":{".":{},"f:count/machines.cluster.x-k8s.io":{},"f:pods":{}}},"f:status":{"f:used":{"f:count/machines.cluster.x-k8s.io":{}}},"f:metadata":{"f:labels":{"f:count/machines.cluster.x-k8s.io":{}}}}}]},"spec":{}}`,
			`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q","managedFields":[{"manager":"m","operation":"Apply","apiVersion":"v1","fieldsType":"FieldsV1",` +
				`"fieldsV1":{"f:spec":{"f:hard":{".":{},"f:count/machines.cluster.hypershift.openshift.io":{},"f:pods":{}}},"f:status":{"f:used":{"f:count/machines.cluster.hypershift.openshift.io":{}}},"f:metadata":{"f:labels":{"f:count/machines.cluster.x-k8s.io":{}}}}}]},"spec":{}}`},
		{schema.GroupResource{Resource: "resourcequotas"},
			`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q"},"spec":{"hard":{"count/machines.cluster.x-k8s.io":"1","count/pods":"2","requests.cpu":"1"}},` +
				`"status":{"hard":{"count/machines.cluster.x-k8s.io":"1"},"used":{"count/machines.cluster.x-k8s.io":"0","count/machinesets.cluster.x-k8s.io":"0"}}}`,
			`{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q"},"spec":{"hard":{"count/machines.cluster.hypershift.openshift.io":"1","count/pods":"2","requests.cpu":"1"}},` +
				`"status":{"hard":{"count/machines.cluster.hypershift.openshift.io":"1"},"used":{"count/machines.cluster.hypershift.openshift.io":"0","count/machinesets.cluster.hypershift.openshift.io":"0"}}}`},
		{schema.GroupResource{Resource: "namespaces"},
			`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n"},"status":{"phase":"Terminating","conditions":[{"type":"NamespaceContentRemaining","status":"True","reason":"SomeResourcesRemain","message":"Some resources are remaining: machines.cluster.x-k8s.io has 1 resource instances"}]}}`,
			`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n"},"status":{"phase":"Terminating","conditions":[{"type":"NamespaceContentRemaining","status":"True","reason":"SomeResourcesRemain","message":"Some resources are remaining: machines.cluster.hypershift.openshift.io has 1 resource instances"}]}}`},
		{schema.GroupResource{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"},
			`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","status":{"resourceRules":[{"verbs":["get"],"apiGroups":["cluster.x-k8s.io"],"resources":["machines"]},` +
				`{"verbs":["get"],"apiGroups":["apiextensions.k8s.io"],"resources":["customresourcedefinitions"],"resourceNames":["machines.cluster.x-k8s.io"]}]}}`,
			`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","status":{"resourceRules":[{"verbs":["get"],"apiGroups":["cluster.hypershift.openshift.io"],"resources":["machines"]},` +
				`{"verbs":["get"],"apiGroups":["apiextensions.k8s.io"],"resources":["customresourcedefinitions"],"resourceNames":["machines.cluster.hypershift.openshift.io"]}]}}`},
		{schema.GroupResource{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"},
			`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"get","group":"apiextensions.k8s.io","resource":"customresourcedefinitions","name":"machines.cluster.x-k8s.io"}},"status":{"allowed":true}}`,
			`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"get","group":"apiextensions.k8s.io","resource":"customresourcedefinitions","name":"machines.cluster.hypershift.openshift.io"}},"status":{"allowed":true}}`},
		{schema.GroupResource{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
			`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"alice","resourceAttributes":{"name":"machines.cluster.x-k8s.io","namespace":"ns","verb":"get","group":"cluster.x-k8s.io","resource":"machines"}}}`,
			`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"alice","resourceAttributes":{"name":"machines.cluster.x-k8s.io","namespace":"ns","verb":"get","group":"cluster.hypershift.openshift.io","resource":"machines"}}}`},
	} {
		t.Run(tc.resource.String(), func(t *testing.T) {
			got, err := Paths(translate.ToPrivate, []byte(tc.upstream), RequestPaths(tc.resource))
			if err != nil || string(got) != tc.pv {
				t.Fatalf("request: got %s, %v\nwant %s", got, err, tc.pv)
			}
			got, err = tr.Upstream([]byte(tc.pv))
			if err != nil || string(got) != tc.upstream {
				t.Fatalf("response: got %s, %v\nwant %s", got, err, tc.upstream)
			}
			// The same object as a list item translated in one pass.
			got, n, err := tr.AppendUpstreamOfItem(tc.resource)([]byte("[x,"), []byte(tc.pv+",{}"))
			if err != nil || n != len(tc.pv) || string(got) != "[x,"+tc.upstream {
				t.Fatalf("list item in one pass: got %s, %d, %v\nwant [x,%s", got, n, err, tc.upstream)
			}
			// A list item of the resource: no apiVersion and kind.
			item := strings.Replace(tc.pv, `"kind":"`, `"x":"`, 1)
			want := strings.Replace(tc.upstream, `"kind":"`, `"x":"`, 1)
			for _, av := range []string{`"apiVersion":"rbac.authorization.k8s.io/v1"`, `"apiVersion":"admissionregistration.k8s.io/v1"`, `"apiVersion":"authorization.k8s.io/v1"`} {
				item, want = strings.Replace(item, av, `"y":0`, 1), strings.Replace(want, av, `"y":0`, 1)
			}
			got, err = tr.UpstreamOf(tc.resource)([]byte(item))
			if err != nil || string(got) != want {
				t.Fatalf("list item: got %s, %v\nwant %s", got, err, want)
			}
			got, err = tr.AppendUpstreamOfValid(tc.resource)([]byte("[x,"), []byte(item))
			if err != nil || string(got) != "[x,"+want {
				t.Fatalf("list item appended: got %s, %v\nwant [x,%s", got, err, want)
			}
		})
	}
}

func TestBuiltinPatches(t *testing.T) {
	quota := RequestPaths(schema.GroupResource{Resource: "resourcequotas"})
	role := RequestPaths(schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "roles"})
	for _, tc := range []struct {
		name, mediaType string
		n               *translate.Node
		in, want        string
	}{
		{"json patch addressing quota keys", JSONPatch, quota,
			`[{"op":"add","path":"/spec/hard/count~1machines.cluster.x-k8s.io","value":"1"},` +
				`{"op":"move","from":"/spec/hard/count~1machinesets.cluster.x-k8s.io","path":"/spec/hard/count~1pods"},` +
				`{"op":"remove","path":"/spec/hard/count~1machinedeployments.cluster.x-k8s.io"},` +
				`{"op":"test","path":"/metadata/labels/count~1machines.cluster.x-k8s.io","value":"cluster.x-k8s.io"},` +
				`{"op":"replace","path":"/spec/hard","value":{"count/machinepools.cluster.x-k8s.io":"3"}}]`,
			`[{"op":"add","path":"/spec/hard/count~1machines.cluster.hypershift.openshift.io","value":"1"},` +
				`{"op":"move","from":"/spec/hard/count~1machinesets.cluster.hypershift.openshift.io","path":"/spec/hard/count~1pods"},` +
				`{"op":"remove","path":"/spec/hard/count~1machinedeployments.cluster.hypershift.openshift.io"},` +
				`{"op":"test","path":"/metadata/labels/count~1machines.cluster.x-k8s.io","value":"cluster.x-k8s.io"},` +
				`{"op":"replace","path":"/spec/hard","value":{"count/machinepools.cluster.hypershift.openshift.io":"3"}}]`},
		{"json patch of rules", JSONPatch, role,
			`[{"op":"add","path":"/rules/-","value":{"apiGroups":["cluster.x-k8s.io"],"resources":["machines"],"verbs":["get"]}},` +
				`{"op":"add","path":"/rules/0/apiGroups/0","value":"cluster.x-k8s.io"}]`,
			`[{"op":"add","path":"/rules/-","value":{"apiGroups":["cluster.hypershift.openshift.io"],"resources":["machines"],"verbs":["get"]}},` +
				`{"op":"add","path":"/rules/0/apiGroups/0","value":"cluster.hypershift.openshift.io"}]`},
		{"merge patch of quota", MergePatch, quota,
			`{"spec":{"hard":{"count/machines.cluster.x-k8s.io":null,"count/machinesets.cluster.x-k8s.io":"2"}}}`,
			`{"spec":{"hard":{"count/machines.cluster.hypershift.openshift.io":null,"count/machinesets.cluster.hypershift.openshift.io":"2"}}}`},
		{"apply patch of a role", ApplyPatchYAML, role,
			"apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: r}\nrules:\n- apiGroups: [cluster.x-k8s.io]\n  resources: [machines]\n  verbs: [list]\n",
			`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"r"},"rules":[{"apiGroups":["cluster.hypershift.openshift.io"],"resources":["machines"],"verbs":["list"]}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Patch(translate.ToPrivate, tc.n, tc.mediaType, []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if tc.mediaType == ApplyPatchYAML {
				backendtesting.EqualJSON(t, out, tc.want)
			} else if string(out) != tc.want {
				t.Errorf("got  %s\nwant %s", out, tc.want)
			}
		})
	}
}
