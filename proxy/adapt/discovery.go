package adapt

import (
	"encoding/json"
	"net/http"
	"sort"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
	"github.com/openshift/hypershift-capi-proxy/proxy/discovery"
	"github.com/openshift/hypershift-capi-proxy/proxy/negotiate"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// discovery serves a discovery request: the proxy's document, plus every routed version upstream serves
// of a resource that the backend serves at another version only (the Adapter converts to it), as if the
// backend served it. An aggregated /apis also refreshes the view of what the backend serves. Documents
// the Adapter does not know (apidiscovery v2beta1) pass unchanged.
//
// The Adapter writes the final document, so it sends the ETag of an aggregated one and answers a
// matching If-None-Match with 304 Not Modified, as kube-apiserver does (discovery.ETag); the proxy
// behind it drops the backend's ETag, which is of the untranslated document. It reads the document in
// JSON and writes it in the media type kube-apiserver would answer the client in (discovery.Encode). The
// error is inprocess.ErrBrokenOff: the proxy's document was broken off, and nothing was written.
func (a *Adapter) discovery(w http.ResponseWriter, r *http.Request, req *classify.Request) error {
	answer := negotiate.Answer(r.Header.Values("Accept"), negotiate.Discovery)
	out := r.Clone(r.Context())
	out.Header.Del("If-None-Match")
	negotiate.Narrow(out.Header, negotiate.Discovery) // JSON, which the Adapter reads; encoded last
	rec, err := record(a.next, out)
	if err != nil {
		return err
	}
	code, data := rec.Code(), rec.Body.Bytes()
	if negotiate.IsJSON(rec.Header().Get("Content-Type")) && (code == http.StatusOK || code == http.StatusNotFound) {
		if augmented, newCode, ok := a.augment(r, req, code, data); ok {
			if code == http.StatusNotFound {
				rec.Header().Set("Content-Type", "application/json")
			}
			code, data = newCode, augmented
		}
	}
	if code == http.StatusOK && negotiate.IsJSON(rec.Header().Get("Content-Type")) {
		if etag, ok := discovery.ETag(data); ok {
			rec.Header().Set("ETag", etag)
			if discovery.NotModified(r.Header, etag) {
				for _, h := range []string{"Content-Type", "Content-Length", "Content-Encoding"} {
					rec.Header().Del(h)
				}
				copyHeader(w, rec.Header())
				w.WriteHeader(http.StatusNotModified)
				return nil
			}
		}
		encoded, contentType, err := discovery.Encode(data, rec.Header().Get("Content-Type"), answer)
		if err != nil {
			status.Write(w, apierrors.NewInternalError(err))
			return nil
		}
		data = encoded
		rec.Header().Set("Content-Type", contentType)
	}
	writeBody(w, rec.Header(), code, data)
	return nil
}

// augment returns the discovery document with the versions the Adapter adds, and false when it leaves
// the document as it is.
func (a *Adapter) augment(r *http.Request, req *classify.Request, code int, data []byte) ([]byte, int, bool) {
	var tm metav1.TypeMeta
	if code == http.StatusOK && json.Unmarshal(data, &tm) != nil {
		return nil, 0, false
	}
	gvk := tm.GroupVersionKind()
	if gvk == apidiscoveryv2.SchemeGroupVersion.WithKind("APIGroupDiscoveryList") {
		l := &apidiscoveryv2.APIGroupDiscoveryList{}
		if json.Unmarshal(data, l) != nil {
			return nil, 0, false
		}
		a.served.observe(l)
		if !a.augmentAggregated(l, a.extras(index(l))) {
			return nil, 0, false
		}
		return encode(l, code)
	}

	view, known := a.served.all(r)
	if !known {
		return nil, 0, false
	}
	extras := a.extras(view)
	switch {
	case code == http.StatusNotFound && req.Version != "":
		// The backend serves no resource at this version; the Adapter may serve some.
		resources := extras[req.Group][req.Version]
		if len(resources) == 0 {
			return nil, 0, false
		}
		l := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: schema.GroupVersion{Group: req.Group, Version: req.Version}.String()}
		addLegacyResources(l, req.Group, resources, a.storageVersionHash(view))
		return encode(l, http.StatusOK)
	case code != http.StatusOK:
		return nil, 0, false
	case gvk.Kind == "APIResourceList" && gvk.Group == "":
		l := &metav1.APIResourceList{}
		gv, err := schema.ParseGroupVersion(req.Group + "/" + req.Version)
		if err != nil || json.Unmarshal(data, l) != nil || len(extras[gv.Group][gv.Version]) == 0 {
			return nil, 0, false
		}
		addLegacyResources(l, gv.Group, extras[gv.Group][gv.Version], a.storageVersionHash(view))
		return encode(l, code)
	case gvk.Kind == "APIGroup" && gvk.Group == "":
		g := &metav1.APIGroup{}
		if json.Unmarshal(data, g) != nil || !addLegacyVersions(g, extras[g.Name]) {
			return nil, 0, false
		}
		return encode(g, code)
	case gvk.Kind == "APIGroupList" && gvk.Group == "":
		l := &metav1.APIGroupList{}
		if json.Unmarshal(data, l) != nil {
			return nil, 0, false
		}
		changed := false
		for i := range l.Groups {
			changed = addLegacyVersions(&l.Groups[i], extras[l.Groups[i].Name]) || changed
		}
		if !changed {
			return nil, 0, false
		}
		return encode(l, code)
	}
	return nil, 0, false
}

