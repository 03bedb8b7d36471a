package jsonpatch_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	evanphx "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/body/jsonpatch"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"

	// Every route with its typed codecs, as package body's tests load them.
	_ "github.com/openshift/hypershift-capi-proxy/zz_generated/routes/codecs"
)

var (
	table      = translate.NewTable(routes.Routes)
	translator = body.New(table)
)

// patchTarget is an object FuzzJSONPatchPointers patches, as a client of the proxy sees it (upstream
// groups) and as the backend holds it (private), with the tree the proxy translates its patches along
// and the resource whose answers it translates back.
type patchTarget struct {
	name               string
	upstream, private  []byte
	paths              *translate.Node
	privateGR          schema.GroupResource
	upstreamAPIVersion string
	privateAPIVersion  string
	kind               string
	// pointers are the object's own pointer templates beyond the ones every object has (commonPointers).
	pointers []string
}

// The objects: a Machine at both versions (references by apiGroup and by apiVersion), a ConfigMap owned
// by CAPI objects (the garbage collector's case) and a ResourceQuota (keys that hold groups).
const (
	fuzzMeta = `"resourceVersion":"7","labels":{"cluster.x-k8s.io/cluster-name":"c","l":"v"},` +
		`"annotations":{"cluster.x-k8s.io/cloned-from-groupkind":"AWSMachineTemplate.infrastructure.cluster.x-k8s.io","a":"cluster.x-k8s.io/v1beta2","t~/":"x"},` +
		`"ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineSet","name":"ms","uid":"u1","controller":true},` +
		`{"apiVersion":"v1","kind":"ConfigMap","name":"cm","uid":"u2"},` +
		`{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta2","kind":"AWSMachinePool","name":"p","uid":"u3"}],` +
		`"managedFields":[{"apiVersion":"cluster.x-k8s.io/v1beta2","manager":"m","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{}},` +
		`{"apiVersion":"v1","manager":"n","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{}}]`
	fuzzMachineV1beta2 = `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"m","namespace":"ns",` + fuzzMeta + `},` +
		`"spec":{"clusterName":"c","bootstrap":{"configRef":{"apiGroup":"bootstrap.cluster.x-k8s.io","kind":"KubeadmConfig","name":"b"}},` +
		`"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"AWSMachine","name":"a"}}}`
	fuzzMachineV1beta1 = `{"apiVersion":"cluster.x-k8s.io/v1beta1","kind":"Machine","metadata":{"name":"m","namespace":"ns",` + fuzzMeta + `},` +
		`"spec":{"clusterName":"c","bootstrap":{"configRef":{"apiVersion":"bootstrap.cluster.x-k8s.io/v1beta1","kind":"KubeadmConfig","name":"b"}},` +
		`"infrastructureRef":{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta1","kind":"AWSMachine","name":"a"}}}`
	fuzzConfigMap = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"ns",` + fuzzMeta + `},` +
		`"data":{"apiVersion":"cluster.x-k8s.io/v1beta2","k":"v"}}`
	fuzzQuota = `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q","namespace":"ns",` + fuzzMeta + `},` +
		`"spec":{"hard":{"count/machines.cluster.x-k8s.io":"1","pods":"2"}}}`
)

// commonPointers are pointer templates into what every object has: "{i}" stands for an array index in
// any form, "{k}" for a map key, escaped or not.
var commonPointers = []string{
	"/apiVersion", "", "apiVersion", "/kind", "/metadata", "/metadata/name", "/metadata/resourceVersion",
	"/metadata/ownerReferences", "/metadata/ownerReferences/{i}", "/metadata/ownerReferences/{i}/apiVersion",
	"/metadata/ownerReferences/{i}/apiVersion", "/metadata/ownerReferences/{i}/kind", "/metadata/ownerReferences/{i}/uid",
	"/metadata/managedFields/{i}/apiVersion", "/metadata/managedFields/{i}",
	"/metadata/annotations", "/metadata/annotations/{k}", "/metadata/labels", "/metadata/labels/{k}",
}

