package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/tests/framework"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

const (
	apiServicesPath = "/apis/apiregistration.k8s.io/v1/apiservices"
	// privateV1beta2 is kube-apiserver's automanaged APIService of the private CRDs of
	// cluster.hypershift.openshift.io at v1beta2; upstreamV1beta2 its name through the proxy.
	privateV1beta2  = "v1beta2.cluster.hypershift.openshift.io"
	upstreamV1beta2 = "v1beta2.cluster.x-k8s.io"
	// platformV1beta1 is the automanaged APIService of the platform's own CAPI CRDs at v1beta1 (which
	// every platform release serves), whose name through the proxy is that of the private CRDs' v1beta1.
	platformV1beta1 = "v1beta1.cluster.x-k8s.io"
	// hiddenAPIService is the automanaged APIService of a platform CRD at a version no route serves
	// (hiddenCRD, created by the test): through the proxy it does not exist.
	hiddenAPIService = "v1alpha9.infrastructure.cluster.x-k8s.io"
	hiddenCRD        = "gadgetsv.infrastructure.cluster.x-k8s.io"
	// absentAPIService exists nowhere: the apiserver's answers for it are what the proxy must answer for
	// the names that do not exist through it.
	absentAPIService = "v1alpha1.nosuch.e2e.example.com"
	// apiServiceLabel marks the APIServices of a case, so that a labelSelector selects them.
	apiServiceLabel = "e2e.hypershift.openshift.io/apiservice"
)

