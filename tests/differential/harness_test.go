package differential

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// The namespaces of the two sides. Each appears in bodies, paths and messages only where the side's own
// namespace does, and is normalised to nsPlaceholder; cluster-scoped objects carry it in their names.
const (
	nsDirect      = "differential-direct"
	nsProxied     = "differential-proxied"
	nsPlaceholder = "@NS@"
	// userAgent is sent on both sides, so that managedFields name the same manager.
	userAgent = "differential-test/v0.0.0"
)

// side is one way to the apiserver: straight (direct) or through the proxy.
type side struct {
	name string
	base string
	ns   string
	hc   *http.Client
}

var (
	sidesOnce sync.Once
	sides     [2]*side
	sidesErr  error
)

// theSides returns the direct and the proxied side, both as the admin, creating their namespaces once.
func theSides(t *testing.T) [2]*side {
	t.Helper()
	sidesOnce.Do(func() {
		mk := func(name, ns string, cfg *rest.Config) *side {
			hc, err := rest.HTTPClientFor(cfg)
			if err != nil {
				sidesErr = err
			}
			return &side{name: name, base: cfg.Host, ns: ns, hc: hc}
		}
		sides = [2]*side{
			mk("direct", nsDirect, env.DirectConfig(env.AdminToken)),
			mk("proxied", nsProxied, proxy.Config(env.AdminToken)),
		}
		c, err := env.AdminClient()
		if err != nil {
			sidesErr = err
			return
		}
		for _, ns := range []string{nsDirect, nsProxied} {
			if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
				sidesErr = err
			}
		}
	})
	if sidesErr != nil {
		t.Fatal(sidesErr)
	}
	return sides
}

// exchange is one answer.
type exchange struct {
	status int
	header http.Header
	body   []byte
}

// request is a scripted request. Path, body and header values are templates: nsPlaceholder stands for the
// side's namespace, and "@RV:<key>@" / "@UID:<key>@" for the resourceVersion and uid the side last saw for
// the object <key> (see state).
type request struct {
	method, path, body string
	header             []string
}

// state remembers, per side, the resourceVersion and uid of the objects a script wrote, by key, and every
// volatile value the side's answers carried.
type state struct {
	mu       sync.Mutex
	rv       [2]map[string]string
	uid      [2]map[string]string
	volatile [2]volatiles
}

func newState() *state {
	return &state{rv: [2]map[string]string{{}, {}}, uid: [2]map[string]string{{}, {}}, volatile: [2]volatiles{{}, {}}}
}