var (
	fuzzIndices = []string{"0", "1", "2", "3", "00", "01", "+0", "+1", "+2", "-0", "-1", "-2", "-3", "-4", "-", "9",
		"x", "", "1.0", " 1", "0x1", "1_0", "99999999999999999999", "-9223372036854775808"}
	fuzzKeys = []string{"a", "l", "new", "cluster.x-k8s.io~1cloned-from-groupkind", "cluster.x-k8s.io~1cluster-name",
		"t~0~1", "~01", "cluster.x-k8s.io/cloned-from-groupkind", "count~1machines.cluster.x-k8s.io", "k", "apiVersion"}
	// fuzzPrefixes replace a pointer's leading "/": the library drops what precedes the first "/".
	fuzzPrefixes = []string{"/", "/", "/", "/", "x/", "apiVersion/", "~1/", "//"}
	// fuzzValues are JSON values operations write or test. A private group is only written where the
	// proxy marks it (the apiVersion, the whole object) and tested: elsewhere a client's private group is
	// data the backend stores as it came, which reads back in upstream terms (see checkJSONPatch).
	fuzzValues = []string{
		`"cluster.x-k8s.io/v1beta2"`, `"cluster.x-k8s.io/v1beta1"`, `"infrastructure.cluster.x-k8s.io/v1beta2"`,
		`"infrastructure.cluster.x-k8s.io"`, `"bootstrap.cluster.x-k8s.io"`, `"AWSMachineTemplate.infrastructure.cluster.x-k8s.io"`,
		`"v1"`, `"x"`, `"1"`, `{}`, `[]`, `null`, `1`, `true`,
		`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","name":"n","uid":"u9"}`,
		`[{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineDeployment","name":"md","uid":"u8"}]`,
		`{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"AWSMachine","name":"b"}`,
		`{"apiVersion":"infrastructure.cluster.x-k8s.io/v1beta1","kind":"AWSMachine","name":"b"}`,
		`{"count/machines.cluster.x-k8s.io":"3"}`,
		`{"cluster.x-k8s.io/cloned-from-groupkind":"AWSMachineTemplate.infrastructure.cluster.x-k8s.io"}`,
		`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"name":"m","ownerReferences":[{"apiVersion":"cluster.x-k8s.io/v1beta2"}]}}`,
	}
	fuzzPrivateValues = []string{
		`"cluster.hypershift.openshift.io/v1beta2"`, `"cluster.hypershift.openshift.io"`,
		`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineSet","name":"ms","uid":"u1","controller":true}`,
		`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m"}}`,
	}
	fuzzOps = []string{"add", "remove", "replace", "move", "copy", "test"}
)

func fuzzTargets(t testing.TB) []patchTarget {
	t.Helper()
	machine := func(version, upstream string, pointers ...string) patchTarget {
		r, ok := table.ByUpstream(schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: version, Resource: "machines"})
		if !ok {
			t.Fatalf("no route for machines %s", version)
		}
		return patchTarget{name: "Machine " + version, upstream: []byte(upstream), paths: r.Paths, privateGR: r.Private.GroupResource(),
			upstreamAPIVersion: r.Upstream.GroupVersion().String(), privateAPIVersion: r.Private.GroupVersion().String(), kind: r.Kind, pointers: pointers}
	}
	builtin := func(resource, kind, upstream string, pointers ...string) patchTarget {
		gr := schema.GroupResource{Resource: resource}
		return patchTarget{name: resource, upstream: []byte(upstream), paths: body.RequestPaths(gr), privateGR: gr,
			upstreamAPIVersion: "v1", privateAPIVersion: "v1", kind: kind, pointers: pointers}
	}
	targets := []patchTarget{
		machine("v1beta2", fuzzMachineV1beta2, "/spec", "/spec/infrastructureRef", "/spec/infrastructureRef/apiGroup",
			"/spec/bootstrap/configRef", "/spec/bootstrap/configRef/apiGroup", "/spec/clusterName", "/spec/bootstrap"),
		machine("v1beta1", fuzzMachineV1beta1, "/spec", "/spec/infrastructureRef", "/spec/infrastructureRef/apiVersion",
			"/spec/bootstrap/configRef", "/spec/bootstrap/configRef/apiVersion", "/spec/clusterName"),
		builtin("configmaps", "ConfigMap", fuzzConfigMap, "/data", "/data/{k}"),
		builtin("resourcequotas", "ResourceQuota", fuzzQuota, "/spec/hard", "/spec/hard/{k}", "/spec/hard/count~1machines.cluster.x-k8s.io", "/spec/hard/pods"),
	}
	for i := range targets {
		p, err := translate.ToPrivate.Rewrite(targets[i].paths, targets[i].upstream)
		if err != nil {
			t.Fatal(err)
		}
		targets[i].private = p
	}
	return targets
}

// choices draws the parts of a patch from the fuzzer's bytes (zeros once they run out).
type choices struct{ data []byte }

func (c *choices) pick(n int) int {
	if len(c.data) == 0 {
		return 0
	}
	b := c.data[0]
	c.data = c.data[1:]
	return int(b) % n
}

