package framework

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// DoRequestInput is a raw HTTP request, to the proxy or straight to the apiserver.
type DoRequestInput struct {
	// Client sends it (rest.HTTPClientFor of a Proxy.Config or an Env.DirectConfig: TLS and token).
	Client *http.Client
	// URL is the server's base URL (Proxy.URL, Env.APIServerURL); Path is appended, query included.
	URL, Path string
	Method    string
	// Body is sent as it is; "" sends none.
	Body string
	// Header holds "Name: value" lines ("Accept: application/yaml").
	Header []string
}

// DoRequest sends the request and returns the response and its whole body. It fails the test on a
// transport error only: every status is the caller's to judge (ExpectAnswer).
func DoRequest(ctx context.Context, t testing.TB, in DoRequestInput) (*http.Response, []byte) {
	t.Helper()
	var body io.Reader
	if in.Body != "" {
		body = strings.NewReader(in.Body)
	}
	req, err := http.NewRequestWithContext(ctx, in.Method, in.URL+in.Path, body)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range in.Header {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := in.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", in.Method, in.Path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", in.Method, in.Path, err)
	}
	return resp, data
}

// ExpectAnswerInput is an answer and what its client must see of it. Zero fields are not checked.
type ExpectAnswerInput struct {
	// What names the request in failures ("DELETE crds?labelSelector=...").
	What string
	// Code and Body are the answer's status code and body; ContentType its Content-Type, which says
	// whether it is YAML (ItemNames).
	Code        int
	Body        []byte
	ContentType string

	// WantCode is the status code the client must see.
	WantCode int
	// WantMentions is a string the body must hold (a name a Status message names).
	WantMentions string
	// WantItems, when not nil, are the answer's item names, sorted; empty: it lists nothing.
	WantItems []string
	// WantItemsInclude are names the answer's items must include.
	WantItemsInclude []string
	// WantNoItemContaining is a string no item name may hold ("hypershift": no private CRD shows).
	WantNoItemContaining string
}

// ExpectAnswer fails the test (t.Errorf) for every way the answer differs from what is wanted.
func ExpectAnswer(t testing.TB, in ExpectAnswerInput) {
	t.Helper()
	if in.WantCode != 0 && in.Code != in.WantCode {
		t.Errorf("%s: %d %s, want %d", in.What, in.Code, in.Body, in.WantCode)
		return
	}
	if in.WantMentions != "" && !strings.Contains(string(in.Body), in.WantMentions) {
		t.Errorf("%s: %d %s, want it to name %s", in.What, in.Code, in.Body, in.WantMentions)
	}
	if in.WantItems == nil && in.WantItemsInclude == nil && in.WantNoItemContaining == "" {
		return
	}
	got := ItemNames(t, in.ContentType, in.Body)
	if in.WantItems != nil && strings.Join(got, ",") != strings.Join(in.WantItems, ",") {
		t.Errorf("%s: items %v, want %v", in.What, got, in.WantItems)
	}
	for _, name := range in.WantItemsInclude {
		if !slices.Contains(got, name) {
			t.Errorf("%s: items %v lack %s", in.What, got, name)
		}
	}
	for _, name := range got {
		if in.WantNoItemContaining != "" && strings.Contains(name, in.WantNoItemContaining) {
			t.Errorf("%s: items show %s", in.What, name)
		}
	}
}

// ItemNames returns the sorted names an answer lists, in JSON or (a Content-Type of application/yaml)
// YAML: the rows' first cells of a meta.k8s.io Table (kind Table; the apiserver answers an Accept of
// as=Table with Content-Type application/json), else the items' metadata.name.
func ItemNames(t testing.TB, contentType string, data []byte) []string {
	t.Helper()
	if strings.HasPrefix(contentType, "application/yaml") {
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			t.Fatalf("decoding the YAML %s: %v", data, err)
		}
		data = j
	}
	var kind struct{ Kind string }
	if err := json.Unmarshal(data, &kind); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	if kind.Kind == "Table" {
		return TableNames(t, data)
	}
	return ListNames(t, data)
}

// ListNames returns the sorted names of a JSON list's items.
func ListNames(t testing.TB, data []byte) []string {
	t.Helper()
	var l struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(data, &l); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	names := []string{}
	for _, item := range l.Items {
		names = append(names, item.Metadata.Name)
	}
	sort.Strings(names)
	return names
}

// TableNames returns the sorted first cells (the names) of the rows of a meta.k8s.io Table in JSON.
func TableNames(t testing.TB, data []byte) []string {
	t.Helper()
	var table struct {
		Rows []struct {
			Cells []any `json:"cells"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(data, &table); err != nil {
		t.Fatalf("decoding the Table %s: %v", data, err)
	}
	names := []string{}
	for _, r := range table.Rows {
		name, _ := r.Cells[0].(string)
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