func encode(v any, code int) ([]byte, int, bool) {
	out, err := json.Marshal(v)
	if err != nil {
		return nil, 0, false
	}
	return out, code, true
}

// extras returns, by upstream group and version, the aggregated discovery entries of the routed
// resources upstream serves at that version and the backend does not, but at another: each is the entry of the version
// the Adapter would convert from, renamed to the missing version.
func (a *Adapter) extras(view map[schema.GroupResource]map[string]apidiscoveryv2.APIResourceDiscovery) map[string]map[string][]apidiscoveryv2.APIResourceDiscovery {
	out := map[string]map[string][]apidiscoveryv2.APIResourceDiscovery{}
	for _, route := range a.table.Routes() {
		if route.Unserved {
			// kube-apiserver serving upstream's CRD does not list it.
			continue
		}
		gr := route.Upstream.GroupResource()
		versions := view[gr]
		if len(versions) == 0 {
			continue
		}
		if _, served := versions[route.Upstream.Version]; served {
			continue
		}
		backend := a.choose(route, versions)
		if backend == nil {
			continue
		}
		entry := renamed(versions[backend.Upstream.Version], gr.Group, route.Upstream.Version)
		if out[gr.Group] == nil {
			out[gr.Group] = map[string][]apidiscoveryv2.APIResourceDiscovery{}
		}
		out[gr.Group][route.Upstream.Version] = append(out[gr.Group][route.Upstream.Version], entry)
	}
	return out
}

// renamed returns a copy of a discovery entry whose kinds of group name version v.
func renamed(e apidiscoveryv2.APIResourceDiscovery, group, v string) apidiscoveryv2.APIResourceDiscovery {
	gvk := func(k *metav1.GroupVersionKind) *metav1.GroupVersionKind {
		if k == nil {
			return nil
		}
		out := *k
		if out.Group == group {
			out.Version = v
		}
		return &out
	}
	e.ResponseKind = gvk(e.ResponseKind)
	subresources := make([]apidiscoveryv2.APISubresourceDiscovery, len(e.Subresources))
	for i, s := range e.Subresources {
		s.ResponseKind = gvk(s.ResponseKind)
		accepted := make([]metav1.GroupVersionKind, len(s.AcceptedTypes))
		for j := range s.AcceptedTypes {
			accepted[j] = *gvk(&s.AcceptedTypes[j])
		}
		if s.AcceptedTypes == nil {
			accepted = nil
		}
		s.AcceptedTypes = accepted
		subresources[i] = s
	}
	if e.Subresources == nil {
		subresources = nil
	}
	e.Subresources = subresources
	return e
}