func (c *choices) pointer(tg patchTarget) string {
	templates := append(append([]string(nil), commonPointers...), tg.pointers...)
	p := templates[c.pick(len(templates))]
	p = strings.ReplaceAll(p, "{i}", fuzzIndices[c.pick(len(fuzzIndices))])
	p = strings.ReplaceAll(p, "{k}", fuzzKeys[c.pick(len(fuzzKeys))])
	if rest, ok := strings.CutPrefix(p, "/"); ok {
		p = fuzzPrefixes[c.pick(len(fuzzPrefixes))] + rest
	}
	return p
}

// patch builds a JSON patch of up to four operations on tg.
func (c *choices) patch(tg patchTarget) []byte {
	n := 1 + c.pick(4)
	ops := make([]string, 0, n)
	for range n {
		op := fuzzOps[c.pick(len(fuzzOps))]
		members := []string{`"op":` + quote(op)}
		path := c.pointer(tg)
		if c.pick(16) != 0 {
			members = append(members, `"path":`+quote(path))
		}
		if op == "move" || op == "copy" {
			members = append(members, `"from":`+quote(c.pointer(tg)))
		}
		if op == "add" || op == "replace" || op == "test" {
			var value string
			switch k := c.pick(8); {
			case k == 0 && op == "test":
				// What a read through the proxy shows there, so that tests pass too.
				var err error
				if value, err = libraryValueAt(tg.upstream, path); err != nil {
					value = `"absent"`
				}
			case k == 1 && (op == "test" || unservedPath(path)):
				value = fuzzPrivateValues[c.pick(len(fuzzPrivateValues))]
			case k == 2:
				value = "" // no value member
			default:
				value = fuzzValues[c.pick(len(fuzzValues))]
			}
			if value != "" {
				members = append(members, `"value":`+value)
			}
		}
		ops = append(ops, "{"+strings.Join(members, ",")+"}")
	}
	return []byte("[" + strings.Join(ops, ",") + "]")
}