// known returns the volatile values side i's answers carried so far.
func (st *state) known(i int) volatiles {
	if st == nil {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	out := volatiles{}
	for k, v := range st.volatile[i] {
		out[k] = v
	}
	return out
}

var placeholderRE = regexp.MustCompile(`@(RV|UID):([^@]*)@`)

func (st *state) expand(i int, s *side, tmpl string) string {
	tmpl = strings.ReplaceAll(tmpl, nsPlaceholder, s.ns)
	if st == nil {
		return tmpl
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return placeholderRE.ReplaceAllStringFunc(tmpl, func(m string) string {
		sub := placeholderRE.FindStringSubmatch(m)
		if sub[1] == "RV" {
			return st.rv[i][sub[2]]
		}
		return st.uid[i][sub[2]]
	})
}

// record notes the resourceVersion and uid of the object an answer carries under key (unless empty), and
// its volatile values.
func (st *state) record(i int, key string, ex exchange) {
	if st == nil || ex.status >= 300 {
		return
	}
	var obj struct {
		Kind     string `json:"kind"`
		Metadata struct {
			UID               string `json:"uid"`
			ResourceVersion   string `json:"resourceVersion"`
			CreationTimestamp string `json:"creationTimestamp"`
		} `json:"metadata"`
	}
	if json.Unmarshal(ex.body, &obj) != nil || obj.Kind == "Status" || obj.Metadata.UID == "" {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if key != "" {
		st.rv[i][key], st.uid[i][key] = obj.Metadata.ResourceVersion, obj.Metadata.UID
	}
	m := obj.Metadata
	st.volatile[i][rvPrefix+m.ResourceVersion] = "@RV@"
	st.volatile[i][m.UID] = "@UID@"
	if m.CreationTimestamp != "" {
		st.volatile[i][m.CreationTimestamp] = "@TIME@"
	}
}

// requestTimeout bounds one request and the reading of its answer.
const requestTimeout = 2 * time.Minute

// send sends the request as expanded for side i.
func send(t *testing.T, st *state, i int, s *side, r request) exchange {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(st.expand(i, s, r.body))
	}
	// No answer of the apiserver's takes long; a request that does not end is a defect to name, not to wait
	// for until the package's timeout.
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.method, s.base+st.expand(i, s, r.path), body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", userAgent)
	for _, h := range r.header {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), st.expand(i, s, strings.TrimSpace(v)))
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		// The apiserver resets the stream when a handler panics (kube-apiserver v1.34 does on a protobuf
		// body for a custom resource, and in JSON patch on some operations): an outcome to compare too,
		// without the error's addresses and stream numbers.
		what := "transport error"
		if strings.Contains(err.Error(), "INTERNAL_ERROR") {
			what += ": stream reset with INTERNAL_ERROR"
		}
		t.Logf("%s: %s %s: %v", s.name, r.method, r.path, err)
		return exchange{status: 0, header: http.Header{}, body: []byte(what)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: %s %s: reading the body: %v", s.name, r.method, r.path, err)
	}
	return exchange{status: resp.StatusCode, header: resp.Header, body: data}
}

// pair sends r directly and through the proxy, records the object's state under key (see record),
// compares the answers as the case named what, and returns them (direct first).
func pair(t *testing.T, st *state, what, key string, r request) [2]exchange {
	t.Helper()
	s := theSides(t)
	var out [2]exchange
	for i := range s {
		out[i] = send(t, st, i, s[i], r)
		st.record(i, key, out[i])
	}
	compare(t, st, what, r, out)
	return out
}

// ignoredHeaders differ between any two answers of the apiserver.
var ignoredHeaders = map[string]bool{"Date": true, "Audit-Id": true, "Content-Length": true}

// compare fails the test (or, for a case of knownProxyDefects, logs) unless the two answers are equal
// after normalisation.
func compare(t *testing.T, st *state, what string, r request, ex [2]exchange) {
	t.Helper()
	s := theSides(t)
	var hdr [2]string
	var body [2]string
	for i := range ex {
		hdr[i], body[i] = normalise(s[i], ex[i], st.known(i))
	}
	var diffs []string
	if ex[0].status != ex[1].status {
		diffs = append(diffs, fmt.Sprintf("status: direct %d, proxied %d", ex[0].status, ex[1].status))
	}
	if hdr[0] != hdr[1] {
		diffs = append(diffs, "headers (-direct +proxied):\n"+cmp.Diff(strings.Split(hdr[0], "\n"), strings.Split(hdr[1], "\n")))
	}
	if body[0] != body[1] && !sameInvalidUpToOrder(body[0], body[1]) {
		diffs = append(diffs, "body: "+bodyDiff(body[0], body[1]))
	}
	if dir := os.Getenv("DIFFERENTIAL_DUMP"); dir != "" && len(diffs) > 0 {
		// The raw answers, for a closer look: <dir>/<case>.{direct,proxied}.
		base := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(what))
		_ = os.WriteFile(base+".direct", ex[0].body, 0o644)
		_ = os.WriteFile(base+".proxied", ex[1].body, 0o644)
	}
	pattern, known := knownDefect(what, len(diffs) > 0)
	switch {
	case len(diffs) == 0:
	case known:
		t.Logf("KNOWN PROXY DEFECT %s (%s: %s): %s %s:\n%s\nrequest body: %s", what, pattern, knownProxyDefects[pattern], r.method, r.path,
			strings.Join(diffs, "\n"), truncate(r.body, 2000))
	default:
		t.Errorf("%s: %s %s: the proxy's answer differs from the apiserver's:\n%s\nrequest body: %s", what, r.method, r.path,
			strings.Join(diffs, "\n"), truncate(r.body, 2000))
	}
}

