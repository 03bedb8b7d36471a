package translate

import (
	"reflect"
	"testing"
)

// TestTopLevelStrings: members are read as kube-apiserver's decoder reads them; values are skipped whole,
// whatever they hold.
func TestTopLevelStrings(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`{"kind":"Machine","apiVersion":"cluster.x-k8s.io/v1beta2"}`, []string{"cluster.x-k8s.io/v1beta2", "Machine"}},
		{`{"spec":{"apiVersion":"no","k":["}",{"kind":"no"}]},"s":"\"apiVersion\":\"no\"","apiVersion":"a/v1"}`, []string{"a/v1", ""}},
		{` { "api\u0056ersion" : "a/v1" , "kind" : 1 } `, []string{"a/v1", ""}},
		{`{"apiVersion":"a/v1","apiVersion":"b/v1","APIVersion":"c/v1"}`, []string{"b/v1", ""}},
		{`{"apiVersion":"a/v1","apiVersion":null}`, []string{"", ""}},
		{`["apiVersion"]`, []string{"", ""}},
		{`{}`, []string{"", ""}},
	} {
		if got := TopLevelStrings([]byte(tc.in), "apiVersion", "kind"); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("TopLevelStrings(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestEachMember: each top-level member's key is given decoded and its value's offsets exactly, whatever
// the whitespace; the walk stops when asked to.
func TestEachMember(t *testing.T) {
	in := ` { "a" : {"b":[1,"}"]} , "k\u0065y":"v" ,"n":null} `
	var got []string
	EachMember([]byte(in), func(key []byte, start, end int) bool {
		got = append(got, string(key)+"="+in[start:end])
		return true
	})
	if want := []string{`a={"b":[1,"}"]}`, `key="v"`, `n=null`}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	got = got[:0]
	EachMember([]byte(in), func(key []byte, _, _ int) bool { got = append(got, string(key)); return false })
	if want := []string{"a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("stopped: got %q, want %q", got, want)
	}
	EachMember([]byte(`[{"a":1}]`), func([]byte, int, int) bool { t.Error("an array has members"); return true })
}