// unservedPath reports whether the library reads pointer as the object's apiVersion or the whole object:
// where the proxy marks a private group the client writes.
func unservedPath(pointer string) bool {
	tokens, ok := translate.PointerTokens(pointer)
	return ok && (len(tokens) == 0 || len(tokens) == 1 && tokens[0] == "apiVersion")
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// libraryValueAt is the value the library finds at pointer in doc (a copy from there).
func libraryValueAt(doc []byte, pointer string) (string, error) {
	if pointer == "" {
		return string(doc), nil
	}
	out, err := applyAsAPIServer(doc, []byte(`[{"op":"copy","from":`+quote(pointer)+`,"path":"/\u0000value"}]`))
	if err != nil {
		return "", err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(out, &m); err != nil {
		return "", err
	}
	return string(m["\x00value"]), nil
}

// applyAsAPIServer applies a JSON patch as kube-apiserver's patch handler does (k8s.io/apiserver's
// applyJSPatch): decoded and applied with gopkg.in/evanphx/json-patch.v4, negative indices on (its
// default, which the apiserver keeps). A panic of the library is an error (the apiserver's handler
// panics with it).
func applyAsAPIServer(doc, patch []byte) (out []byte, err error) {
	p, err := evanphx.DecodePatch(patch)
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	return p.Apply(doc)
}

// FuzzJSONPatchPointers is a differential test of JSON patches against kube-apiserver's own JSON patch
// library: a patch of every operation, at every index form the library reads (and ones it refuses), with
// escaped and unescaped keys and pointers not starting with "/", into ownerReferences, managedFields,
// apiVersion, annotations, labels, references and quota keys, is applied
//
//   - directly: to the object in upstream terms, as an apiserver serving the upstream CRDs does;
//   - through the proxy: translated by PatchToPrivate (and Resolve against the private object
//     where it needs the object), applied to the object as the backend holds it, the answer translated
//     back as the proxy translates answers (Translator.UpstreamOf, status.TranslateQuoting).
//
// Both must succeed or fail alike, with the same message where the proxy sent the operations as they
// came; the backend's object must be refused exactly where the apiserver refuses the direct one (its
// apiVersion or kind is not the resource's), else hold the direct one in private terms, and read through
// the proxy be the direct one.
func FuzzJSONPatchPointers(f *testing.F) {
	for _, seed := range [][]byte{
		{0, 0, 0}, {1, 0, 9, 11, 0}, {2, 3, 5, 12, 2}, {0, 3, 1, 10, 11, 3, 0, 1},
	} {
		for i := range 4 {
			f.Add(uint8(i), seed)
		}
	}
	targets := fuzzTargets(f)
	f.Fuzz(func(t *testing.T, target uint8, data []byte) {
		tg := targets[int(target)%len(targets)]
		c := &choices{data: data}
		checkJSONPatch(t, tg, c.patch(tg))
	})
}

// checkJSONPatch applies patch to tg directly and through the proxy and compares the outcomes.
func checkJSONPatch(t *testing.T, tg patchTarget, patch []byte) {
	t.Helper()
	direct, directErr := applyAsAPIServer(tg.upstream, patch)
	if storesPrivateData(t, tg, patch) {
		// The patch writes a private group where the proxy stores it as data: reads through the proxy show
		// it in upstream terms, directly it is what the client wrote.
		return
	}

	sent, _, err := body.PatchToPrivate(body.JSONPatch, patch, tg.paths)
	resolved := false
	if errors.Is(err, jsonpatch.ErrObjectNeeded) {
		resolved = true
		sent, err = jsonpatch.Resolve(patch, tg.paths, tg.private)
	}
	if err != nil {
		t.Fatalf("%s: translating %s: %v", tg.name, patch, err)
	}
	proxied, proxiedErr := applyAsAPIServer(tg.private, sent)

	if (directErr == nil) != (proxiedErr == nil) {
		t.Fatalf("%s: patch %s\nsent %s\ndirectly: %v %s\nthrough the proxy: %v %s", tg.name, patch, sent, directErr, direct, proxiedErr, proxied)
	}
	if directErr != nil {
		if resolved {
			return // a resolved patch fails at a test of its own
		}
		want := patchStatus(t, directErr)
		got, err := status.TranslateQuoting(translate.ToUpstream, patchStatus(t, proxiedErr), body.Quotes(body.JSONPatch, patch, body.JSONPatch, sent))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: patch %s\nsent %s\ndirectly: %s\nthrough the proxy: %s (%v)", tg.name, patch, sent, want, got, err)
		}
		return
	}

	// The apiserver decodes the patched object as the resource's kind: another apiVersion or kind is
	// refused.
	directOK := typeMetaOf(direct) == [2]string{tg.upstreamAPIVersion, tg.kind}
	proxiedOK := typeMetaOf(proxied) == [2]string{tg.privateAPIVersion, tg.kind}
	if directOK != proxiedOK {
		t.Fatalf("%s: patch %s\nsent %s\ndirectly (accepted %v): %s\nthrough the proxy (accepted %v): %s", tg.name, patch, sent, directOK, direct, proxiedOK, proxied)
	}
	if !directOK {
		return
	}
	// The backend holds the direct object in private terms (an upstream group stored would make the
	// garbage collector look for an owner of the platform's groups, and delete the object).
	want, err := translate.ToPrivate.Rewrite(tg.paths, direct)
	if err != nil {
		t.Fatal(err)
	}
	if !equalJSONValues(t, proxied, want) {
		t.Fatalf("%s: patch %s\nsent %s\nthe backend holds %s\n        instead of %s", tg.name, patch, sent, proxied, want)
	}
	back, err := translator.UpstreamOf(tg.privateGR)(proxied)
	if err != nil {
		t.Fatalf("%s: translating %s back: %v", tg.name, proxied, err)
	}
	if !equalJSONValues(t, back, direct) {
		t.Fatalf("%s: patch %s\nsent %s\ndirectly:          %s\nthrough the proxy: %s\n(backend: %s)", tg.name, patch, sent, direct, back, proxied)
	}
}

// storesPrivateData reports whether the direct application of patch to tg, one operation after the
// other, ever holds a private group where a group is, other than in the object's own apiVersion.
func storesPrivateData(t *testing.T, tg patchTarget, patch []byte) bool {
	var ops []json.RawMessage
	if json.Unmarshal(patch, &ops) != nil {
		return false
	}
	doc := tg.upstream
	for i := range ops {
		out, err := applyAsAPIServer(doc, mustMarshal(t, ops[i:i+1]))
		if err != nil {
			return false
		}
		doc = out
		var obj map[string]any
		if json.Unmarshal(doc, &obj) != nil {
			return false
		}
		delete(obj, "apiVersion")
		rest := mustMarshal(t, obj)
		if up, err := translate.ToUpstream.Rewrite(tg.paths, rest); err == nil && !bytes.Equal(up, rest) {
			return true
		}
	}
	return false
}

// patchStatus is the Status kube-apiserver answers a patch that fails to apply with (422, the library's
// error as the message).
func patchStatus(t *testing.T, err error) []byte {
	st := apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false).ErrStatus
	st.APIVersion, st.Kind = "v1", "Status"
	return mustMarshal(t, st)
}

