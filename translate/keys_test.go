package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// ruleAndQuotaPaths has the shapes of the built-in kinds with rules and quota keys (proxy/body's table).
var ruleAndQuotaPaths = Paths("apiVersion=apiVersion", "metadata=objectMeta", "rules[]=rule", "webhooks[].rules[]=rule",
	"spec.paramKind.apiVersion=apiVersion", "spec.hard{key}=quotaResource", "status.used{key}=quotaResource",
	"spec.resourceAttributes=resourceAttributes")

func TestDirectionQuotaResourceAndGroupResource(t *testing.T) {
	for _, tc := range []struct {
		fn       func(string) string
		in, want string
	}{
		{ToPrivate.QuotaResource, "count/machines.cluster.x-k8s.io", "count/machines.cluster.hypershift.openshift.io"},
		{ToPrivate.QuotaResource, "count/awsmachines.infrastructure.cluster.x-k8s.io", "count/awsmachines.infrastructure.cluster.hypershift.openshift.io"},
		{ToUpstream.QuotaResource, "count/machines.cluster.hypershift.openshift.io", "count/machines.cluster.x-k8s.io"},
		{ToPrivate.QuotaResource, "count/pods", "count/pods"},
		{ToPrivate.QuotaResource, "count/deployments.apps", "count/deployments.apps"},
		{ToPrivate.QuotaResource, "machines.cluster.x-k8s.io", "machines.cluster.x-k8s.io"},
		{ToPrivate.QuotaResource, "requests.cluster.x-k8s.io", "requests.cluster.x-k8s.io"},
		{ToPrivate.QuotaResource, "count/cluster.x-k8s.io", "count/cluster.x-k8s.io"},
		{ToPrivate.QuotaResource, "COUNT/machines.cluster.x-k8s.io", "COUNT/machines.cluster.x-k8s.io"},
		{ToPrivate.QuotaResource, "", ""},
		{func(s string) string { return ToPrivate.Value(FieldQuotaResourceValue, s) }, "f:count/machines.cluster.x-k8s.io", "f:count/machines.cluster.hypershift.openshift.io"},
		{func(s string) string { return ToUpstream.Value(FieldQuotaResourceValue, s) }, "f:count/machines.cluster.hypershift.openshift.io", "f:count/machines.cluster.x-k8s.io"},
		{func(s string) string { return ToPrivate.Value(FieldQuotaResourceValue, s) }, "count/machines.cluster.x-k8s.io", "count/machines.cluster.x-k8s.io"},
		{func(s string) string { return ToPrivate.Value(FieldQuotaResourceValue, s) }, "f:pods", "f:pods"},
		{func(s string) string { return ToPrivate.Value(FieldQuotaResourceValue, s) }, ".", "."},
		{ToPrivate.GroupResource, "machines.cluster.x-k8s.io", "machines.cluster.hypershift.openshift.io"},
		{ToPrivate.GroupResource, "machines.x.cluster.x-k8s.io", "machines.x.cluster.x-k8s.io"},
		{ToUpstream.GroupResource, "machines.cluster.x-k8s.io", "machines.cluster.x-k8s.io"},
	} {
		if got := tc.fn(tc.in); got != tc.want {
			t.Errorf("%q -> %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRuleCoversCRDs(t *testing.T) {
	for _, tc := range []struct {
		groups, resources []string
		want              bool
	}{
		{[]string{"apiextensions.k8s.io"}, []string{"customresourcedefinitions"}, true},
		{[]string{"apps", "apiextensions.k8s.io"}, []string{"deployments", "customresourcedefinitions/status"}, true},
		{[]string{"*"}, []string{"*"}, true},
		{[]string{"apiextensions.k8s.io"}, []string{"*/status"}, true},
		{[]string{"apiextensions.k8s.io"}, []string{"customresourcedefinitions/*"}, true},
		{[]string{"apps"}, []string{"customresourcedefinitions"}, false},
		{[]string{"apiextensions.k8s.io"}, []string{"customresourcedefinition"}, false},
		{[]string{"apiextensions.k8s.io"}, nil, false},
		{nil, []string{"customresourcedefinitions"}, false},
		{[]string{"Apiextensions.k8s.io"}, []string{"customresourcedefinitions"}, false},
	} {
		if got := RuleCoversCRDs(tc.groups, tc.resources); got != tc.want {
			t.Errorf("RuleCoversCRDs(%q, %q) = %v, want %v", tc.groups, tc.resources, got, tc.want)
		}
	}
}

func TestRewriteRulesAndKeys(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{
			name: "role rules: mapped groups only, wildcards and other groups kept",
			in:   `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","rules":[{"apiGroups":["cluster.x-k8s.io","apps","*",""],"resources":["machines"],"resourceNames":["machines.cluster.x-k8s.io"],"verbs":["*"]}]}`,
			want: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","rules":[{"apiGroups":["cluster.hypershift.openshift.io","apps","*",""],"resources":["machines"],"resourceNames":["machines.cluster.x-k8s.io"],"verbs":["*"]}]}`,
		},
		{
			name: "CRD names in a rule on customresourcedefinitions, whatever the member order",
			in: `{"rules":[{"resourceNames":["machines.cluster.x-k8s.io","widgets.example.com","cluster.x-k8s.io"],"verbs":["get"],"resources":["customresourcedefinitions"],"apiGroups":["apiextensions.k8s.io"]},` +
				`{"apiGroups":["*"],"resources":["*/status"],"resourceNames":["awsmachines.infrastructure.cluster.x-k8s.io"]},` +
				`{"apiGroups":["apps"],"resources":["customresourcedefinitions"],"resourceNames":["machines.cluster.x-k8s.io"]}]}`,
			want: `{"rules":[{"resourceNames":["machines.cluster.hypershift.openshift.io","widgets.example.com","cluster.x-k8s.io"],"verbs":["get"],"resources":["customresourcedefinitions"],"apiGroups":["apiextensions.k8s.io"]},` +
				`{"apiGroups":["*"],"resources":["*/status"],"resourceNames":["awsmachines.infrastructure.cluster.hypershift.openshift.io"]},` +
				`{"apiGroups":["apps"],"resources":["customresourcedefinitions"],"resourceNames":["machines.cluster.x-k8s.io"]}]}`,
		},
		{
			name: "exact keys only: APIGroups and Resources are not apiGroups and resources",
			in:   `{"rules":[{"APIGroups":["cluster.x-k8s.io"],"apiGroups":["apiextensions.k8s.io"],"Resources":["customresourcedefinitions"],"resourceNames":["machines.cluster.x-k8s.io"]}],"Rules":[{"apiGroups":["cluster.x-k8s.io"]}]}`,
			want: `{"rules":[{"APIGroups":["cluster.x-k8s.io"],"apiGroups":["apiextensions.k8s.io"],"Resources":["customresourcedefinitions"],"resourceNames":["machines.cluster.x-k8s.io"]}],"Rules":[{"apiGroups":["cluster.x-k8s.io"]}]}`,
		},
		{
			name: "escaped keys and values in rules",
			in:   `{"rules":[{"api\u0047roups":["apiextensions.k8s.io","cluster.x-k8s.io"],"resources":["customresource\u0064efinitions"],"resourceNames":["machines.cluster.x-k8s.io\u0000","machines.cluster.x-k8s.io ","machines\u002ecluster.x-k8s.io"]}]}`,
			want: `{"rules":[{"api\u0047roups":["apiextensions.k8s.io","cluster.hypershift.openshift.io"],"resources":["customresource\u0064efinitions"],"resourceNames":["machines.cluster.x-k8s.io\u0000","machines.cluster.x-k8s.io ","machines.cluster.hypershift.openshift.io"]}]}`,
		},
		{
			name: "a rule of unexpected types is left alone",
			in:   `{"rules":[{"apiGroups":"cluster.x-k8s.io","resources":[1],"resourceNames":["machines.cluster.x-k8s.io"]},"cluster.x-k8s.io",null,{"apiGroups":["apiextensions.k8s.io",1],"resources":["*"],"resourceNames":["machines.cluster.x-k8s.io"]}]}`,
			want: `{"rules":[{"apiGroups":"cluster.x-k8s.io","resources":[1],"resourceNames":["machines.cluster.x-k8s.io"]},"cluster.x-k8s.io",null,{"apiGroups":["apiextensions.k8s.io",1],"resources":["*"],"resourceNames":["machines.cluster.x-k8s.io"]}]}`,
		},
		{
			name: "webhook rules and paramKind",
			in:   `{"webhooks":[{"name":"w","rules":[{"apiGroups":["infrastructure.cluster.x-k8s.io"],"apiVersions":["*"],"resources":["*"],"operations":["CREATE"]}]}],"spec":{"paramKind":{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster"}}}`,
			want: `{"webhooks":[{"name":"w","rules":[{"apiGroups":["infrastructure.cluster.hypershift.openshift.io"],"apiVersions":["*"],"resources":["*"],"operations":["CREATE"]}]}],"spec":{"paramKind":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Cluster"}}}`,
		},
		{
			name: "quota keys: only count/<resource>.<mapped group>, written back as they were",
			in: "{\"spec\": {\"hard\": {\"count/machines.cluster.x-k8s.io\": \"1\", \"count\\/machinesets.cluster.x-k8s.io\" : 2, \"pods\":\"10\", " +
				"\"count/deployments.apps\":\"3\", \"requests.cluster.x-k8s.io/gpu\":\"1\", \"Count/machines.cluster.x-k8s.io\":\"1\"}}," +
				"\"status\":{\"used\":{\"count/machines.cluster.x-k8s.io\":\"0\"},\"hard\":{\"count/machines.cluster.x-k8s.io\":\"1\"}}}",
			want: "{\"spec\": {\"hard\": {\"count/machines.cluster.hypershift.openshift.io\": \"1\", \"count/machinesets.cluster.hypershift.openshift.io\" : 2, \"pods\":\"10\", " +
				"\"count/deployments.apps\":\"3\", \"requests.cluster.x-k8s.io/gpu\":\"1\", \"Count/machines.cluster.x-k8s.io\":\"1\"}}," +
				"\"status\":{\"used\":{\"count/machines.cluster.hypershift.openshift.io\":\"0\"},\"hard\":{\"count/machines.cluster.x-k8s.io\":\"1\"}}}",
		},
		{
			name: "resource attributes: the name of a CRD, not of anything else",
			in:   `{"spec":{"resourceAttributes":{"name":"machines.cluster.x-k8s.io","verb":"get","group":"apiextensions.k8s.io","resource":"customresourcedefinitions"}},"rules":[{"resourceAttributes":{"group":"cluster.x-k8s.io"}}]}`,
			want: `{"spec":{"resourceAttributes":{"name":"machines.cluster.hypershift.openshift.io","verb":"get","group":"apiextensions.k8s.io","resource":"customresourcedefinitions"}},"rules":[{"resourceAttributes":{"group":"cluster.x-k8s.io"}}]}`,
		},
		{
			name: "resource attributes: a group, and a name of another resource",
			in:   `{"spec":{"resourceAttributes":{"name":"machines.cluster.x-k8s.io","group":"cluster.x-k8s.io","resource":"machines"}}}`,
			want: `{"spec":{"resourceAttributes":{"name":"machines.cluster.x-k8s.io","group":"cluster.hypershift.openshift.io","resource":"machines"}}}`,
		},
		{
			name: "resource attributes: wildcards",
			in:   `{"spec":{"resourceAttributes":{"name":"machines.cluster.x-k8s.io","group":"*","resource":"*"}}}`,
			want: `{"spec":{"resourceAttributes":{"name":"machines.cluster.hypershift.openshift.io","group":"*","resource":"*"}}}`,
		},
		{
			name: "resource attributes of unexpected types",
			in:   `{"spec":{"resourceAttributes":{"name":"machines.cluster.x-k8s.io","group":["apiextensions.k8s.io"],"resource":"*"}}}`,
			want: `{"spec":{"resourceAttributes":{"name":"machines.cluster.x-k8s.io","group":["apiextensions.k8s.io"],"resource":"*"}}}`,
		},
		{
			name: "values of quota maps and keys elsewhere are not translated",
			in:   `{"spec":{"hard":{"x":"count/machines.cluster.x-k8s.io"},"scopes":["count/machines.cluster.x-k8s.io"]},"metadata":{"labels":{"count/machines.cluster.x-k8s.io":"a"}}}`,
			want: `{"spec":{"hard":{"x":"count/machines.cluster.x-k8s.io"},"scopes":["count/machines.cluster.x-k8s.io"]},"metadata":{"labels":{"count/machines.cluster.x-k8s.io":"a"}}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// And back, byte for byte, where the input had no escapes to normalize.
			checkRewrite(t, ruleAndQuotaPaths, tc.in, tc.want, !strings.Contains(tc.in, `\`))
		})
	}
}

func TestPathsKeysAndRuleSpecs(t *testing.T) {
	n := Paths("spec.hard{key}=quotaResource", "a.b[]{}{key}=group", "rules[]=rule")
	if got := n.Fields["spec"].Fields["hard"]; got.Keys != QuotaResourceValue || got.Value != NoValue {
		t.Errorf("spec.hard: %+v", got)
	}
	if got := n.Fields["a"].Fields["b"].Items.Values; got.Keys != GroupValue {
		t.Errorf("a.b[]{}: %+v", got)
	}
	if got := n.Fields["rules"].Items; got.Value != RuleValue || got.Fields["apiGroups"].Items.Value != GroupValue || got.Fields["resourceNames"] != nil {
		t.Errorf("rules[]: %+v", got)
	}
	for _, bad := range []string{"spec.hard{key}.x=group", "spec.hard{key}=rule", "spec.hard{key}=objectMeta", "spec.hard{ke}=group", "x=nope"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Paths(%q) did not panic", bad)
				}
			}()
			Paths(bad)
		}()
	}
}

func TestDirectionPointer(t *testing.T) {
	for _, tc := range []struct {
		d             Direction
		in, want      string
		wantNodeValue ValueKind
		wantNil       bool
	}{
		{ToPrivate, "/spec/hard/count~1machines.cluster.x-k8s.io", "/spec/hard/count~1machines.cluster.hypershift.openshift.io", NoValue, true},
		{ToUpstream, "/status/used/count~1machines.cluster.hypershift.openshift.io", "/status/used/count~1machines.cluster.x-k8s.io", NoValue, true},
		{ToPrivate, "/spec/hard/pods", "/spec/hard/pods", NoValue, true},
		{ToPrivate, "/spec/hard", "/spec/hard", NoValue, false},
		{ToPrivate, "/metadata/labels/count~1machines.cluster.x-k8s.io", "/metadata/labels/count~1machines.cluster.x-k8s.io", NoValue, true},
		{ToPrivate, "/rules/0/apiGroups/-", "/rules/0/apiGroups/-", GroupValue, false},
		{ToPrivate, "/rules/0", "/rules/0", RuleValue, false},
		{ToPrivate, "/apiVersion", "/apiVersion", APIVersionValue, false},
		{ToPrivate, "", "", NoValue, false},
		{ToPrivate, "spec/hard", "spec/hard", NoValue, true},
		// The library drops what precedes the first "/": this is /spec/hard/<key>.
		{ToPrivate, "x/spec/hard/count~1machines.cluster.x-k8s.io", "x/spec/hard/count~1machines.cluster.hypershift.openshift.io", NoValue, true},
		{ToPrivate, "/spec/hard/count~1machines.cluster.x-k8s.io/-1", "/spec/hard/count~1machines.cluster.hypershift.openshift.io/-1", NoValue, true},
		{ToPrivate, "/rules/-1/apiGroups/+0", "/rules/-1/apiGroups/+0", GroupValue, false},
	} {
		got, n := tc.d.Pointer(ruleAndQuotaPaths, tc.in)
		if got != tc.want {
			t.Errorf("%s.Pointer(%q) = %q, want %q", tc.d, tc.in, got, tc.want)
		}
		if (n == nil) != tc.wantNil || (n != nil && n.Value != tc.wantNodeValue) {
			t.Errorf("%s.Pointer(%q) node = %+v", tc.d, tc.in, n)
		}
	}
}

// FuzzRewriteRulesAndKeys checks, on arbitrary JSON, that Rewrite agrees with its decoded twin JSON, and
// that a document naming no private group comes back from ToPrivate then ToUpstream as it was, byte for
// byte, unless escapes were normalized.
func FuzzRewriteRulesAndKeys(f *testing.F) {
	for _, seed := range []string{
		`{"rules":[{"apiGroups":["apiextensions.k8s.io","cluster.x-k8s.io"],"resources":["*"],"resourceNames":["machines.cluster.x-k8s.io"]}]}`,
		`{"spec":{"hard":{"count/machines.cluster.x-k8s.io":"1","count/machinesets.cluster.x-k8s.io":"1"}}}`,
		`{"spec":{"hard":{"count/machines.cluster.x-k8s.io":"1","count/machines.cluster.hypershift.openshift.io":"2"}}}`,
		`{"webhooks":[{"rules":[{"apiGroups":["cluster.x-k8s.io"]}]}],"apiVersion":"cluster.x-k8s.io/v1beta2"}`,
		`{"spec":{"resourceAttributes":{"group":"apiextensions.k8s.io","resource":"customresourcedefinitions","name":"machines.cluster.x-k8s.io"}}}`,
		`[]`, `{}`, `"x"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The one-pass rewrite of the value data begins with fails as Scan fails, or ends where Scan
		// ends and writes what the rewrite of the valid value writes.
		value := data[skipSpace(data, 0):]
		scanEnd, scanErr := Scan(value, 0)
		onePass, end, err := ToPrivate.AppendRewriteTypeMetaFirst(nil, ruleAndQuotaPaths, value)
		switch {
		case errors.Is(err, ErrTypeMetaRepeated):
		case scanErr != nil:
			if err == nil || err.Error() != scanErr.Error() {
				t.Fatalf("AppendRewriteTypeMetaFirst(%q): %v; Scan: %v", value, err, scanErr)
			}
		default:
			want, werr := ToPrivate.AppendRewriteValidTypeMetaFirst(nil, ruleAndQuotaPaths, value[:scanEnd])
			if err != nil || end != scanEnd || string(onePass) != string(want) {
				t.Fatalf("AppendRewriteTypeMetaFirst(%q) = %q, %d, %v; Scan: %d; the rewrite of the valid value: %q, %v", value, onePass, end, err, scanEnd, want, werr)
			}
		}

		out, err := ToPrivate.Rewrite(ruleAndQuotaPaths, data)
		if err != nil {
			if json.Valid(data) {
				t.Fatalf("Rewrite(%q): %v", data, err)
			}
			return
		}
		viaRewrite, err := decode(out)
		if err != nil {
			t.Fatalf("Rewrite(%q) = %q: %v", data, out, err)
		}
		viaJSON, _ := decode(data)
		// A key translated onto another key of the same map: the twins may keep different duplicates.
		if !strings.Contains(string(data), "hypershift") && !reflect.DeepEqual(viaRewrite, ToPrivate.JSON(ruleAndQuotaPaths, viaJSON)) {
			t.Errorf("Rewrite and JSON disagree on %q", data)
		}
		if strings.Contains(string(data), "hypershift") || strings.Contains(string(data), `\`) || !utf8.Valid(data) {
			// Escapes and invalid UTF-8 of translated strings are written in kube-apiserver's form.
			return
		}
		back, err := ToUpstream.Rewrite(ruleAndQuotaPaths, out)
		if err != nil || string(back) != string(data) {
			t.Errorf("round trip of %q: %q, %v", data, back, err)
		}
	})
}

// decode decodes a JSON document, numbers as json.Number (any number json.Valid accepts).
func decode(data []byte) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	err := dec.Decode(&v)
	return v, err
}
