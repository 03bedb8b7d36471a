package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openshift/hypershift-capi-proxy/tests/framework"
)

const (
	crdsPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	// platformMachines is the platform's own Machine CRD (CAPI platformVersion), hidden through the proxy.
	platformMachines = "machines.cluster.x-k8s.io"
	// privateMachines is HyperShift's, served through the proxy as machines.cluster.x-k8s.io.
	privateMachines = "machines.cluster.hypershift.openshift.io"
	// isolationLabel marks the CRDs of a case, so that a labelSelector selects them.
	isolationLabel = "e2e.hypershift.openshift.io/crd-isolation"
)

// TestCRDIsolation proves that no request through the proxy reaches the platform's CRDs of the upstream
// groups or HyperShift's private CRDs under their private names, whatever its verb, selectors or body
// encoding: deletecollection deletes only the CRDs a client sees, creates in a mapped or private group
// are refused in every encoding, bodies are read as the apiserver reads them, private names do not
// exist, and lists and watches show the private CRDs under their upstream names only. Every case ends by
// reading the platform's and the private CRDs straight from the apiserver.
//
// Each case (crdIsolationCases) says what it creates or labels on the backend, the requests it sends
// with what the client must see of each, and what the backend must hold at the end.
func TestCRDIsolation(t *testing.T) {
	ctx := context.Background()
	x := &crdIsolation{
		admin: viaProxy(t), adminDirect: direct(t),
		user: newRawClient(t, proxy.Config(env.UserToken)), userDirect: newRawClient(t, env.DirectConfig(env.UserToken)),
		backend: directCRDClient(t),
	}
	var err error
	if x.clientset, err = apiextensionsclient.NewForConfig(proxy.Config(env.AdminToken)); err != nil {
		t.Fatal(err)
	}
	cfg := proxy.Config(env.AdminToken)
	cfg.ContentType = runtime.ContentTypeProtobuf
	if x.protobuf, err = apiextensionsclient.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	for _, c := range crdIsolationCases(t, x) {
		t.Run(c.name, func(t *testing.T) { x.run(ctx, t, c) })
	}
}

// crdIsolation holds the clients of TestCRDIsolation: raw clients of the admin and of alice (who may do
// nothing with CRDs) through the proxy and straight to the apiserver, client-go's apiextensions clientset
// through the proxy in JSON and in protobuf, and a controller-runtime client of the backend.
type crdIsolation struct {
	admin, adminDirect, user, userDirect *rawClient
	clientset, protobuf                  apiextensionsclient.Interface
	backend                              client.Client
}

// crdCase is a case of TestCRDIsolation.
type crdCase struct {
	name string
	// create are CRDs (testCRD) created straight on the backend, labelled isolationLabel=value, and
	// deleted when the case ends; label are existing CRDs given that label until it ends.
	value         string
	create, label []string
	// setup runs after them, before the steps.
	setup func(t *testing.T)
	// steps are sent in order.
	steps []crdStep
	// check makes the checks of no answer, after the steps.
	check func(t *testing.T)
	// Last, straight on the backend: these CRDs are intact (besides platformMachines and
	// privateMachines, which every case checks), deleted, or were never created.
	intact, deleted, absent []string
}

