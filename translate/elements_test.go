package translate

import "testing"

// TestSameShape: trees hold the same group-carrying values and keys, or nothing.
func TestSameShape(t *testing.T) {
	n := Paths("spec.a.apiGroup=group", "spec.b.apiGroup=group", "spec.c.apiVersion=apiVersion",
		"spec.hard{key}=quotaResource", "status.hard{key}=quotaResource", "metadata=objectMeta")
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"/spec/a", "/spec/b", true},
		{"/spec/a", "/spec/c", false},
		{"/spec/hard", "/status/hard", true},
		{"/spec/hard", "/metadata/annotations", false},
		{"/spec/hard", "/spec/none", false},
		{"/metadata/labels", "/spec/none", true},
		{"/spec/hard/pods", "/metadata/labels/x", true},
	} {
		if got := SameShape(n.Pointer(tc.a), n.Pointer(tc.b)); got != tc.want {
			t.Errorf("SameShape(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