// TestAPIServices proves that APIServices through the proxy are those of an apiserver serving the
// upstream CRDs: the private group versions' automanaged APIServices under their upstream names, and
// neither the private names nor the platform's own APIServices of the upstream groups, in lists, watches,
// Tables, metadata-only reads and field selectors; that a name that does not exist through the proxy is
// answered as the apiserver answers one that does not exist, after it authorized the client; that no
// APIService of a mapped group can be created, and no mapped one changed or deleted, through the proxy;
// and that a deletecollection deletes only what a client sees.
func TestAPIServices(t *testing.T) {
	ctx := context.Background()
	rp, rd := viaProxy(t), direct(t)
	directClient := directAPIServiceClient(t)

	// The platform CRD at a version no route serves, and its automanaged APIService.
	hidden := testCRD(hiddenCRD)
	hidden.Spec.Versions[0].Name = "v1alpha9"
	if err := directCRDClient(t).Create(ctx, hidden); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = directCRDClient(t).Delete(ctx, hidden) })
	privateNames := waitForAPIServices(ctx, t, directClient, hiddenAPIService)
	// want are the mapped-group APIServices through the proxy: the private ones of the group versions the
	// route table serves, under their upstream names.
	want := sets.New[string]()
	for _, name := range privateNames {
		if up := upstreamAPIServiceName(name); servedGroupVersions().Has(up) {
			want.Insert(up)
		}
	}
	if !want.Has(upstreamV1beta2) || !want.Has(platformV1beta1) {
		t.Fatalf("the private APIServices %v lack %s or %s", sets.List(want), upstreamV1beta2, platformV1beta1)
	}
	// mapped returns the names of a mapped group (upstream or private) of a list through the proxy.
	mapped := func(names []string) []string {
		out := []string{}
		for _, n := range names {
			if _, group, _ := strings.Cut(n, "."); mappedGroup(group) {
				out = append(out, n)
			}
		}
		sort.Strings(out)
		return out
	}
	intact := func(t *testing.T) {
		t.Helper()
		for _, name := range []string{privateV1beta2, platformV1beta1, hiddenAPIService} {
			got := &apiregistrationv1.APIService{}
			if err := directClient.Get(ctx, client.ObjectKey{Name: name}, got); err != nil || got.DeletionTimestamp != nil {
				t.Errorf("APIService %s: %v, deleting %v", name, err, got.DeletionTimestamp)
			}
		}
	}

	t.Run("the list is an apiserver's serving the upstream CRDs", func(t *testing.T) {
		data := rp.mustDo(t, http.StatusOK, http.MethodGet, apiServicesPath, "")
		if got := mapped(listNames(t, data)); strings.Join(got, ",") != strings.Join(sets.List(want), ",") {
			t.Errorf("APIServices of the mapped groups through the proxy:\n got %v\nwant %v", got, sets.List(want))
		}
		if !strings.Contains(string(data), `"name":"v1.apps"`) || strings.Contains(string(data), "hypershift") {
			t.Errorf("the list lacks v1.apps or names a private group")
		}
		// Each is the private APIService, renamed.
		var list apiregistrationv1.APIServiceList
		if err := json.Unmarshal(data, &list); err != nil {
			t.Fatal(err)
		}
		for _, s := range list.Items {
			if s.Name == upstreamV1beta2 && (s.Spec.Group != "cluster.x-k8s.io" || s.UID != uidOf(ctx, t, directClient, privateV1beta2)) {
				t.Errorf("%s through the proxy: group %s, uid %s, want the private APIService", s.Name, s.Spec.Group, s.UID)
			}
			if s.Name == platformV1beta1 && s.UID == uidOf(ctx, t, directClient, platformV1beta1) {
				t.Errorf("%s through the proxy is the platform's APIService", s.Name)
			}
		}
		// What an apiserver serving the upstream CRDs has an APIService for, its discovery shows.
		var groups metav1.APIGroupList
		if err := json.Unmarshal(rp.mustDo(t, http.StatusOK, http.MethodGet, "/apis", "", "Accept: application/json"), &groups); err != nil {
			t.Fatal(err)
		}
		discovered := []string{}
		for _, g := range groups.Groups {
			for _, v := range g.Versions {
				if mappedGroup(g.Name) {
					discovered = append(discovered, v.Version+"."+g.Name)
				}
			}
		}
		sort.Strings(discovered)
		if strings.Join(discovered, ",") != strings.Join(sets.List(want), ",") {
			t.Errorf("discovery through the proxy serves %v, the APIServices are %v", discovered, sets.List(want))
		}

		// In pages, with the typed client of kube-aggregator in protobuf: the proxy answers JSON.
		cfg := proxy.Config(env.AdminToken)
		cfg.ContentType = runtime.ContentTypeProtobuf
		cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
		cs, err := aggregator.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var paged []string
		opts := metav1.ListOptions{Limit: 7}
		for {
			page, err := cs.ApiregistrationV1().APIServices().List(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range page.Items {
				paged = append(paged, s.Name)
			}
			if opts.Continue = page.Continue; opts.Continue == "" {
				break
			}
		}
		if got := mapped(paged); strings.Join(got, ",") != strings.Join(sets.List(want), ",") {
			t.Errorf("paged list: %v, want %v", got, sets.List(want))
		}
	})

	t.Run("GET by the upstream name is the private APIService but for the group", func(t *testing.T) {
		got := rp.mustDo(t, http.StatusOK, http.MethodGet, apiServicesPath+"/"+upstreamV1beta2, "")
		stored := rd.mustDo(t, http.StatusOK, http.MethodGet, apiServicesPath+"/"+privateV1beta2, "")
		sameButGroups(t, "APIService", got, stored)
		got = rp.mustDo(t, http.StatusOK, http.MethodGet, apiServicesPath+"/"+upstreamV1beta2+"/status", "")
		sameButGroups(t, "APIService status", got, stored)
	})

	t.Run("private and hidden names do not exist", func(t *testing.T) {
		for _, name := range []string{privateV1beta2, hiddenAPIService, "v1alpha9.cluster.hypershift.openshift.io"} {
			full, _ := json.Marshal(testAPIService(name))
			for _, req := range []nameRequest{
				{http.MethodGet, "", "", ""},
				{http.MethodGet, "/status", "", ""},
				{http.MethodPut, "", string(full), "application/json"},
				{http.MethodPut, "/status", string(full), "application/json"},
				{http.MethodPatch, "", `{"metadata":{"labels":{"a":"b"}}}`, "application/merge-patch+json"},
				{http.MethodDelete, "", "", ""},
				{http.MethodDelete, "", `{"propagationPolicy":"Background"}`, "application/json"},
			} {
				answersAsAbsent(t, rp, rd, apiServicesPath, name, absentAPIService, req)
			}
		}
		// Server-side apply would create it: refused as a create.
		apply := `{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"` + hiddenAPIService + `"}}`
		if resp, data := rp.do(t, http.MethodPatch, apiServicesPath+"/"+hiddenAPIService+"?fieldManager=e2e", apply, "Content-Type: application/apply-patch+yaml"); resp.StatusCode != http.StatusForbidden {
			t.Errorf("apply of %s: %d %s, want 403", hiddenAPIService, resp.StatusCode, data)
		}
		// Field selectors: a name that does not exist through the proxy selects nothing, and excluding it
		// excludes nothing.
		for _, name := range []string{privateV1beta2, hiddenAPIService} {
			if got := listNames(t, rp.mustDo(t, http.StatusOK, http.MethodGet, apiServicesPath+query("fieldSelector", "metadata.name="+name), "")); len(got) != 0 {
				t.Errorf("list of metadata.name=%s: %v, want nothing", name, got)
			}
			if got := mapped(listNames(t, rp.mustDo(t, http.StatusOK, http.MethodGet, apiServicesPath+query("fieldSelector", "metadata.name!="+name), ""))); strings.Join(got, ",") != strings.Join(sets.List(want), ",") {
				t.Errorf("list of metadata.name!=%s: %v, want %v", name, got, sets.List(want))
			}
		}
		if got := listNames(t, rp.mustDo(t, http.StatusOK, http.MethodGet, apiServicesPath+query("fieldSelector", "metadata.name=="+upstreamV1beta2), "")); strings.Join(got, ",") != upstreamV1beta2 {
			t.Errorf("list of metadata.name==%s: %v", upstreamV1beta2, got)
		}
		intact(t)
	})

	t.Run("unclean and escaped paths reach no private object", func(t *testing.T) {
		for _, pair := range [][2]string{{apiServicesPath, privateV1beta2}, {crdsPath, privateMachines}} {
			collection, name := pair[0], pair[1]
			group, _, _ := strings.Cut(strings.TrimPrefix(collection, "/apis/"), "/")
			resource := collection[strings.LastIndex(collection, "/")+1:]
			for _, path := range []string{
				collection + "//" + name,
				strings.Replace(collection, "/v1/", "/v1//", 1) + "/" + name,
				strings.Replace(collection, group+"/", group+"//", 1) + "/" + name,
				collection + "/./" + name,
				collection + "/x/../" + name,
				collection + "/" + name + "/",
				collection + "/" + strings.Replace(name, ".", "%2E", 1),
				collection + "/" + strings.ReplaceAll(name, ".", "%2e"),
				"/apis/" + group + "/v1/watch/" + resource + "//" + name + "?timeoutSeconds=1",
			} {
				resp, data := rp.do(t, http.MethodGet, path, "")
				if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(data), `"kind":"Status"`) {
					t.Errorf("GET %s: %d %s, want 404", path, resp.StatusCode, data)
				}
			}
		}
	})

	t.Run("a client the apiserver refuses is refused before existence", func(t *testing.T) {
		user, userDirect := newRawClient(t, proxy.Config(env.UserToken)), newRawClient(t, env.DirectConfig(env.UserToken))
		for _, method := range []string{http.MethodGet, http.MethodDelete, http.MethodPatch} {
			wantResp, want := userDirect.do(t, method, apiServicesPath+"/"+absentAPIService, `{}`, "Content-Type: application/merge-patch+json")
			if wantResp.StatusCode != http.StatusForbidden {
				t.Fatalf("the user may %s APIServices: %d %s", method, wantResp.StatusCode, want)
			}
			for _, name := range []string{privateV1beta2, hiddenAPIService, upstreamV1beta2} {
				answersAsAbsent(t, user, userDirect, apiServicesPath, name, absentAPIService, nameRequest{method, "", `{}`, "application/merge-patch+json"})
			}
		}
		// The list, and creates the proxy refuses.
		created, _ := json.Marshal(testAPIService("v1alpha9.cluster.x-k8s.io"))
		for _, tc := range []struct{ method, body string }{{http.MethodGet, ""}, {http.MethodPost, string(created)}, {http.MethodPost, "{"}} {
			wantResp, want := userDirect.do(t, tc.method, apiServicesPath, tc.body, "Content-Type: application/json")
			if resp, got := user.do(t, tc.method, apiServicesPath, tc.body, "Content-Type: application/json"); resp.StatusCode != wantResp.StatusCode || string(got) != string(want) {
				t.Errorf("%s %s as a user: %d %s\nwant %d %s", tc.method, tc.body, resp.StatusCode, got, wantResp.StatusCode, want)
			}
		}
	})

	t.Run("watches, Tables and metadata-only reads show the upstream names only", func(t *testing.T) {
		watchCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		added, names := watchAdded(watchCtx, t, rp, apiServicesPath+query("watch", "1", "timeoutSeconds", "3"))
		if got := mapped(names); strings.Join(got, ",") != strings.Join(sets.List(want), ",") {
			t.Errorf("watch: ADDED %v, want %v", got, sets.List(want))
		}
		if group := field(added[upstreamV1beta2], "spec.group"); group != "cluster.x-k8s.io" {
			t.Errorf("watch: %s of group %v", upstreamV1beta2, group)
		}
		// By name: in a fieldSelector the upstream name is watched, by path a private or hidden name
		// is an open stream without events.
		added, names = watchAdded(watchCtx, t, rp, apiServicesPath+query("watch", "1", "timeoutSeconds", "2", "fieldSelector", "metadata.name="+upstreamV1beta2))
		if strings.Join(names, ",") != upstreamV1beta2 || field(added[upstreamV1beta2], "spec.group") != "cluster.x-k8s.io" {
			t.Errorf("watch by name: ADDED %v, group %v", names, field(added[upstreamV1beta2], "spec.group"))
		}
		for _, name := range []string{privateV1beta2, hiddenAPIService} {
			watchSeesOnly(watchCtx, t, rp, "/apis/apiregistration.k8s.io/v1/watch/apiservices/"+name+"?timeoutSeconds=1")
			watchSeesOnly(watchCtx, t, rp, apiServicesPath+query("watch", "1", "timeoutSeconds", "1", "fieldSelector", "metadata.name="+name))
		}
		watchSeesOnly(watchCtx, t, rp, "/apis/apiregistration.k8s.io/v1/watch/apiservices/"+upstreamV1beta2+"?timeoutSeconds=1", upstreamV1beta2)

		// kubectl get apiservices asks for a Table.
		rows := tableNames(t, rp.mustDo(t, http.StatusOK, http.MethodGet, apiServicesPath, "", "Accept: application/json;as=Table;v=v1;g=meta.k8s.io"))
		if got := mapped(rows); strings.Join(got, ",") != strings.Join(sets.List(want), ",") {
			t.Errorf("table rows: %v, want %v", got, sets.List(want))
		}
		if out := kubectlAs(t, env.AdminToken, "get", "apiservices", upstreamV1beta2, "--no-headers"); !strings.HasPrefix(out, upstreamV1beta2+" ") {
			t.Errorf("kubectl get apiservices %s: %s", upstreamV1beta2, out)
		}
		if out, err := runKubectl(t, env.AdminToken, "get", "apiservices", privateV1beta2); err == nil || !strings.Contains(out, `"`+privateV1beta2+`" not found`) {
			t.Errorf("kubectl get apiservices %s: %v %s, want not found", privateV1beta2, err, out)
		}

		// A metadata-only client asks for protobuf first.
		mc, err := metadata.NewForConfig(proxy.Config(env.AdminToken))
		if err != nil {
			t.Fatal(err)
		}
		res := mc.Resource(apiregistrationv1.SchemeGroupVersion.WithResource("apiservices"))
		partial, err := res.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		names = nil
		for _, p := range partial.Items {
			names = append(names, p.Name)
		}
		if got := mapped(names); strings.Join(got, ",") != strings.Join(sets.List(want), ",") {
			t.Errorf("metadata-only list: %v, want %v", got, sets.List(want))
		}
		if got, err := res.Get(ctx, upstreamV1beta2, metav1.GetOptions{}); err != nil || got.Name != upstreamV1beta2 || got.Labels["kube-aggregator.kubernetes.io/automanaged"] == "" {
			t.Errorf("metadata-only GET: %v %v", got, err)
		}
		if _, err := res.Get(ctx, privateV1beta2, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("metadata-only GET of %s: %v, want NotFound", privateV1beta2, err)
		}
	})

	t.Run("APIServices of mapped groups cannot be created", func(t *testing.T) {
		cfg := proxy.Config(env.AdminToken)
		cfg.ContentType = runtime.ContentTypeProtobuf
		cs, err := aggregator.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		directCS, err := aggregator.NewForConfig(env.DirectConfig(env.AdminToken))
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct{ name, group string }{
			{"v1alpha9.cluster.x-k8s.io", "cluster.x-k8s.io"},
			{upstreamV1beta2, "cluster.x-k8s.io"},
			{"v1alpha9.cluster.hypershift.openshift.io", "cluster.hypershift.openshift.io"},
			{"v1alpha9.e2eapis.example.com", "infrastructure.cluster.x-k8s.io"},
			{"v1alpha9.e2eapis.example.com", "bootstrap.cluster.hypershift.openshift.io"},
		} {
			s := testAPIService(tc.name)
			s.Spec.Group = tc.group
			// The apiserver would take it (the report: a dry run answered 201), but for the mismatched names.
			if _, err := directCS.ApiregistrationV1().APIServices().Create(ctx, s, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil &&
				!apierrors.IsInvalid(err) && !apierrors.IsAlreadyExists(err) {
				t.Errorf("direct dry run of %s: %v", tc.name, err)
			}
			for _, dryRun := range [][]string{{metav1.DryRunAll}, nil} {
				_, err := cs.ApiregistrationV1().APIServices().Create(ctx, s, metav1.CreateOptions{DryRun: dryRun})
				if !apierrors.IsForbidden(err) {
					t.Errorf("create %s (group %s, dry run %v) in protobuf: %v, want Forbidden", tc.name, tc.group, dryRun, err)
				}
				body, _ := json.Marshal(s)
				q := ""
				if dryRun != nil {
					q = "?dryRun=All"
				}
				if resp, data := rp.do(t, http.MethodPost, apiServicesPath+q, string(body), "Content-Type: application/json"); resp.StatusCode != http.StatusForbidden {
					t.Errorf("create %s (group %s, dry run %v) in JSON: %d %s, want 403", tc.name, tc.group, dryRun, resp.StatusCode, data)
				}
			}
			if tc.name != upstreamV1beta2 {
				if _, err := directCS.ApiregistrationV1().APIServices().Get(ctx, tc.name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("APIService %s: %v, want it never created", tc.name, err)
				}
			}
		}
		// Another group's is created, its protobuf body passed on as it is.
		other := testAPIService("v1alpha9.e2eapis.example.com")
		if _, err := cs.ApiregistrationV1().APIServices().Create(ctx, other, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("dry run of another group's APIService: %v", err)
		}
		intact(t)
	})

	t.Run("the mapped APIServices cannot be changed or deleted", func(t *testing.T) {
		before := &apiregistrationv1.APIService{}
		if err := directClient.Get(ctx, client.ObjectKey{Name: privateV1beta2}, before); err != nil {
			t.Fatal(err)
		}
		current := rp.mustDo(t, http.StatusOK, http.MethodGet, apiServicesPath+"/"+upstreamV1beta2, "")
		relabelled := strings.Replace(string(current), `"labels":{`, `"labels":{"e2e":"x",`, 1)
		for _, tc := range []struct{ method, path, body, contentType string }{
			{http.MethodPut, "", relabelled, "application/json"},
			{http.MethodPut, "/status", relabelled, "application/json"},
			{http.MethodPatch, "", `{"metadata":{"labels":{"e2e":"x"}}}`, "application/merge-patch+json"},
			{http.MethodPatch, "", `[{"op":"add","path":"/metadata/labels/e2e","value":"x"}]`, "application/json-patch+json"},
			{http.MethodPatch, "/status", `{"status":{"conditions":[]}}`, "application/merge-patch+json"},
			{http.MethodPatch, "?fieldManager=e2e&force=true", `{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"` + upstreamV1beta2 + `","labels":{"e2e":"x"}}}`, "application/apply-patch+yaml"},
			{http.MethodDelete, "", "", ""},
			{http.MethodDelete, "", `{"propagationPolicy":"Background"}`, "application/json"},
		} {
			resp, data := rp.do(t, tc.method, apiServicesPath+"/"+upstreamV1beta2+tc.path, tc.body, "Content-Type: "+tc.contentType)
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(data), "automanaged") || !strings.Contains(string(data), `\"`+upstreamV1beta2+`\"`) {
				t.Errorf("%s %s%s: %d %s, want 403 saying why", tc.method, upstreamV1beta2, tc.path, resp.StatusCode, data)
			}
		}
		viaProxy := directAPIServiceClientFor(t, proxy.Config(env.AdminToken))
		s := &apiregistrationv1.APIService{}
		if err := viaProxy.Get(ctx, client.ObjectKey{Name: upstreamV1beta2}, s); err != nil {
			t.Fatal(err)
		}
		if err := viaProxy.Delete(ctx, s); !apierrors.IsForbidden(err) {
			t.Errorf("delete through controller-runtime: %v, want Forbidden", err)
		}
		after := &apiregistrationv1.APIService{}
		if err := directClient.Get(ctx, client.ObjectKey{Name: privateV1beta2}, after); err != nil {
			t.Fatal(err)
		}
		if after.ResourceVersion != before.ResourceVersion || after.DeletionTimestamp != nil {
			t.Errorf("the private APIService changed: resourceVersion %s -> %s", before.ResourceVersion, after.ResourceVersion)
		}
		intact(t)
	})

	t.Run("deletecollection deletes only what a client sees", func(t *testing.T) {
		// label sets the case's label on APIServices straight on the backend, until the test ends.
		label := func(t *testing.T, value string, names ...string) {
			t.Helper()
			labelUntilEnd(ctx, t, directClient, func(name string) client.Object {
				return &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: name}}
			}, apiServiceLabel, value, names...)
		}
		// create creates local APIServices of groups of their own straight on the backend, labelled value,
		// deleted when the test ends.
		create := func(t *testing.T, value string, names ...string) {
			t.Helper()
			for _, name := range names {
				s := testAPIService(name)
				s.Spec.Service, s.Spec.InsecureSkipTLSVerify = nil, false
				s.Labels = map[string]string{apiServiceLabel: value}
				createUntilEnd(ctx, t, directClient, s)
			}
		}
		exists := func(t *testing.T, name string) bool {
			t.Helper()
			s := &apiregistrationv1.APIService{}
			err := directClient.Get(ctx, client.ObjectKey{Name: name}, s)
			if err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			return err == nil && s.DeletionTimestamp == nil
		}

		create(t, "with-private", "v1alpha1.e2edca.example.com")
		label(t, "with-private", privateV1beta2, hiddenAPIService)
		for _, q := range []string{
			query("labelSelector", apiServiceLabel+"=with-private"),
			query("labelSelector", apiServiceLabel+"=with-private", "fieldSelector", "metadata.name!="+privateV1beta2),
			query("fieldSelector", "metadata.name="+upstreamV1beta2),
		} {
			rp.expect(t, framework.ExpectAnswerInput{What: "deletecollection" + q, WantCode: http.StatusForbidden, WantMentions: `\"` + upstreamV1beta2 + `\"`},
				http.MethodDelete, apiServicesPath+q, "")
		}
		if !exists(t, "v1alpha1.e2edca.example.com") {
			t.Error("a refused deletecollection deleted v1alpha1.e2edca.example.com")
		}

		create(t, "visible", "v1alpha1.e2edcb.example.com", "v1alpha1.e2edcc.example.com")
		label(t, "visible", hiddenAPIService)
		rp.expect(t, framework.ExpectAnswerInput{What: "deletecollection", WantCode: http.StatusOK, WantItems: []string{"v1alpha1.e2edcb.example.com", "v1alpha1.e2edcc.example.com"}},
			http.MethodDelete, apiServicesPath+query("labelSelector", apiServiceLabel+"=visible"), `{"propagationPolicy":"Background"}`, "Content-Type: application/json")
		for _, name := range []string{"v1alpha1.e2edcb.example.com", "v1alpha1.e2edcc.example.com"} {
			if exists(t, name) {
				t.Errorf("%s was not deleted", name)
			}
		}
		// Selecting a name that does not exist through the proxy deletes nothing.
		for _, name := range []string{privateV1beta2, hiddenAPIService} {
			rp.expect(t, framework.ExpectAnswerInput{What: "deletecollection of " + name, WantCode: http.StatusOK, WantItems: []string{}},
				http.MethodDelete, apiServicesPath+query("fieldSelector", "metadata.name="+name), "")
		}
		// A user without rights is refused by the backend.
		user := newRawClient(t, proxy.Config(env.UserToken))
		if resp, data := user.do(t, http.MethodDelete, apiServicesPath+query("labelSelector", apiServiceLabel+"=with-private"), ""); resp.StatusCode != http.StatusForbidden ||
			strings.Contains(string(data), "automanaged") {
			t.Errorf("deletecollection as a user without rights: %d %s, want the apiserver's 403", resp.StatusCode, data)
		}
		intact(t)
	})
}