// crdStep is one request of a crdCase and what its client must see.
type crdStep struct {
	// what names the request in failures; empty, its method and path.
	what string
	// The request, sent raw by the admin through the proxy (by alice when asUser).
	asUser       bool
	method, path string
	// body is sent with Content-Type contentType (none when empty); bodyFrom, when set, computes the
	// body when the step runs. header holds more "Name: value" lines.
	body, contentType string
	bodyFrom          func(t *testing.T) string
	header            []string

	// clientGo, when set, sends the request with client-go's apiextensions clientset instead, in
	// protobuf when protobuf is set: the client sees 200 when it returns no error, else the code of the
	// error's Status.
	clientGo func(ctx context.Context, t *testing.T, cs apiextensionsclient.Interface) error
	protobuf bool

	// asAbsent, when set, is the name of a CRD that exists nowhere: the request (of the CRD named
	// named) must be answered as the apiserver answers it of asAbsent, but for the name (answersAsAbsent).
	named, asAbsent string
	// watchOnly, when not nil: path is a watch (with timeoutSeconds), open, whose every event but a
	// BOOKMARK is of one of these names. watchAdded, when not nil: its ADDED events are of exactly these.
	watchOnly, watchAdded []string

	// want is what the client must see (What, Code, Body and ContentType are the answer's).
	want framework.ExpectAnswerInput
	// inspect checks more of a raw answer's body; inspectAdded more of watchAdded's objects, by name.
	inspect      func(t *testing.T, body []byte)
	inspectAdded func(t *testing.T, added map[string]map[string]any)
	// thenIntact, when not nil, are CRDs intact on the backend after the step, with platformMachines and
	// privateMachines.
	thenIntact []string
}

// run runs a case: its CRDs and labels, setup, its steps, check and what the backend must hold.
func (x *crdIsolation) run(ctx context.Context, t *testing.T, c crdCase) {
	t.Helper()
	if len(c.create) > 0 {
		framework.CreateCRDs(ctx, t, framework.CreateCRDsInput{Client: x.backend, Names: c.create, Labels: map[string]string{isolationLabel: c.value}})
	}
	if len(c.label) > 0 {
		framework.LabelUntilEnd(ctx, t, framework.LabelUntilEndInput{Client: x.backend, Key: isolationLabel, Value: c.value, Names: c.label,
			NewObject: func(name string) client.Object {
				return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
			}})
	}
	if c.setup != nil {
		c.setup(t)
	}
	for _, s := range c.steps {
		x.send(ctx, t, s)
	}
	if c.check != nil {
		c.check(t)
	}
	framework.ExpectCRDs(ctx, t, framework.ExpectCRDsInput{Reader: x.backend,
		Intact: append([]string{platformMachines, privateMachines}, c.intact...), Deleted: c.deleted, Absent: c.absent})
}

// send sends a step's request and checks what its client sees.
func (x *crdIsolation) send(ctx context.Context, t *testing.T, s crdStep) {
	t.Helper()
	through, direct := x.admin, x.adminDirect
	if s.asUser {
		through, direct = x.user, x.userDirect
	}
	want := s.want
	if want.What = s.what; want.What == "" {
		want.What = s.method + " " + s.path
	}
	switch {
	case s.asAbsent != "":
		answersAsAbsent(t, through, direct, crdsPath, s.named, s.asAbsent, nameRequest{s.method, "", s.body, s.contentType})
	case s.watchOnly != nil:
		watchSeesOnly(ctx, t, through, s.path, s.watchOnly...)
	case s.watchAdded != nil:
		added, seen := watchAdded(ctx, t, through, s.path)
		if strings.Join(seen, ",") != strings.Join(s.watchAdded, ",") {
			t.Errorf("%s: ADDED %v, want %v", want.What, seen, s.watchAdded)
		}
		if s.inspectAdded != nil {
			s.inspectAdded(t, added)
		}
	case s.clientGo != nil:
		cs := x.clientset
		if s.protobuf {
			cs = x.protobuf
		}
		want.Code = http.StatusOK
		if err := s.clientGo(ctx, t, cs); err != nil {
			want.Code, want.Body = 0, []byte(err.Error())
			if status := apierrors.APIStatus(nil); errors.As(err, &status) {
				want.Code = int(status.Status().Code)
			}
		}
		framework.ExpectAnswer(t, want)
	default:
		body, header := s.body, s.header
		if s.bodyFrom != nil {
			body = s.bodyFrom(t)
		}
		if s.contentType != "" {
			header = append([]string{"Content-Type: " + s.contentType}, header...)
		}
		data := through.expect(t, want, s.method, s.path, body, header...)
		if s.inspect != nil {
			s.inspect(t, data)
		}
	}
	if s.thenIntact != nil {
		framework.ExpectCRDs(ctx, t, framework.ExpectCRDsInput{Reader: x.backend, Intact: append([]string{platformMachines, privateMachines}, s.thenIntact...)})
	}
}

