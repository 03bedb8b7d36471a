package translate

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestRewriteKeepsEveryOtherByte(t *testing.T) {
	n := Paths("apiVersion=apiVersion", "metadata=objectMeta", "spec.infrastructureRef.apiGroup=group",
		"spec.workers[].ref.apiVersion=apiVersion", "spec.byName{}.apiGroup=group", "spec.groups[]=group")
	for _, tc := range []struct{ name, in, want string }{
		{
			name: "order, spacing, numbers and escapes survive",
			in: `{"kind":"Machine", "apiVersion" : "cluster.x-k8s.io/v1beta2","spec":{"replicas":1.50e3,"zero":0,"empty":"","nil":null,` +
				`"infrastructureRef":{"name":"a\u003cb","apiGroup":"infrastructure.cluster.x-k8s.io"}},` +
				`"metadata":{"annotations":{"cluster.x-k8s.io/cloned-from-groupkind":"M.infrastructure.cluster.x-k8s.io","x":"<&>"}}}`,
			want: `{"kind":"Machine", "apiVersion" : "cluster.hypershift.openshift.io/v1beta2","spec":{"replicas":1.50e3,"zero":0,"empty":"","nil":null,` +
				`"infrastructureRef":{"name":"a\u003cb","apiGroup":"infrastructure.cluster.hypershift.openshift.io"}},` +
				`"metadata":{"annotations":{"cluster.x-k8s.io/cloned-from-groupkind":"M.infrastructure.cluster.hypershift.openshift.io","x":"<&>"}}}`,
		},
		{
			name: "arrays, maps and string arrays",
			in:   "{\n  \"spec\": {\"workers\": [ {\"ref\": {\"apiVersion\": \"bootstrap.cluster.x-k8s.io/v1beta2\"}}, {} ],\n  \"byName\": {\"a\": {\"apiGroup\": \"ipam.cluster.x-k8s.io\"}}, \"groups\": [\"cluster.x-k8s.io\", \"apps\"]}\n}\n",
			want: "{\n  \"spec\": {\"workers\": [ {\"ref\": {\"apiVersion\": \"bootstrap.cluster.hypershift.openshift.io/v1beta2\"}}, {} ],\n  \"byName\": {\"a\": {\"apiGroup\": \"ipam.cluster.hypershift.openshift.io\"}}, \"groups\": [\"cluster.hypershift.openshift.io\", \"apps\"]}\n}\n",
		},
		{
			name: "escaped keys and values are decoded before matching",
			in:   `{"api\u0056ersion":"cluster.x-k8s.io\/v1beta2","metadata":{"ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2"}]}}`,
			want: `{"api\u0056ersion":"cluster.hypershift.openshift.io/v1beta2","metadata":{"ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2"}]}}`,
		},
		{
			name: "values of unexpected types and paths outside the tree are left alone",
			in:   `{"apiVersion":7,"spec":{"infrastructureRef":["cluster.x-k8s.io"],"other":{"apiGroup":"cluster.x-k8s.io"}},"metadata":null}`,
			want: `{"apiVersion":7,"spec":{"infrastructureRef":["cluster.x-k8s.io"],"other":{"apiGroup":"cluster.x-k8s.io"}},"metadata":null}`,
		},
		{name: "a scalar document", in: ` "x" `, want: ` "x" `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkRewrite(t, n, tc.in, tc.want, tc.name != "escaped keys and values are decoded before matching")
		})
	}
}

// checkRewrite fails unless Rewrite translates in to want along n, agrees with its decoded twin
// Direction.JSON, and (with roundTrip) translates want back to in byte for byte.
func checkRewrite(t *testing.T, n *Node, in, want string, roundTrip bool) {
	t.Helper()
	got, err := ToPrivate.Rewrite(n, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	var viaRewrite, viaJSON any
	if err := json.Unmarshal(got, &viaRewrite); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(in), &viaJSON); err != nil {
		t.Fatal(err)
	}
	if viaJSON = ToPrivate.JSON(n, viaJSON); !reflect.DeepEqual(viaRewrite, viaJSON) {
		t.Errorf("Rewrite and JSON disagree:\n%v\n%v", viaRewrite, viaJSON)
	}
	// AppendRewriteValid writes the same bytes after what the buffer held.
	prefix := "[previous items],"
	appended, err := ToPrivate.AppendRewriteValid([]byte(prefix), n, []byte(in))
	if err != nil || string(appended) != prefix+want {
		t.Errorf("AppendRewriteValid: %s, %v", appended, err)
	}
	back, err := ToUpstream.Rewrite(n, got)
	if err != nil {
		t.Fatal(err)
	}
	if roundTrip && string(back) != in {
		t.Errorf("ToUpstream did not restore the input:\n%s", back)
	}
}