// augmentAggregated adds the extras to an aggregated discovery document, keeping versions in
// kube-apiserver's order (most preferred first) and resources by name. It returns whether it added any.
func (a *Adapter) augmentAggregated(l *apidiscoveryv2.APIGroupDiscoveryList, extras map[string]map[string][]apidiscoveryv2.APIResourceDiscovery) bool {
	changed := false
	for i := range l.Items {
		g := &l.Items[i]
		for v, resources := range extras[g.Name] {
			j := -1
			for k := range g.Versions {
				if g.Versions[k].Version == v {
					j = k
				}
			}
			if j < 0 {
				g.Versions = append(g.Versions, apidiscoveryv2.APIVersionDiscovery{Version: v, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent})
				j = len(g.Versions) - 1
			}
			ver := &g.Versions[j]
			ver.Resources = append(ver.Resources, resources...)
			sort.SliceStable(ver.Resources, func(x, y int) bool { return ver.Resources[x].Resource < ver.Resources[y].Resource })
			changed = true
		}
		sort.SliceStable(g.Versions, func(x, y int) bool {
			return version.CompareKubeAwareVersionStrings(g.Versions[x].Version, g.Versions[y].Version) > 0
		})
	}
	return changed
}

// addLegacyVersions adds the versions of extras to a legacy APIGroup, in kube-apiserver's order; the
// preferred version is then the first, as kube-apiserver prefers for custom resources. It returns whether
// it added any.
func addLegacyVersions(g *metav1.APIGroup, extras map[string][]apidiscoveryv2.APIResourceDiscovery) bool {
	if !translate.ToPrivate.Maps(g.Name) {
		return false
	}
	changed := false
	for v := range extras {
		found := false
		for _, have := range g.Versions {
			found = found || have.Version == v
		}
		if !found {
			g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{
				GroupVersion: schema.GroupVersion{Group: g.Name, Version: v}.String(), Version: v})
			changed = true
		}
	}
	if changed {
		sort.SliceStable(g.Versions, func(x, y int) bool {
			return version.CompareKubeAwareVersionStrings(g.Versions[x].Version, g.Versions[y].Version) > 0
		})
		g.PreferredVersion = g.Versions[0]
	}
	return changed
}

// storageVersionHash returns, for a resource of the view, the storageVersionHash legacy discovery shows
// for it at every version (aggregated discovery has none): kube-apiserver hashes the group, the storage
// version and the kind (discovery.StorageVersionHash). The storage version is taken to be the version the
// Adapter converts from (the hub if the backend serves it, as a CRD stores its hub; else the newest it
// serves): aggregated discovery does not tell it.
func (a *Adapter) storageVersionHash(view map[schema.GroupResource]map[string]apidiscoveryv2.APIResourceDiscovery) func(group string, e apidiscoveryv2.APIResourceDiscovery) string {
	return func(group string, e apidiscoveryv2.APIResourceDiscovery) string {
		gr := schema.GroupResource{Group: group, Resource: e.Resource}
		for _, route := range a.table.Routes() {
			if route.Upstream.GroupResource() != gr {
				continue
			}
			if backend := a.choose(route, view[gr]); backend != nil {
				return discovery.StorageVersionHash(group, backend.Upstream.Version, backend.Kind)
			}
		}
		return ""
	}
}

// addLegacyResources adds aggregated discovery entries to a legacy APIResourceList, with their
// subresources, unless a resource of that name is there already; hash gives the storageVersionHash of
// an entry.
func addLegacyResources(l *metav1.APIResourceList, group string, resources []apidiscoveryv2.APIResourceDiscovery,
	hash func(group string, e apidiscoveryv2.APIResourceDiscovery) string) {
	have := map[string]bool{}
	for _, r := range l.APIResources {
		have[r.Name] = true
	}
	for _, e := range resources {
		if have[e.Resource] {
			continue
		}
		main := metav1.APIResource{Name: e.Resource, SingularName: e.SingularResource,
			Namespaced: e.Scope == apidiscoveryv2.ScopeNamespace, Verbs: e.Verbs, ShortNames: e.ShortNames, Categories: e.Categories,
			StorageVersionHash: hash(group, e)}
		if e.ResponseKind != nil {
			main.Kind = e.ResponseKind.Kind
		}
		l.APIResources = append(l.APIResources, main)
		for _, s := range e.Subresources {
			sub := metav1.APIResource{Name: e.Resource + "/" + s.Subresource, Namespaced: main.Namespaced, Verbs: s.Verbs}
			if s.ResponseKind != nil {
				sub.Kind = s.ResponseKind.Kind
				if s.ResponseKind.Group != group {
					sub.Group, sub.Version = s.ResponseKind.Group, s.ResponseKind.Version
				}
			}
			l.APIResources = append(l.APIResources, sub)
		}
	}
}