// crdIsolationCases are TestCRDIsolation's cases, in order.
func crdIsolationCases(t *testing.T, x *crdIsolation) []crdCase {
	ctx := context.Background()
	// refused: 403 naming the platform's Machine CRD. nothing: 200 listing nothing.
	refused := framework.ExpectAnswerInput{WantCode: http.StatusForbidden, WantMentions: platformMachines}
	forbidden := framework.ExpectAnswerInput{WantCode: http.StatusForbidden}
	notFound := framework.ExpectAnswerInput{WantCode: http.StatusNotFound}
	ok := framework.ExpectAnswerInput{WantCode: http.StatusOK}
	nothing := framework.ExpectAnswerInput{WantCode: http.StatusOK, WantItems: []string{}}
	items := func(names ...string) framework.ExpectAnswerInput {
		return framework.ExpectAnswerInput{WantCode: http.StatusOK, WantItems: names}
	}
	selecting := func(value string) string { return query("labelSelector", isolationLabel+"="+value) }
	deleteCollection := func(opts metav1.DeleteOptions, value string) func(context.Context, *testing.T, apiextensionsclient.Interface) error {
		return func(ctx context.Context, _ *testing.T, cs apiextensionsclient.Interface) error {
			return cs.ApiextensionsV1().CustomResourceDefinitions().DeleteCollection(ctx, opts, metav1.ListOptions{LabelSelector: isolationLabel + "=" + value})
		}
	}

	// privateCRD is privateMachines in full, as a client would send it to replace or create it.
	privateCRD := testCRD(privateMachines)
	privateCRD.Spec.Group = privateCore
	full, _ := json.Marshal(privateCRD)

	return []crdCase{{
		// The reproduction: this deleted the platform's Machine CRD.
		name: "deletecollection by the fieldSelector of a mapped name is refused",
		steps: []crdStep{{method: http.MethodDelete, path: crdsPath + query("fieldSelector", "metadata.name="+platformMachines),
			what: "deletecollection of " + platformMachines, want: refused}},
	}, {
		name:  "deletecollection by the fieldSelector of a hidden or private name deletes nothing",
		value: "hidden-by-name", create: []string{"gadgetsb.infrastructure.cluster.x-k8s.io", "gizmosb.cluster.hypershift.openshift.io"},
		steps: func() (steps []crdStep) {
			for _, name := range []string{"gadgetsb.infrastructure.cluster.x-k8s.io", "gizmosb.cluster.hypershift.openshift.io", privateMachines} {
				for _, op := range []string{"=", "=="} {
					steps = append(steps, crdStep{method: http.MethodDelete, path: crdsPath + query("fieldSelector", "metadata.name"+op+name),
						what: "deletecollection of " + name, want: nothing})
				}
			}
			return steps
		}(),
		intact: []string{"gadgetsb.infrastructure.cluster.x-k8s.io", "gizmosb.cluster.hypershift.openshift.io"},
	}, {
		name:  "deletecollection by labelSelector deletes only the CRDs a client sees",
		value: "visible-only",
		create: []string{"gadgetsc.infrastructure.cluster.x-k8s.io", "gizmosc.cluster.hypershift.openshift.io",
			"gadgetsc.e2e.example.com", "gizmosc.e2e.example.com"},
		label: []string{platformMachines},
		steps: []crdStep{{
			// With a DeleteOptions body (JSON, as client-go sends it), dry run first: nothing goes.
			what:     "dry-run deletecollection through client-go",
			clientGo: deleteCollection(metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}, "visible-only"), want: ok,
			thenIntact: []string{"gadgetsc.infrastructure.cluster.x-k8s.io", "gizmosc.cluster.hypershift.openshift.io",
				"gadgetsc.e2e.example.com", "gizmosc.e2e.example.com"},
		}, {
			// The answer is the list of what was selected: the visible CRDs.
			method: http.MethodDelete, path: crdsPath + selecting("visible-only"), body: `{"propagationPolicy":"Background"}`, contentType: "application/json",
			what: "deletecollection", want: items("gadgetsc.e2e.example.com", "gizmosc.e2e.example.com"),
		}},
		deleted: []string{"gadgetsc.e2e.example.com", "gizmosc.e2e.example.com"},
		intact:  []string{"gadgetsc.infrastructure.cluster.x-k8s.io", "gizmosc.cluster.hypershift.openshift.io"},
	}, {
		name:  "deletecollection with a protobuf DeleteOptions body",
		value: "protobuf-options", create: []string{"gadgetsd.infrastructure.cluster.x-k8s.io", "widgetsd.e2e.example.com"},
		steps: []crdStep{{what: "protobuf deletecollection through client-go", protobuf: true,
			clientGo: deleteCollection(metav1.DeleteOptions{}, "protobuf-options"), want: ok}},
		deleted: []string{"widgetsd.e2e.example.com"},
		intact:  []string{"gadgetsd.infrastructure.cluster.x-k8s.io"},
	}, {
		name:  "deletecollection selecting a private CRD is refused and deletes nothing",
		value: "with-private", create: []string{"gadgetse.infrastructure.cluster.x-k8s.io", "widgetse.e2e.example.com"},
		label: []string{platformMachines, privateMachines},
		steps: []crdStep{
			{method: http.MethodDelete, path: crdsPath + selecting("with-private"), want: refused},
			// != of a private name holds for every CRD a client sees: the private CRD is still selected.
			{method: http.MethodDelete, path: crdsPath + query("labelSelector", isolationLabel+"=with-private", "fieldSelector", "metadata.name!="+privateMachines), want: refused},
		},
		intact: []string{"gadgetse.infrastructure.cluster.x-k8s.io", "widgetse.e2e.example.com"},
	}, {
		// The user may do nothing with CRDs: the backend refuses it as it would refuse it directly.
		name:  "deletecollection is authorized as the client",
		value: "as-the-client", create: []string{"widgetsf.e2e.example.com"},
		steps: []crdStep{{asUser: true, method: http.MethodDelete, path: crdsPath + selecting("as-the-client"),
			what: "deletecollection as a user without rights", want: forbidden}},
		intact: []string{"widgetsf.e2e.example.com"},
	}, {
		name: "creates in a mapped or private group are refused in JSON, YAML, protobuf and CBOR",
		steps: func() (steps []crdStep) {
			for _, tc := range []struct{ name, group string }{
				{"widgets.cluster.x-k8s.io", "cluster.x-k8s.io"},
				{"machines.cluster.x-k8s.io", "cluster.x-k8s.io"},
				{"gizmos.cluster.hypershift.openshift.io", "cluster.hypershift.openshift.io"},
				{"widgetsg.e2e.example.com", "infrastructure.cluster.x-k8s.io"},
				{"widgetsg.e2e.example.com", "infrastructure.cluster.hypershift.openshift.io"},
			} {
				steps = append(steps, createsInEveryEncoding(t, tc.name, tc.group, forbidden)...)
			}
			steps = append(steps, crdStep{what: "protobuf create through client-go", protobuf: true, want: forbidden,
				clientGo: func(ctx context.Context, _ *testing.T, cs apiextensionsclient.Interface) error {
					_, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, testCRD("gadgets.cluster.x-k8s.io"), metav1.CreateOptions{})
					return err
				}})
			// A body the proxy cannot read is not sent on.
			for contentType, code := range map[string]int{"application/json": 400, runtime.ContentTypeProtobuf: 400, "application/cbor": 400, "text/plain": 415} {
				steps = append(steps, crdStep{method: http.MethodPost, path: crdsPath, body: "\xff{", contentType: contentType,
					what: "create with an undecodable " + contentType + " body", want: framework.ExpectAnswerInput{WantCode: code}})
			}
			// A CRD of another group is created, its protobuf body passed on as it is.
			return append(steps, crdStep{what: "protobuf create of another group's CRD", protobuf: true, want: ok,
				clientGo: func(ctx context.Context, t *testing.T, cs apiextensionsclient.Interface) error {
					created, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, testCRD("doohickeys.e2e.example.com"), metav1.CreateOptions{})
					if err == nil {
						t.Cleanup(func() { _ = x.backend.Delete(ctx, created) })
					}
					return err
				}})
		}(),
		absent: []string{"widgets.cluster.x-k8s.io", "gizmos.cluster.hypershift.openshift.io", "widgetsg.e2e.example.com", "gadgets.cluster.x-k8s.io"},
		intact: []string{"doohickeys.e2e.example.com"},
	}, func() crdCase {
		// Member names match exactly and the last of repeated members wins.
		var before apiextensionsv1.CustomResourceDefinition
		const widgetSpec = `"spec":{"group":"cluster.x-k8s.io","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget"},` +
			`"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`
		c := crdCase{
			name: "bodies are read as the apiserver reads them",
			setup: func(t *testing.T) {
				if err := x.backend.Get(ctx, client.ObjectKey{Name: privateMachines}, &before); err != nil {
					t.Fatal(err)
				}
			},
			steps: []crdStep{
				{what: "create with Metadata beside metadata", method: http.MethodPost, path: crdsPath, contentType: "application/json", want: forbidden,
					body: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.cluster.x-k8s.io"},"Metadata":{"name":"widgetsh.e2e.example.com"},` + widgetSpec},
				{what: "create with a repeated name", method: http.MethodPost, path: crdsPath, contentType: "application/json", want: forbidden,
					body: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgetsh.e2e.example.com","name":"widgets.cluster.x-k8s.io"},` + widgetSpec},
			},
			absent: []string{"widgets.cluster.x-k8s.io"},
			check: func(t *testing.T) {
				after := &apiextensionsv1.CustomResourceDefinition{}
				if err := x.backend.Get(ctx, client.ObjectKey{Name: privateMachines}, after); err != nil {
					t.Fatal(err)
				}
				if after.Spec.PreserveUnknownFields || after.Spec.Scope != before.Spec.Scope || strings.Join(after.Spec.Names.Categories, ",") != strings.Join(before.Spec.Names.Categories, ",") {
					t.Errorf("the private CRD's spec changed: scope %s, categories %v", after.Spec.Scope, after.Spec.Names.Categories)
				}
			},
		}
		for name, patch := range map[string]string{
			"Path beside path":   `[{"op":"replace","path":"/spec/names/categories","Path":"/metadata/labels/x","value":["x"]}]`,
			"From beside from":   `[{"op":"copy","from":"/spec/names","From":"/metadata/labels","path":"/metadata/annotations"}]`,
			"Op beside op":       `[{"Op":"test","op":"replace","path":"/spec/names/categories","value":["x"]}]`,
			"the last path wins": `[{"op":"replace","path":"/metadata/labels/x","path":"/spec/names/categories","value":["x"]}]`,
		} {
			c.steps = append(c.steps, crdStep{what: "JSON patch with " + name, method: http.MethodPatch, path: crdsPath + "/" + platformMachines,
				body: patch, contentType: "application/json-patch+json", want: forbidden})
		}
		// An update whose spec differs only in a repeated spec member: the apiserver decodes the second
		// spec over the first, so a member only the first one has stays.
		c.steps = append(c.steps, crdStep{what: "update with a repeated spec", method: http.MethodPut, path: crdsPath + "/" + platformMachines,
			contentType: "application/json", want: forbidden,
			bodyFrom: func(t *testing.T) string {
				obj := jsonObject(t, x.admin.mustDo(t, http.StatusOK, http.MethodGet, crdsPath+"/"+platformMachines, ""))
				spec, _ := json.Marshal(obj["spec"])
				delete(obj, "spec")
				rest, _ := json.Marshal(obj)
				return `{"spec":{"preserveUnknownFields":true},` + string(rest[1:len(rest)-1]) + `,"spec":` + string(spec) + `}`
			}})
		return c
	}(), func() crdCase {
		const absent, hidden = "nosuch.e2e.example.com", "gadgetsj.infrastructure.cluster.x-k8s.io"
		c := crdCase{name: "private names do not exist", value: "hidden-by-path", create: []string{hidden}}
		for _, s := range []crdStep{
			{method: http.MethodGet},
			{method: http.MethodPut, body: string(full), contentType: "application/json"},
			{method: http.MethodPatch, body: `{"metadata":{"labels":{"a":"b"}}}`, contentType: "application/merge-patch+json"},
			{method: http.MethodDelete},
		} {
			s.named, s.asAbsent = privateMachines, absent
			c.steps = append(c.steps, s)
		}
		c.steps = append(c.steps, crdStep{what: "GET of the status of " + privateMachines, method: http.MethodGet,
			path: crdsPath + "/" + privateMachines + "/status", want: notFound})
		// A client the apiserver would refuse is refused as it would be for a CRD that does not exist.
		for _, method := range []string{http.MethodGet, http.MethodDelete, http.MethodPatch} {
			c.steps = append(c.steps, crdStep{asUser: true, method: method, body: `{}`, contentType: "application/merge-patch+json",
				named: privateMachines, asAbsent: absent})
		}
		// A hidden CRD is answered as absent, and stays.
		for _, s := range []crdStep{
			{method: http.MethodDelete},
			{method: http.MethodDelete, body: `{"propagationPolicy":"Background"}`, contentType: "application/json"},
			{method: http.MethodPatch, body: `[{"op":"add","path":"/metadata/labels/x","value":"y"}]`, contentType: "application/json-patch+json"},
			{method: http.MethodPut, body: string(full), contentType: "application/json"},
		} {
			s.path, s.want = crdsPath+"/"+hidden, notFound
			c.steps = append(c.steps, s)
		}
		c.steps[len(c.steps)-1].thenIntact = []string{hidden}
		c.check = func(t *testing.T) {
			stored := &apiextensionsv1.CustomResourceDefinition{}
			if err := x.backend.Get(ctx, client.ObjectKey{Name: hidden}, stored); err != nil || stored.Labels["x"] != "" {
				t.Errorf("the hidden CRD changed: %v %v", err, stored.Labels)
			}
		}
		c.steps = append(c.steps,
			// Server-side apply would create it: refused as a create.
			crdStep{what: "apply of " + privateMachines, method: http.MethodPatch, path: crdsPath + "/" + privateMachines + "?fieldManager=e2e",
				body: string(full), contentType: "application/apply-patch+yaml", want: forbidden},
			// Selecting a private name selects nothing; excluding it excludes nothing.
			crdStep{what: "list of metadata.name=" + privateMachines, method: http.MethodGet,
				path: crdsPath + query("fieldSelector", "metadata.name="+privateMachines), want: nothing},
			crdStep{what: "list of metadata.name!=" + privateMachines, method: http.MethodGet,
				path: crdsPath + query("fieldSelector", "metadata.name!="+privateMachines+",metadata.name!=widgets.e2e.example.com"),
				want: framework.ExpectAnswerInput{WantCode: http.StatusOK, WantItemsInclude: []string{platformMachines}, WantNoItemContaining: "hypershift"}},
		)
		for _, path := range []string{
			crdsPath + query("watch", "1", "timeoutSeconds", "2", "fieldSelector", "metadata.name="+privateMachines),
			"/apis/apiextensions.k8s.io/v1/watch/customresourcedefinitions/" + privateMachines + "?timeoutSeconds=2",
			"/apis/apiextensions.k8s.io/v1/watch/customresourcedefinitions/" + platformMachines + "?timeoutSeconds=2",
		} {
			c.steps = append(c.steps, crdStep{path: path, watchOnly: []string{platformMachines}})
		}
		return c
	}(), func() crdCase {
		const value = "list-and-watch"
		want := []string{platformMachines, "widgetsi.e2e.example.com"}
		q := selecting(value)
		return crdCase{
			name:   "list and watch by labelSelector show the private CRDs under their upstream names only",
			value:  value,
			create: []string{"gadgetsi.infrastructure.cluster.x-k8s.io", "gizmosi.cluster.hypershift.openshift.io", "widgetsi.e2e.example.com"},
			label:  []string{platformMachines, privateMachines},
			steps: []crdStep{{
				what: "list", method: http.MethodGet, path: crdsPath + q, want: items(want...),
				inspect: func(t *testing.T, data []byte) {
					var list apiextensionsv1.CustomResourceDefinitionList
					if err := json.Unmarshal(data, &list); err != nil {
						t.Fatal(err)
					}
					for _, c := range list.Items {
						if c.Name == platformMachines && (c.Spec.Group != "cluster.x-k8s.io" || string(c.UID) != string(privateUID(t, ctx, x.backend))) {
							t.Errorf("the list's %s is not the private CRD: group %s", c.Name, c.Spec.Group)
						}
					}
				},
			}, {
				what: "watch", path: crdsPath + q + "&watch=1&timeoutSeconds=2", watchAdded: want,
				inspectAdded: func(t *testing.T, added map[string]map[string]any) {
					if group := field(added[platformMachines], "spec.group"); group != "cluster.x-k8s.io" {
						t.Errorf("watch: %s of group %v", platformMachines, group)
					}
				},
			}, {
				// Through a Table too, as kubectl get crd -l asks.
				what: "table rows", method: http.MethodGet, path: crdsPath + q, header: []string{"Accept: application/json;as=Table;v=v1;g=meta.k8s.io"},
				want: items(want...),
			}, {
				// Asked for YAML, the proxy answers YAML, as the apiserver does, translated.
				what: "list asked in YAML", method: http.MethodGet, path: crdsPath + q, header: []string{"Accept: application/yaml"},
				want: items(want...),
			}},
		}
	}()}
}

