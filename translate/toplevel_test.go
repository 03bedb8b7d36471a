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