// defectStats counts, per pattern of knownProxyDefects, the cases it matched and how many of them differed.
var defectStats = struct {
	sync.Mutex
	ran, differed map[string]int
}{ran: map[string]int{}, differed: map[string]int{}}

// knownDefect returns the pattern of knownProxyDefects (path.Match syntax) that what matches, and counts
// the case.
func knownDefect(what string, differs bool) (string, bool) {
	for pattern := range knownProxyDefects {
		if ok, _ := path.Match(pattern, what); ok {
			defectStats.Lock()
			defer defectStats.Unlock()
			defectStats.ran[pattern]++
			if differs {
				defectStats.differed[pattern]++
			}
			return pattern, true
		}
	}
	return "", false
}

// checkKnownDefects fails for every pattern of knownProxyDefects whose cases all ran equal: the defect is
// fixed and its entry must go.
func checkKnownDefects(t *testing.T) {
	defectStats.Lock()
	defer defectStats.Unlock()
	for pattern, n := range defectStats.ran {
		if defectStats.differed[pattern] == 0 {
			t.Errorf("knownProxyDefects[%q]: all %d cases it matches now answer as the apiserver: remove the entry", pattern, n)
		}
	}
}

// bodyDiff describes how two normalised bodies differ: a structural diff when both are JSON documents, and
// where the bytes first differ.
func bodyDiff(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	out := fmt.Sprintf("bytes differ from offset %d:\ndirect:  %s\nproxied: %s", i, excerpt(a, i), excerpt(b, i))
	if ca, okA := canonicalStatus(a); okA {
		if cb, okB := canonicalStatus(b); okB {
			if ca == cb {
				return out + "\nthe same causes up to their order (which the apiserver does not keep), but the encoding differs: " + byteCounts(a, b)
			}
			// Compare with the causes sorted, so that the diff shows what differs beyond their order.
			a, b = ca, cb
		}
	}
	var va, vb any
	if json.Unmarshal([]byte(a), &va) == nil && json.Unmarshal([]byte(b), &vb) == nil {
		if d := cmp.Diff(va, vb); d != "" {
			out += "\nstructurally (-direct +proxied):\n" + d
		} else {
			out += "\n(structurally equal: the encoding differs)"
		}
	}
	return out
}