func TestRewriteUnchangedAndMalformed(t *testing.T) {
	n := Paths("apiVersion=apiVersion")
	in := []byte(`{"apiVersion":"apps/v1"}`)
	out, err := ToPrivate.Rewrite(n, in)
	if err != nil || &out[0] != &in[0] {
		t.Errorf("an unchanged document must come back as the same slice: %s, %v", out, err)
	}
	for _, bad := range []string{``, `{`, `{"apiVersion":}`, `{"a":1} {}`, `{"a":1}x`, `[1,]`} {
		if _, err := ToPrivate.Rewrite(n, []byte(bad)); err == nil {
			t.Errorf("Rewrite(%q) did not fail", bad)
		}
	}
}

func TestLeadingTypeMeta(t *testing.T) {
	for _, tc := range []struct {
		in               string
		apiVersion, kind string
		ok               bool
	}{
		{`{"apiVersion":"a/v1","kind":"K","metadata":{}}`, "a/v1", "K", true},
		{` { "kind" : "K" , "apiVersion" : "a/v1" } `, "a/v1", "K", true},
		{`{"apiVersion":"a/v1","metadata":{},"kind":"K"}`, "", "", false},
		{`{"apiVersion":"a/v1","apiVersion":"b/v1","kind":"K"}`, "", "", false},
		{`{"apiVersion":"a\/v1","kind":"K"}`, "", "", false},
		{`{"api\u0056ersion":"a/v1","kind":"K"}`, "", "", false},
		{`{"apiVersion":1,"kind":"K"}`, "", "", false},
		{`{"apiVersion":"a/v1"}`, "", "", false},
		{`{}`, "", "", false},
		{`[]`, "", "", false},
	} {
		apiVersion, kind, ok := LeadingTypeMeta([]byte(tc.in))
		if apiVersion != tc.apiVersion || kind != tc.kind || ok != tc.ok {
			t.Errorf("LeadingTypeMeta(%s) = %q, %q, %v; want %q, %q, %v", tc.in, apiVersion, kind, ok, tc.apiVersion, tc.kind, tc.ok)
		}
	}
}

// TestLeadingTypeMetaBytesOfAPrefix: the start of an object that a buffer ends inside is read safely,
// and what is read of it is what the whole object says.
func TestLeadingTypeMetaBytesOfAPrefix(t *testing.T) {
	for _, whole := range []string{`{"apiVersion":"a/v1","kind":"K","metadata":{}}`, ` { "kind" : "K" , "apiVersion" : "a\/v1" } `, `{"kind":"K","kind":"L"}`} {
		apiVersion, kind, ok := LeadingTypeMeta([]byte(whole))
		for n := range len(whole) {
			a, k, pok := LeadingTypeMetaBytes([]byte(whole[:n]))
			if pok && (!ok || string(a) != apiVersion || string(k) != kind) {
				t.Errorf("LeadingTypeMetaBytes(%q) = %q, %q; the whole object: %q, %q, %v", whole[:n], a, k, apiVersion, kind, ok)
			}
		}
	}
}