func typeMetaOf(doc []byte) [2]string {
	var tm struct {
		APIVersion any `json:"apiVersion"`
		Kind       any `json:"kind"`
	}
	_ = json.Unmarshal(doc, &tm)
	apiVersion, _ := tm.APIVersion.(string)
	kind, _ := tm.Kind.(string)
	return [2]string{apiVersion, kind}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func equalJSONValues(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

// TestJSONPatchPointers runs the reported patches through checkJSONPatch: each answers through the proxy
// as kube-apiserver's library answers it directly.
func TestJSONPatchPointers(t *testing.T) {
	targets := fuzzTargets(t)
	for _, tc := range []struct {
		name   string
		target int
		patch  string
	}{
		{"replace an owner's apiVersion at -1", 2, `[{"op":"replace","path":"/metadata/ownerReferences/-1/apiVersion","value":"cluster.x-k8s.io/v1beta2"}]`},
		{"replace a Machine's owner's apiVersion at -3", 0, `[{"op":"replace","path":"/metadata/ownerReferences/-3/apiVersion","value":"cluster.x-k8s.io/v1beta2"}]`},
		{"copy an owner's apiVersion at -1 into an annotation", 2, `[{"op":"copy","from":"/metadata/ownerReferences/-1/apiVersion","path":"/metadata/annotations/copied"}]`},
		{"copy an owner's apiVersion at -3 into an annotation", 2, `[{"op":"copy","from":"/metadata/ownerReferences/-3/apiVersion","path":"/metadata/annotations/copied"}]`},
		{"test at -3, +0 and 00", 2, `[{"op":"test","path":"/metadata/ownerReferences/-3/apiVersion","value":"cluster.x-k8s.io/v1beta2"},` +
			`{"op":"test","path":"/metadata/ownerReferences/+0/apiVersion","value":"cluster.x-k8s.io/v1beta2"},` +
			`{"op":"test","path":"/metadata/ownerReferences/00/apiVersion","value":"cluster.x-k8s.io/v1beta2"}]`},
		{"test a private group at -3", 2, `[{"op":"test","path":"/metadata/ownerReferences/-3/apiVersion","value":"cluster.hypershift.openshift.io/v1beta2"}]`},
		{"test the apiVersion the object has", 0, `[{"op":"test","path":"/apiVersion","value":"cluster.x-k8s.io/v1beta2"},` +
			`{"op":"test","path":"/metadata/labels/l","value":"v"},{"op":"test","path":"/metadata/ownerReferences/0/apiVersion","value":"cluster.x-k8s.io/v1beta2"},` +
			`{"op":"add","path":"/metadata/labels/m","value":"w"}]`},
		{"test a private apiVersion", 0, `[{"op":"test","path":"/apiVersion","value":"cluster.hypershift.openshift.io/v1beta2"}]`},
		{"write a private apiVersion", 0, `[{"op":"add","path":"x/apiVersion","value":"cluster.hypershift.openshift.io/v1beta2"},{"op":"test","path":"/apiVersion","value":"cluster.hypershift.openshift.io/v1beta2"}]`},
		{"a private apiVersion copied, then put back", 0, `[{"op":"replace","path":"/apiVersion","value":"cluster.hypershift.openshift.io/v1beta2"},` +
			`{"op":"copy","from":"/apiVersion","path":"/metadata/annotations/a"},{"op":"replace","path":"/apiVersion","value":"cluster.x-k8s.io/v1beta2"}]`},
		{"a path without a leading slash", 1, `[{"op":"replace","path":"spec/spec/infrastructureRef/apiVersion","value":"infrastructure.cluster.x-k8s.io/v1beta2"}]`},
		{"a quota key, escaped, after a prefix", 3, `[{"op":"replace","path":"x/spec/hard/count~1machines.cluster.x-k8s.io","value":"5"},{"op":"test","path":"/spec/hard/count~1machines.cluster.x-k8s.io","value":"5"}]`},
		{"remove at -1, add at -1", 0, `[{"op":"remove","path":"/metadata/ownerReferences/-1"},{"op":"add","path":"/metadata/ownerReferences/-1","value":{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","name":"n","uid":"u9"}}]`},
		{"out of range", 0, `[{"op":"replace","path":"/metadata/ownerReferences/-4/apiVersion","value":"cluster.x-k8s.io/v1beta2"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkJSONPatch(t, targets[tc.target], []byte(tc.patch))
		})
	}
}