func excerpt(s string, i int) string {
	from, to := max(0, i-200), min(len(s), i+200)
	return fmt.Sprintf("%q", s[from:to])
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// normalise returns the answer's client-visible headers (one "Name: value" line each, sorted, ignored
// ones left out) and body with every volatile value replaced by a placeholder: the side's namespace name,
// and, wherever the body's documents carry them, metadata.uid, metadata.resourceVersion,
// metadata.creationTimestamp, metadata.deletionTimestamp, managedFields times, a list's continue token,
// a generated name's suffix, Status details.uid and the age cells of a Table. Values are replaced where
// they occur as text, so that the bytes around them are compared as they came.
//
// known holds volatile values of the side seen before (the uids, resourceVersions and creation times of
// the objects a script wrote), replaced too: messages quote whole objects (a failed JSON patch test).
func normalise(s *side, ex exchange, known volatiles) (string, string) {
	var lines []string
	for k, vs := range ex.header {
		if ignoredHeaders[k] {
			continue
		}
		lines = append(lines, k+": "+strings.ReplaceAll(strings.Join(vs, "\n  "), s.ns, nsPlaceholder))
	}
	sort.Strings(lines)

	body := string(ex.body)
	var doc any
	data := ex.body
	if ct := ex.header.Get("Content-Type"); strings.HasPrefix(ct, "application/yaml") {
		if js, err := yaml.YAMLToJSON(data); err == nil {
			data = js
		}
	}
	v := volatiles{}
	for k, p := range known {
		v[k] = p
	}
	if json.Unmarshal(data, &doc) == nil {
		v.collect(doc, "")
	}
	yamlBody := strings.HasPrefix(ex.header.Get("Content-Type"), "application/yaml")
	for _, old := range v.sorted() {
		if short, ok := strings.CutPrefix(old, rvPrefix); ok {
			body = replaceQuoted(body, short, v[old])
			if yamlBody {
				// YAML writes a plain scalar unquoted: a Table's age cell is a sequence item ("- 1s").
				body = strings.ReplaceAll(body, "- "+short+"\n", "- "+v[old]+"\n")
			}
			continue
		}
		body = strings.ReplaceAll(body, old, v[old])
	}
	body = typedPatchErrors.ReplaceAllString(body, "${1}@TYPED-PATCH-ERRORS@\"")
	return strings.Join(lines, "\n"), strings.ReplaceAll(body, s.ns, nsPlaceholder)
}

// typedPatchErrors matches the errors server-side apply lists when it cannot make a typed object of a
// patch: kube-apiserver v1.34 (structured-merge-diff) reports a different subset of them from one request to
// the next (duplicate keys of a list-map beside unknown fields), so only the message's head is compared.
var typedPatchErrors = regexp.MustCompile(`("message":"failed to create typed patch object \([^)]*\): )(?:[^"\\]|\\.)*"`)

// rvPrefix marks a key of volatiles that is replaced only where it is a whole JSON string, however deeply
// escaped (replaceQuoted).
const rvPrefix = "\x00quoted:"

// replaceQuoted replaces s by placeholder where it is a whole string: between quotes, each preceded by
// the same run of backslashes (a message quoting a document that quotes another).
func replaceQuoted(body, s, placeholder string) string {
	re := regexp.MustCompile(`(\\*")` + regexp.QuoteMeta(s) + `(\\*")`)
	return re.ReplaceAllStringFunc(body, func(m string) string {
		sub := re.FindStringSubmatch(m)
		if len(sub[1]) != len(sub[2]) {
			return m
		}
		return sub[1] + placeholder + sub[2]
	})
}

// volatiles maps a volatile text of a body to its placeholder.
type volatiles map[string]string

// sorted returns the texts longest first, so that no replacement cuts into a longer one.
func (v volatiles) sorted() []string {
	out := make([]string, 0, len(v))
	for k := range v {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] < out[j]
	})
	return out
}

func (v volatiles) add(s any, placeholder string, quoted bool) {
	str, ok := s.(string)
	if !ok || str == "" {
		return
	}
	if quoted {
		// Short values (resourceVersions, ages) are replaced only as whole strings (see replaceQuoted).
		v[rvPrefix+str] = placeholder
		return
	}
	v[str] = placeholder
}

func (v volatiles) collect(doc any, key string) {
	switch d := doc.(type) {
	case map[string]any:
		if key == "metadata" {
			v.add(d["uid"], "@UID@", false)
			v.add(d["resourceVersion"], "@RV@", true)
			v.add(d["creationTimestamp"], "@TIME@", false)
			v.add(d["deletionTimestamp"], "@TIME@", false)
			v.add(d["continue"], "@CONTINUE@", false)
			if gen, _ := d["generateName"].(string); gen != "" {
				if name, _ := d["name"].(string); strings.HasPrefix(name, gen) && name != gen {
					v[name] = gen + "@GEN@"
				}
			}
			if mf, ok := d["managedFields"].([]any); ok {
				for _, e := range mf {
					if e, ok := e.(map[string]any); ok {
						v.add(e["time"], "@TIME@", false)
					}
				}
			}
		}
		if d["kind"] == "Status" {
			if det, ok := d["details"].(map[string]any); ok {
				v.add(det["uid"], "@UID@", false)
			}
		}
		if d["kind"] == "Table" {
			v.collectAges(d)
		}
		for k, e := range d {
			v.collect(e, k)
		}
	case []any:
		for _, e := range d {
			v.collect(e, key)
		}
	}
}