// createsInEveryEncoding are creates of a CRD named name of group in JSON, YAML, protobuf and CBOR, each
// answered want.
func createsInEveryEncoding(t *testing.T, name, group string, want framework.ExpectAnswerInput) []crdStep {
	t.Helper()
	c := testCRD(name)
	c.Spec.Group = group
	asJSON, _ := json.Marshal(c)
	asCBOR, err := cbordirect.Marshal(map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": name}, "spec": map[string]any{"group": group}})
	if err != nil {
		t.Fatal(err)
	}
	var steps []crdStep
	for encoding, body := range map[string]struct{ body, contentType string }{
		"JSON":     {string(asJSON), "application/json"},
		"YAML":     {crdYAML(name, group), "application/yaml"},
		"protobuf": {string(protobufCRD(t, c)), runtime.ContentTypeProtobuf},
		"CBOR":     {string(asCBOR), "application/cbor"},
	} {
		steps = append(steps, crdStep{what: "create " + name + " (group " + group + ") in " + encoding, method: http.MethodPost, path: crdsPath,
			body: body.body, contentType: body.contentType, want: want})
	}
	return steps
}

// testCRD is a minimal valid CRD named <plural>.<group> (framework.NewCRD).
var testCRD = framework.NewCRD

// crdYAML is testCRD(name) of group in YAML.
func crdYAML(name, group string) string {
	plural, _, _ := strings.Cut(name, ".")
	return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: " + name + "\nspec:\n  group: " + group +
		"\n  scope: Namespaced\n  names:\n    plural: " + plural + "\n    kind: Widget\n  versions:\n  - name: v1\n    served: true\n    storage: true\n" +
		"    schema:\n      openAPIV3Schema:\n        type: object\n"
}

// protobufCRD encodes a CRD in protobuf, as client-go sends it.
func protobufCRD(t *testing.T, c *apiextensionsv1.CustomResourceDefinition) []byte {
	t.Helper()
	info, _ := runtime.SerializerInfoForMediaType(serializer.NewCodecFactory(crdScheme).SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	var buf bytes.Buffer
	if err := info.Serializer.Encode(c, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func privateUID(t *testing.T, ctx context.Context, c client.Client) types.UID {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: privateMachines}, crd); err != nil {
		t.Fatal(err)
	}
	return crd.UID
}
