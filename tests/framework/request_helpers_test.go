package framework

import (
	"fmt"
	"testing"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errors []string
	fatal  bool
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = true
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// TestExpectAnswer: every expectation of ExpectAnswer fails when the answer differs, and only then;
// items are read from a list or a Table, in JSON or YAML.
func TestExpectAnswer(t *testing.T) {
	const (
		list  = `{"kind":"CustomResourceDefinitionList","items":[{"metadata":{"name":"b.example.com"}},{"metadata":{"name":"a.x.hypershift.io"}}]}`
		table = `{"kind":"Table","rows":[{"cells":["b.example.com","2026"]},{"cells":["a.x.hypershift.io","2026"]}]}`
		yamlL = "kind: CustomResourceDefinitionList\nitems:\n- metadata:\n    name: b.example.com\n- metadata:\n    name: a.x.hypershift.io\n"
	)
	for _, tc := range []struct {
		name     string
		in       ExpectAnswerInput
		failures int
	}{
		{"code", ExpectAnswerInput{Code: 403, Body: []byte(`{}`), WantCode: 403}, 0},
		{"wrong code", ExpectAnswerInput{Code: 200, Body: []byte(list), WantCode: 403, WantItems: []string{}}, 1},
		{"mentions", ExpectAnswerInput{Code: 403, Body: []byte(`"machines.cluster.x-k8s.io" is forbidden`), WantMentions: "machines.cluster.x-k8s.io"}, 0},
		{"does not mention", ExpectAnswerInput{Code: 403, Body: []byte(`forbidden`), WantMentions: "machines.cluster.x-k8s.io"}, 1},
		{"items of a list", ExpectAnswerInput{Code: 200, Body: []byte(list), WantItems: []string{"a.x.hypershift.io", "b.example.com"}}, 0},
		{"items of a Table", ExpectAnswerInput{Code: 200, Body: []byte(table), ContentType: "application/json", WantItems: []string{"a.x.hypershift.io", "b.example.com"}}, 0},
		{"items in YAML", ExpectAnswerInput{Code: 200, Body: []byte(yamlL), ContentType: "application/yaml", WantItems: []string{"a.x.hypershift.io", "b.example.com"}}, 0},
		{"other items", ExpectAnswerInput{Code: 200, Body: []byte(list), WantItems: []string{"b.example.com"}}, 1},
		{"items, want none", ExpectAnswerInput{Code: 200, Body: []byte(list), WantItems: []string{}}, 1},
		{"no items, want none", ExpectAnswerInput{Code: 200, Body: []byte(`{"items":[]}`), WantItems: []string{}}, 0},
		{"includes", ExpectAnswerInput{Code: 200, Body: []byte(list), WantItemsInclude: []string{"b.example.com"}}, 0},
		{"lacks", ExpectAnswerInput{Code: 200, Body: []byte(list), WantItemsInclude: []string{"c.example.com"}}, 1},
		{"an item containing", ExpectAnswerInput{Code: 200, Body: []byte(list), WantNoItemContaining: "hypershift"}, 1},
		{"no item containing", ExpectAnswerInput{Code: 200, Body: []byte(list), WantNoItemContaining: "openshift"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{}
			ExpectAnswer(r, tc.in)
			if len(r.errors) != tc.failures || r.fatal {
				t.Errorf("failures %q (fatal %v), want %d", r.errors, r.fatal, tc.failures)
			}
		})
	}
}
