package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sort"
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
	"sigs.k8s.io/yaml"
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
func TestCRDIsolation(t *testing.T) {
	ctx := context.Background()
	rp, rd := viaProxy(t), direct(t)
	directCRDs := directCRDClient(t)

	// intact fails unless the CRDs exist on the backend and are not being deleted.
	intact := func(t *testing.T, names ...string) {
		t.Helper()
		for _, name := range append([]string{platformMachines, privateMachines}, names...) {
			c := &apiextensionsv1.CustomResourceDefinition{}
			if err := directCRDs.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
				t.Errorf("CRD %s: %v", name, err)
			} else if c.DeletionTimestamp != nil {
				t.Errorf("CRD %s is being deleted", name)
			}
		}
	}
	// deleted fails unless the CRD is gone from the backend or being deleted.
	deleted := func(t *testing.T, name string) {
		t.Helper()
		c := &apiextensionsv1.CustomResourceDefinition{}
		if err := directCRDs.Get(ctx, client.ObjectKey{Name: name}, c); err == nil && c.DeletionTimestamp == nil {
			t.Errorf("CRD %s was not deleted", name)
		} else if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("CRD %s: %v", name, err)
		}
	}
	// label sets the isolation label on CRDs straight on the backend, until the test ends.
	label := func(t *testing.T, value string, names ...string) {
		t.Helper()
		labelUntilEnd(ctx, t, directCRDs, func(name string) client.Object {
			return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
		}, isolationLabel, value, names...)
	}
	// create creates CRDs straight on the backend, labelled value, deleted when the test ends.
	create := func(t *testing.T, value string, names ...string) {
		t.Helper()
		for _, name := range names {
			c := testCRD(name)
			c.Labels = map[string]string{isolationLabel: value}
			createUntilEnd(ctx, t, directCRDs, c)
		}
	}

	t.Run("deletecollection by the fieldSelector of a mapped name is refused", func(t *testing.T) {
		// The reproduction: this deleted the platform's Machine CRD.
		resp, data := rp.do(t, http.MethodDelete, crdsPath+query("fieldSelector", "metadata.name="+platformMachines), "")
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(data), platformMachines) {
			t.Errorf("deletecollection of %s: %d %s, want 403 naming it", platformMachines, resp.StatusCode, data)
		}
		intact(t)
	})

	t.Run("deletecollection by the fieldSelector of a hidden or private name deletes nothing", func(t *testing.T) {
		hidden := []string{"gadgetsb.infrastructure.cluster.x-k8s.io", "gizmosb.cluster.hypershift.openshift.io"}
		create(t, "hidden-by-name", hidden...)
		for _, name := range append(hidden, privateMachines) {
			for _, op := range []string{"=", "=="} {
				data := rp.mustDo(t, http.StatusOK, http.MethodDelete, crdsPath+query("fieldSelector", "metadata.name"+op+name), "")
				if got := listNames(t, data); len(got) != 0 {
					t.Errorf("deletecollection of %s: answered %v, want nothing", name, got)
				}
			}
		}
		intact(t, hidden...)
	})

	t.Run("deletecollection by labelSelector deletes only the CRDs a client sees", func(t *testing.T) {
		const value = "visible-only"
		hidden := []string{"gadgetsc.infrastructure.cluster.x-k8s.io", "gizmosc.cluster.hypershift.openshift.io"}
		visible := []string{"gadgetsc.e2e.example.com", "gizmosc.e2e.example.com"}
		create(t, value, append(hidden, visible...)...)
		label(t, value, platformMachines)

		cs, err := apiextensionsclient.NewForConfig(proxy.Config(env.AdminToken))
		if err != nil {
			t.Fatal(err)
		}
		// With a DeleteOptions body (JSON, as client-go sends it), dry run first: nothing goes.
		dryRun := metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
		if err := cs.ApiextensionsV1().CustomResourceDefinitions().DeleteCollection(ctx, dryRun, metav1.ListOptions{LabelSelector: isolationLabel + "=" + value}); err != nil {
			t.Fatal(err)
		}
		intact(t, append(hidden, visible...)...)

		// The answer is the list of what was selected: the visible CRDs.
		data := rp.mustDo(t, http.StatusOK, http.MethodDelete, crdsPath+query("labelSelector", isolationLabel+"="+value), `{"propagationPolicy":"Background"}`,
			"Content-Type: application/json")
		if got := listNames(t, data); strings.Join(got, ",") != strings.Join(visible, ",") {
			t.Errorf("deletecollection answered %v, want %v", got, visible)
		}
		for _, name := range visible {
			deleted(t, name)
		}
		intact(t, hidden...)
	})

	t.Run("deletecollection with a protobuf DeleteOptions body", func(t *testing.T) {
		const value = "protobuf-options"
		create(t, value, "gadgetsd.infrastructure.cluster.x-k8s.io", "widgetsd.e2e.example.com")
		cfg := proxy.Config(env.AdminToken)
		cfg.ContentType = runtime.ContentTypeProtobuf
		cs, err := apiextensionsclient.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.ApiextensionsV1().CustomResourceDefinitions().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: isolationLabel + "=" + value}); err != nil {
			t.Fatal(err)
		}
		deleted(t, "widgetsd.e2e.example.com")
		intact(t, "gadgetsd.infrastructure.cluster.x-k8s.io")
	})

	t.Run("deletecollection selecting a private CRD is refused and deletes nothing", func(t *testing.T) {
		const value = "with-private"
		create(t, value, "gadgetse.infrastructure.cluster.x-k8s.io", "widgetse.e2e.example.com")
		label(t, value, platformMachines, privateMachines)
		for _, query := range []string{
			query("labelSelector", isolationLabel+"="+value),
			// != of a private name holds for every CRD a client sees: the private CRD is still selected.
			query("labelSelector", isolationLabel+"="+value, "fieldSelector", "metadata.name!="+privateMachines),
		} {
			resp, data := rp.do(t, http.MethodDelete, crdsPath+query, "")
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(data), platformMachines) {
				t.Errorf("deletecollection%s: %d %s, want 403 naming %s", query, resp.StatusCode, data, platformMachines)
			}
		}
		intact(t, "gadgetse.infrastructure.cluster.x-k8s.io", "widgetse.e2e.example.com")
	})

	t.Run("deletecollection is authorized as the client", func(t *testing.T) {
		const value = "as-the-client"
		create(t, value, "widgetsf.e2e.example.com")
		// The user may do nothing with CRDs: the backend refuses it as it would refuse it directly.
		user := newRawClient(t, proxy.Config(env.UserToken))
		resp, data := user.do(t, http.MethodDelete, crdsPath+query("labelSelector", isolationLabel+"="+value), "")
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("deletecollection as a user without rights: %d %s, want 403", resp.StatusCode, data)
		}
		intact(t, "widgetsf.e2e.example.com")
	})

	t.Run("creates in a mapped or private group are refused in JSON, YAML, protobuf and CBOR", func(t *testing.T) {
		for _, tc := range []struct{ name, group string }{
			{"widgets.cluster.x-k8s.io", "cluster.x-k8s.io"},
			{"machines.cluster.x-k8s.io", "cluster.x-k8s.io"},
			{"gizmos.cluster.hypershift.openshift.io", "cluster.hypershift.openshift.io"},
			{"widgetsg.e2e.example.com", "infrastructure.cluster.x-k8s.io"},
			{"widgetsg.e2e.example.com", "infrastructure.cluster.hypershift.openshift.io"},
		} {
			c := testCRD(tc.name)
			c.Spec.Group = tc.group
			for encoding, post := range map[string]func() (int, string){
				"JSON": func() (int, string) {
					data, _ := json.Marshal(c)
					resp, out := rp.do(t, http.MethodPost, crdsPath, string(data), "Content-Type: application/json")
					return resp.StatusCode, string(out)
				},
				"YAML": func() (int, string) {
					resp, out := rp.do(t, http.MethodPost, crdsPath, crdYAML(tc.name, tc.group), "Content-Type: application/yaml")
					return resp.StatusCode, string(out)
				},
				"protobuf": func() (int, string) {
					resp, out := rp.do(t, http.MethodPost, crdsPath, string(protobufCRD(t, c)), "Content-Type: "+runtime.ContentTypeProtobuf)
					return resp.StatusCode, string(out)
				},
				"CBOR": func() (int, string) {
					data, err := cbordirect.Marshal(map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
						"metadata": map[string]any{"name": tc.name}, "spec": map[string]any{"group": tc.group}})
					if err != nil {
						t.Fatal(err)
					}
					resp, out := rp.do(t, http.MethodPost, crdsPath, string(data), "Content-Type: application/cbor")
					return resp.StatusCode, string(out)
				},
			} {
				if code, out := post(); code != http.StatusForbidden {
					t.Errorf("create %s (group %s) in %s: %d %s, want 403", tc.name, tc.group, encoding, code, out)
				}
			}
		}
		// Through client-go's apiextensions clientset in protobuf.
		cfg := proxy.Config(env.AdminToken)
		cfg.ContentType = runtime.ContentTypeProtobuf
		cs, err := apiextensionsclient.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, testCRD("gadgets.cluster.x-k8s.io"), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("protobuf create through client-go: %v, want Forbidden", err)
		}
		// A body the proxy cannot read is not sent on.
		for contentType, code := range map[string]int{"application/json": 400, runtime.ContentTypeProtobuf: 400, "application/cbor": 400, "text/plain": 415} {
			if resp, out := rp.do(t, http.MethodPost, crdsPath, "\xff{", "Content-Type: "+contentType); resp.StatusCode != code {
				t.Errorf("create with an undecodable %s body: %d %s, want %d", contentType, resp.StatusCode, out, code)
			}
		}
		for _, name := range []string{"widgets.cluster.x-k8s.io", "gizmos.cluster.hypershift.openshift.io", "widgetsg.e2e.example.com", "gadgets.cluster.x-k8s.io"} {
			if err := directCRDs.Get(ctx, client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
				t.Errorf("CRD %s: %v, want it never created", name, err)
			}
		}
		// A CRD of another group is created, its protobuf body passed on as it is.
		other := testCRD("doohickeys.e2e.example.com")
		created, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, other, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("protobuf create of another group's CRD: %v", err)
		}
		t.Cleanup(func() { _ = directCRDs.Delete(ctx, created) })
		intact(t, other.Name)
	})

	t.Run("bodies are read as the apiserver reads them", func(t *testing.T) {
		// Member names match exactly and the last of repeated members wins.
		for name, body := range map[string]string{
			"Metadata beside metadata": `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.cluster.x-k8s.io"},"Metadata":{"name":"widgetsh.e2e.example.com"},` +
				`"spec":{"group":"cluster.x-k8s.io","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`,
			"a repeated name": `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgetsh.e2e.example.com","name":"widgets.cluster.x-k8s.io"},` +
				`"spec":{"group":"cluster.x-k8s.io","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`,
		} {
			if resp, out := rp.do(t, http.MethodPost, crdsPath, body, "Content-Type: application/json"); resp.StatusCode != http.StatusForbidden {
				t.Errorf("create with %s: %d %s, want 403", name, resp.StatusCode, out)
			}
		}
		if err := directCRDs.Get(ctx, client.ObjectKey{Name: "widgets.cluster.x-k8s.io"}, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
			t.Errorf("widgets.cluster.x-k8s.io: %v, want it never created", err)
		}

		before := &apiextensionsv1.CustomResourceDefinition{}
		if err := directCRDs.Get(ctx, client.ObjectKey{Name: privateMachines}, before); err != nil {
			t.Fatal(err)
		}
		for name, patch := range map[string]string{
			"Path beside path":   `[{"op":"replace","path":"/spec/names/categories","Path":"/metadata/labels/x","value":["x"]}]`,
			"From beside from":   `[{"op":"copy","from":"/spec/names","From":"/metadata/labels","path":"/metadata/annotations"}]`,
			"Op beside op":       `[{"Op":"test","op":"replace","path":"/spec/names/categories","value":["x"]}]`,
			"the last path wins": `[{"op":"replace","path":"/metadata/labels/x","path":"/spec/names/categories","value":["x"]}]`,
		} {
			resp, out := rp.do(t, http.MethodPatch, crdsPath+"/"+platformMachines, patch, "Content-Type: application/json-patch+json")
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("JSON patch with %s: %d %s, want 403", name, resp.StatusCode, out)
			}
		}
		// An update whose spec differs only in a repeated spec member: the apiserver decodes the second
		// spec over the first, so a member only the first one has stays.
		current := rp.mustDo(t, http.StatusOK, http.MethodGet, crdsPath+"/"+platformMachines, "")
		obj := jsonObject(t, current)
		spec, _ := json.Marshal(obj["spec"])
		delete(obj, "spec")
		rest, _ := json.Marshal(obj)
		update := `{"spec":{"preserveUnknownFields":true},` + string(rest[1:len(rest)-1]) + `,"spec":` + string(spec) + `}`
		if resp, out := rp.do(t, http.MethodPut, crdsPath+"/"+platformMachines, update, "Content-Type: application/json"); resp.StatusCode != http.StatusForbidden {
			t.Errorf("update with a repeated spec: %d %s, want 403", resp.StatusCode, out)
		}
		after := &apiextensionsv1.CustomResourceDefinition{}
		if err := directCRDs.Get(ctx, client.ObjectKey{Name: privateMachines}, after); err != nil {
			t.Fatal(err)
		}
		if after.Spec.PreserveUnknownFields || after.Spec.Scope != before.Spec.Scope || strings.Join(after.Spec.Names.Categories, ",") != strings.Join(before.Spec.Names.Categories, ",") {
			t.Errorf("the private CRD's spec changed: scope %s, categories %v", after.Spec.Scope, after.Spec.Names.Categories)
		}
		intact(t)
	})

	t.Run("private names do not exist", func(t *testing.T) {
		const absent = "nosuch.e2e.example.com"
		c := testCRD(privateMachines)
		c.Spec.Group = privateCore
		full, _ := json.Marshal(c)
		for _, req := range []nameRequest{
			{http.MethodGet, "", "", ""},
			{http.MethodPut, "", string(full), "application/json"},
			{http.MethodPatch, "", `{"metadata":{"labels":{"a":"b"}}}`, "application/merge-patch+json"},
			{http.MethodDelete, "", "", ""},
		} {
			answersAsAbsent(t, rp, rd, crdsPath, privateMachines, absent, req)
		}
		if resp, data := rp.do(t, http.MethodGet, crdsPath+"/"+privateMachines+"/status", ""); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET of the status of %s: %d %s, want 404", privateMachines, resp.StatusCode, data)
		}
		// A client the apiserver would refuse is refused as it would be for a CRD that does not exist.
		user, userDirect := newRawClient(t, proxy.Config(env.UserToken)), newRawClient(t, env.DirectConfig(env.UserToken))
		for _, method := range []string{http.MethodGet, http.MethodDelete, http.MethodPatch} {
			answersAsAbsent(t, user, userDirect, crdsPath, privateMachines, absent, nameRequest{method, "", `{}`, "application/merge-patch+json"})
		}
		// A hidden CRD is answered as absent, and stays.
		hidden := "gadgetsj.infrastructure.cluster.x-k8s.io"
		create(t, "hidden-by-path", hidden)
		for _, tc := range []struct{ method, body, contentType string }{
			{http.MethodDelete, "", ""},
			{http.MethodDelete, `{"propagationPolicy":"Background"}`, "application/json"},
			{http.MethodPatch, `[{"op":"add","path":"/metadata/labels/x","value":"y"}]`, "application/json-patch+json"},
			{http.MethodPut, string(full), "application/json"},
		} {
			if resp, data := rp.do(t, tc.method, crdsPath+"/"+hidden, tc.body, "Content-Type: "+tc.contentType); resp.StatusCode != http.StatusNotFound {
				t.Errorf("%s %s: %d %s, want 404", tc.method, hidden, resp.StatusCode, data)
			}
		}
		intact(t, hidden)
		stored := &apiextensionsv1.CustomResourceDefinition{}
		if err := directCRDs.Get(ctx, client.ObjectKey{Name: hidden}, stored); err != nil || stored.Labels["x"] != "" {
			t.Errorf("the hidden CRD changed: %v %v", err, stored.Labels)
		}

		// Server-side apply would create it: refused as a create.
		if resp, data := rp.do(t, http.MethodPatch, crdsPath+"/"+privateMachines+"?fieldManager=e2e", string(full), "Content-Type: application/apply-patch+yaml"); resp.StatusCode != http.StatusForbidden {
			t.Errorf("apply of %s: %d %s, want 403", privateMachines, resp.StatusCode, data)
		}

		// Selecting a private name selects nothing; excluding it excludes nothing.
		if got := listNames(t, rp.mustDo(t, http.StatusOK, http.MethodGet, crdsPath+query("fieldSelector", "metadata.name="+privateMachines), "")); len(got) != 0 {
			t.Errorf("list of metadata.name=%s: %v, want nothing", privateMachines, got)
		}
		got := listNames(t, rp.mustDo(t, http.StatusOK, http.MethodGet, crdsPath+query("fieldSelector", "metadata.name!="+privateMachines+",metadata.name!=widgets.e2e.example.com"), ""))
		if i := sort.SearchStrings(got, platformMachines); i == len(got) || got[i] != platformMachines {
			t.Errorf("list of metadata.name!=%s lacks %s: %v", privateMachines, platformMachines, got)
		}
		for _, name := range got {
			if strings.Contains(name, "hypershift") {
				t.Errorf("the list shows %s", name)
			}
		}
		for _, path := range []string{
			crdsPath + query("watch", "1", "timeoutSeconds", "2", "fieldSelector", "metadata.name="+privateMachines),
			"/apis/apiextensions.k8s.io/v1/watch/customresourcedefinitions/" + privateMachines + "?timeoutSeconds=2",
			"/apis/apiextensions.k8s.io/v1/watch/customresourcedefinitions/" + platformMachines + "?timeoutSeconds=2",
		} {
			watchSeesOnly(ctx, t, rp, path, platformMachines)
		}
		intact(t)
	})

	t.Run("list and watch by labelSelector show the private CRDs under their upstream names only", func(t *testing.T) {
		const value = "list-and-watch"
		create(t, value, "gadgetsi.infrastructure.cluster.x-k8s.io", "gizmosi.cluster.hypershift.openshift.io", "widgetsi.e2e.example.com")
		label(t, value, platformMachines, privateMachines)
		want := []string{platformMachines, "widgetsi.e2e.example.com"}
		q := query("labelSelector", isolationLabel+"="+value)
		data := rp.mustDo(t, http.StatusOK, http.MethodGet, crdsPath+q, "")
		if got := listNames(t, data); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("list: %v, want %v", got, want)
		}
		var list apiextensionsv1.CustomResourceDefinitionList
		if err := json.Unmarshal(data, &list); err != nil {
			t.Fatal(err)
		}
		for _, c := range list.Items {
			if c.Name == platformMachines && (c.Spec.Group != "cluster.x-k8s.io" || string(c.UID) != string(privateUID(t, ctx, directCRDs))) {
				t.Errorf("the list's %s is not the private CRD: group %s", c.Name, c.Spec.Group)
			}
		}
		added, seen := watchAdded(ctx, t, rp, crdsPath+q+"&watch=1&timeoutSeconds=2")
		if group := field(added[platformMachines], "spec.group"); group != "cluster.x-k8s.io" {
			t.Errorf("watch: %s of group %v", platformMachines, group)
		}
		if strings.Join(seen, ",") != strings.Join(want, ",") {
			t.Errorf("watch: ADDED %v, want %v", seen, want)
		}
		// Through a Table too, as kubectl get crd -l asks.
		rows := tableNames(t, rp.mustDo(t, http.StatusOK, http.MethodGet, crdsPath+q, "", "Accept: application/json;as=Table;v=v1;g=meta.k8s.io"))
		if strings.Join(rows, ",") != strings.Join(want, ",") {
			t.Errorf("table rows: %v, want %v", rows, want)
		}
		// Asked for YAML, the proxy answers YAML, as the apiserver does, translated.
		asYAML, err := yaml.YAMLToJSON(rp.mustDo(t, http.StatusOK, http.MethodGet, crdsPath+q, "", "Accept: application/yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if got := listNames(t, asYAML); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("list asked in YAML: %v, want %v", got, want)
		}
		intact(t)
	})
}

// testCRD is a minimal valid CRD named <plural>.<group>.
func testCRD(name string) *apiextensionsv1.CustomResourceDefinition {
	plural, group, _ := strings.Cut(name, ".")
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: strings.ToUpper(plural[:1]) + plural[1:]},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}}},
	}
}

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