// collectAges adds the cells of a Table's date columns (printed as ages, "3s").
func (v volatiles) collectAges(table map[string]any) {
	cols, _ := table["columnDefinitions"].([]any)
	var dates []int
	for i, c := range cols {
		if c, ok := c.(map[string]any); ok && (c["type"] == "date" || c["format"] == "date") {
			dates = append(dates, i)
		}
	}
	rows, _ := table["rows"].([]any)
	for _, r := range rows {
		r, _ := r.(map[string]any)
		cells, _ := r["cells"].([]any)
		for _, i := range dates {
			if i < len(cells) {
				v.add(cells[i], "@AGE@", true)
			}
		}
	}
}

// mustJSON encodes v.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// decodeJSON decodes a JSON document keeping numbers as written.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// sameInvalidUpToOrder reports whether two normalised bodies are Status answers that differ only in the
// order of their causes (and of the same errors in the message, "... is invalid: [a, b]"): the apiserver
// validates custom resources in map order (k8s.io/kube-openapi/pkg/validation/validate ranges over the
// schema's properties), so the order differs between any two requests. The bytes must still be a
// permutation of each other, so that an encoding difference (escaping, spacing) is not hidden.
func sameInvalidUpToOrder(a, b string) bool {
	if len(a) != len(b) || sortedBytes(a) != sortedBytes(b) {
		return false
	}
	ca, okA := canonicalStatus(a)
	cb, okB := canonicalStatus(b)
	return okA && okB && ca == cb
}

func sortedBytes(s string) string {
	b := []byte(s)
	sort.Slice(b, func(i, j int) bool { return b[i] < b[j] })
	return string(b)
}

// canonicalStatus re-encodes a Status with its causes, and the errors its message lists, sorted: the
// message of an Invalid answer lists its causes' errors, each once ("... is invalid: [a, b]", by
// k8s.io/apimachinery's aggregate, which drops repeated messages), and server-side apply's "failed to
// create typed patch object (...): errors:" lists its errors a line each.
func canonicalStatus(body string) (string, bool) {
	var st metav1.Status
	if json.Unmarshal([]byte(body), &st) != nil || st.Kind != "Status" {
		return "", false
	}
	changed := false
	if head, lines, ok := strings.Cut(st.Message, "errors:\n"); ok {
		l := strings.Split(lines, "\n")
		sort.Strings(l)
		st.Message, changed = head+"errors:\n"+strings.Join(l, "\n"), true
	}
	if st.Details != nil && len(st.Details.Causes) > 1 {
		causes := st.Details.Causes
		var elems []string
		seen := map[string]bool{}
		for _, c := range causes {
			if e := c.Field + ": " + c.Message; !seen[e] {
				seen[e] = true
				elems = append(elems, e)
			}
		}
		if prefix, ok := strings.CutSuffix(st.Message, "["+strings.Join(elems, ", ")+"]"); ok {
			sort.Strings(elems)
			st.Message = prefix + "[" + strings.Join(elems, ", ") + "]"
		}
		sort.SliceStable(causes, func(i, j int) bool {
			if causes[i].Field != causes[j].Field {
				return causes[i].Field < causes[j].Field
			}
			return causes[i].Message < causes[j].Message
		})
		changed = true
	}
	if !changed {
		return "", false
	}
	out, err := json.Marshal(st)
	return string(out), err == nil
}

// byteCounts lists the bytes that occur a different number of times in a and b.
func byteCounts(a, b string) string {
	var na, nb [256]int
	for i := 0; i < len(a); i++ {
		na[a[i]]++
	}
	for i := 0; i < len(b); i++ {
		nb[b[i]]++
	}
	var out []string
	for c := range na {
		if na[c] != nb[c] {
			out = append(out, fmt.Sprintf("%q: direct %d, proxied %d", rune(c), na[c], nb[c]))
		}
	}
	return strings.Join(out, "; ")
}