func TestAppendRewriteValidTypeMetaFirst(t *testing.T) {
	n := Paths("apiVersion=apiVersion", "spec.ref.apiGroup=group")
	in := `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"M","spec":{"ref":{"apiGroup":"cluster.x-k8s.io"}},"status":{"kind":"x","apiVersion":"y"}}`
	want := `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"M","spec":{"ref":{"apiGroup":"cluster.hypershift.openshift.io"}},"status":{"kind":"x","apiVersion":"y"}}`
	got, err := ToPrivate.AppendRewriteValidTypeMetaFirst([]byte("x"), n, []byte(in))
	if err != nil || string(got) != "x"+want {
		t.Errorf("got %s, %v; want x%s", got, err, want)
	}
	for _, repeated := range []string{
		`{"apiVersion":"a/v1","kind":"M","spec":{},"kind":"N"}`,
		`{"apiVersion":"a/v1","kind":"M","apiVersion":"cluster.x-k8s.io/v1beta2"}`,
		`{"apiVersion":"a/v1","kind":"M","\u006bind":"N"}`,
	} {
		got, err := ToPrivate.AppendRewriteValidTypeMetaFirst([]byte("x"), n, []byte(repeated))
		if !errors.Is(err, ErrTypeMetaRepeated) || string(got) != "x" {
			t.Errorf("%s: got %s, %v; want ErrTypeMetaRepeated and nothing appended", repeated, got, err)
		}
	}
}

// TestAppendRewriteTypeMetaFirstScans: the one-pass rewrite of a value at the start of a buffer fails
// where Scan fails, with the same error, and otherwise ends where Scan ends and writes what the rewrite
// of the valid value writes; on the corpus of TestScanAcceptsWhatEncodingJSONAccepts, which has
// truncations (ErrIncomplete) and values nested beyond the limit.
func TestAppendRewriteTypeMetaFirstScans(t *testing.T) {
	n := Paths("apiVersion=apiVersion", "metadata=objectMeta", "items[].g=group", "items[].r.apiGroup=group",
		"items[].c[]=group", "items[].a=group", "z.g=group", "a.a.a=group")
	const prefix = "[previous items],"
	var fused, failed int
	for _, d := range scanCorpus() {
		data := []byte(d)
		data = data[skipSpace(data, 0):]
		scanEnd, scanErr := Scan(data, 0)
		got, end, err := ToPrivate.AppendRewriteTypeMetaFirst([]byte(prefix), n, data)
		switch {
		case errors.Is(err, ErrTypeMetaRepeated):
			if string(got) != prefix {
				t.Errorf("%q: ErrTypeMetaRepeated, but %q appended", d, got)
			}
		case scanErr != nil:
			failed++
			if err == nil || err.Error() != scanErr.Error() || string(got) != prefix {
				t.Errorf("%q: got %q, %v; want Scan's error %v and nothing appended", d, got, err, scanErr)
			}
		case err != nil || end != scanEnd:
			t.Errorf("%q: got end %d, %v; want Scan's end %d", d, end, err, scanEnd)
		default:
			fused++
			want, werr := ToPrivate.AppendRewriteValidTypeMetaFirst([]byte(prefix), n, data[:end])
			if werr != nil || string(got) != string(want) {
				t.Errorf("%q: got %q; the rewrite of the valid value: %q, %v", d, got, want, werr)
			}
		}
	}
	if fused < 100 || failed < 10000 {
		t.Errorf("only %d documents were rewritten and %d failed", fused, failed)
	}
}

// TestGroupInIsValue: the byte-level lookup of a leaf's group, and AppendValue, agree with Value (free
// text, which may hold several names, is Value's alone).
func TestGroupInIsValue(t *testing.T) {
	values := []string{"", "/", ".", "cluster.x-k8s.io", "cluster.x-k8s.io/v1beta2", "apps/v1", "v1", "cluster.x-k8s.io/",
		"/cluster.x-k8s.io", "M.cluster.x-k8s.io", "M.", ".cluster.x-k8s.io", "machines.infrastructure.cluster.x-k8s.io",
		"count/machines.cluster.x-k8s.io", "count/pods", "count/.cluster.x-k8s.io", "f:count/machines.cluster.x-k8s.io",
		"f:count/pods", "f:machines.cluster.x-k8s.io", "requests.cpu", "a.b.cluster.x-k8s.io", "cluster.x-k8s.io.x"}
	for k := NoValue; k <= TextValue; k++ {
		for _, d := range []Direction{ToPrivate, ToUpstream} {
			for _, s := range values {
				if d.String() == ToUpstream.String() {
					s = ToPrivate.Value(k, s)
				}
				want := d.Value(k, s)
				got := s
				if from, to, group, ok := d.groupIn(k, []byte(s)); ok {
					got = s[:from] + group + s[to:]
				}
				if got != want && k != TextValue {
					t.Errorf("%s kind %d of %q: groupIn gives %q, Value %q", d, k, s, got, want)
				}
				appended, changed := d.AppendValue([]byte("x"), k, []byte(s))
				if string(appended) != "x"+want || changed != (want != s) {
					t.Errorf("%s kind %d of %q: AppendValue gives %q, %v, want %q", d, k, s, appended[1:], changed, want)
				}
			}
		}
	}
}