// testAPIService is a valid APIService named <version>.<group>, served by a Service that does not exist.
func testAPIService(name string) *apiregistrationv1.APIService {
	version, group, _ := strings.Cut(name, ".")
	return &apiregistrationv1.APIService{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: apiregistrationv1.APIServiceSpec{Group: group, Version: version, GroupPriorityMinimum: 1000, VersionPriority: 100,
			Service: &apiregistrationv1.ServiceReference{Namespace: "default", Name: "e2e-nosuch", Port: ptr.To[int32](443)}, InsecureSkipTLSVerify: true},
	}
}

// apiServiceScheme knows APIServices, for controller-runtime clients of them.
var apiServiceScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := apiregistrationv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

func directAPIServiceClient(t *testing.T) client.Client {
	t.Helper()
	return directAPIServiceClientFor(t, env.DirectConfig(env.AdminToken))
}

func directAPIServiceClientFor(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: apiServiceScheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitForAPIServices waits until the backend holds kube-apiserver's automanaged APIService of every group
// version the private CRDs serve, and the APIServices named in also, and returns the names of the
// private ones: the autoregistration controller creates them shortly after the CRDs are established.
func waitForAPIServices(ctx context.Context, t *testing.T, c client.Client, also ...string) []string {
	t.Helper()
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := directCRDClient(t).List(ctx, &crds); err != nil {
		t.Fatal(err)
	}
	private := sets.New[string]()
	for _, crd := range crds.Items {
		if _, ok := upstream.UpstreamGroup(crd.Spec.Group); !ok {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if v.Served {
				private.Insert(v.Name + "." + crd.Spec.Group)
			}
		}
	}
	wanted := private.Clone().Insert(also...)
	var missing []string
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var list apiregistrationv1.APIServiceList
		if err := c.List(ctx, &list); err != nil {
			return false, err
		}
		have := sets.New[string]()
		for _, s := range list.Items {
			have.Insert(s.Name)
		}
		missing = sets.List(wanted.Difference(have))
		return len(missing) == 0, nil
	}); err != nil {
		t.Fatalf("the backend never held the APIServices %v: %v", missing, err)
	}
	return sets.List(private)
}

// upstreamAPIServiceName is the upstream name of a private group version's APIService name.
func upstreamAPIServiceName(private string) string {
	version, group, _ := strings.Cut(private, ".")
	up, _ := upstream.UpstreamGroup(group)
	return version + "." + up
}

// servedGroupVersions are the upstream group versions, "<version>.<group>", the route table serves.
func servedGroupVersions() sets.Set[string] {
	out := sets.New[string]()
	for _, r := range translate.NewTable(routes.Routes).Routes() {
		if !r.Unserved {
			out.Insert(r.Upstream.Version + "." + r.Upstream.Group)
		}
	}
	return out
}

// mappedGroup reports whether group is an upstream or a private group of the table.
func mappedGroup(group string) bool {
	_, up := upstream.PrivateGroup(group)
	_, private := upstream.UpstreamGroup(group)
	return up || private
}

func uidOf(ctx context.Context, t *testing.T, c client.Client, name string) types.UID {
	t.Helper()
	s := &apiregistrationv1.APIService{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, s); err != nil {
		t.Fatal(err)
	}
	return s.UID
}