// TestRewriteFindsFieldsOfEveryLength: the lengths a node records of its fields (Node.child) find every
// field, short or long, of a Paths tree, and of a tree whose fields were set otherwise.
func TestRewriteFindsFieldsOfEveryLength(t *testing.T) {
	var specs []string
	in, want := "{", "{"
	for n := 1; n <= 40; n++ {
		key := strings.Repeat("k", n)
		specs = append(specs, key+"=group")
		in += `"` + key + `":"cluster.x-k8s.io","x` + key + `":"cluster.x-k8s.io",`
		want += `"` + key + `":"cluster.hypershift.openshift.io","x` + key + `":"cluster.x-k8s.io",`
	}
	in, want = in+`"z":0}`, want+`"z":0}`
	tree := Paths(specs...)
	literal := &Node{Fields: map[string]*Node{}}
	for k, c := range tree.Fields {
		literal.Fields[k] = c
	}
	added := Paths("k=group") // one field recorded, the rest set afterwards
	for k, c := range tree.Fields {
		added.Fields[k] = c
	}
	for _, n := range []*Node{tree, literal, added} {
		got, err := ToPrivate.Rewrite(n, []byte(in))
		if err != nil || string(got) != want {
			t.Errorf("got %s, %v\nwant %s", got, err, want)
		}
		got, end, err := ToPrivate.AppendRewriteTypeMetaFirst(nil, n, []byte(in))
		if err != nil || end != len(in) || string(got) != want {
			t.Errorf("in one pass: got %s, %d, %v\nwant %s", got, end, err, want)
		}
	}
}

// TestRewriteText: a text leaf has every whole name replaced, escaped or not, every other byte kept.
func TestRewriteText(t *testing.T) {
	n := Paths("status.conditions[].message=text")
	for _, tc := range []struct{ in, want string }{
		{`{"status":{"conditions":[{"type":"NamespaceContentRemaining","message":"Some resources are remaining: machines.cluster.hypershift.openshift.io has 1 resource instances, machinesets.cluster.hypershift.openshift.io has 2 resource instances"}]}}`,
			`{"status":{"conditions":[{"type":"NamespaceContentRemaining","message":"Some resources are remaining: machines.cluster.x-k8s.io has 1 resource instances, machinesets.cluster.x-k8s.io has 2 resource instances"}]}}`},
		// A finalizer's name is an upstream name already; words that only contain a name are no name.
		{`{"status":{"conditions":[{"message":"Some content in the namespace has finalizers remaining: machine.cluster.x-k8s.io in 1 resource instances"}]}}`,
			`{"status":{"conditions":[{"message":"Some content in the namespace has finalizers remaining: machine.cluster.x-k8s.io in 1 resource instances"}]}}`},
		{`{"status":{"conditions":[{"message":"x-cluster.hypershift.openshift.io and cluster.hypershift.openshift.io.example"}]}}`,
			`{"status":{"conditions":[{"message":"x-cluster.hypershift.openshift.io and cluster.hypershift.openshift.io.example"}]}}`},
		{`{"status":{"conditions":[{"message":"\u003cinfrastructure.cluster.hypershift.openshift.io/v1beta2\u003e"}]}}`,
			`{"status":{"conditions":[{"message":"\u003cinfrastructure.cluster.x-k8s.io/v1beta2\u003e"}]}}`},
		{`{"status":{"conditions":[{"reason":"cluster.hypershift.openshift.io"}]}}`, `{"status":{"conditions":[{"reason":"cluster.hypershift.openshift.io"}]}}`},
	} {
		got, err := ToUpstream.Rewrite(n, []byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("%s:\n got %s %v\nwant %s", tc.in, got, err, tc.want)
		}
	}
}
