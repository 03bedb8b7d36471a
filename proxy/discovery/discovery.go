// Package discovery rewrites the backend's discovery documents so that a client's RESTMapper sees the
// private groups under their upstream names, and only what the proxy routes:
//
//   - /apis, legacy (v1 APIGroupList) and aggregated (apidiscovery.k8s.io v2 and v2beta1
//     APIGroupDiscoveryList): every upstream-named group the backend serves natively is dropped, and every
//     private group is replaced by itself renamed to its upstream name, in its place. Replaced, never
//     merged: a client never sees two sources for cluster.x-k8s.io;
//   - /apis/<upstream group> (v1 APIGroup) and /apis/<upstream group>/<version> (v1 APIResourceList): the
//     proxy fetches them from the private group (package classify rewrites the path) and renames them.
//
// Versions and resources that no route serves are dropped (the proxy would answer them 404). Resources
// show upstream's shortNames and categories from the route table: the private CRDs carry prefixed ones
// (upstream.PrivateShortNamePrefix) that cannot clash with a natively served upstream group.
//
// The backend's ETag is of the untranslated document, so requests lose If-None-Match and responses their
// ETag (Request, Response); whoever writes the final document sends its own (ETag, NotModified; package
// adapt does). storageVersionHash names the upstream group (StorageVersionHash). Requests for a private
// group path are not discovery: they pass through unchanged.
package discovery

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apidiscoveryv2beta1 "k8s.io/api/apidiscovery/v2beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/proxy/negotiate"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Rewriter rewrites discovery documents with a route table. It is safe for concurrent use.
type Rewriter struct {
	table *translate.Table
	// versions are the private group versions with at least one route.
	versions sets.Set[schema.GroupVersion]
}

// New returns a Rewriter for the routes of table.
func New(table *translate.Table) *Rewriter {
	rw := &Rewriter{table: table, versions: sets.New[schema.GroupVersion]()}
	for _, r := range table.Routes() {
		rw.versions.Insert(r.Private.GroupVersion())
	}
	return rw
}

// Request prepares the headers of a discovery request for the backend: If-None-Match is removed (the
// backend's ETag is of a document the client never sees) and Accept is narrowed to JSON
// (negotiate.Accept), keeping the aggregated discovery ranges
// (application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList).
func Request(h http.Header) {
	h.Del("If-None-Match")
	negotiate.Narrow(h, negotiate.Discovery)
}

// Response removes the headers of a discovery response that describe the untranslated document (ETag).
// The caller recomputes Content-Length.
func Response(h http.Header) {
	h.Del("ETag")
}

// Rewrite rewrites a JSON discovery document, chosen by its kind and apiVersion: a v1 APIGroupList,
// APIGroup or APIResourceList, or an apidiscovery.k8s.io v2 or v2beta1 APIGroupDiscoveryList. Any other
// document is returned as it is. Malformed JSON is an error.
func (rw *Rewriter) Rewrite(data []byte) ([]byte, error) {
	var tm metav1.TypeMeta
	if err := json.Unmarshal(data, &tm); err != nil {
		return nil, fmt.Errorf("decoding discovery document: %w", err)
	}
	switch tm.GroupVersionKind() {
	case metav1.SchemeGroupVersion.WithKind("APIGroupList"), legacy.WithKind("APIGroupList"):
		return rewrite(data, rw.groupList)
	case metav1.SchemeGroupVersion.WithKind("APIGroup"), legacy.WithKind("APIGroup"):
		return rewrite(data, rw.group)
	case metav1.SchemeGroupVersion.WithKind("APIResourceList"), legacy.WithKind("APIResourceList"):
		return rewrite(data, rw.resourceList)
	case apidiscoveryv2.SchemeGroupVersion.WithKind("APIGroupDiscoveryList"):
		return rewrite(data, rw.v2GroupList)
	case apidiscoveryv2beta1.SchemeGroupVersion.WithKind("APIGroupDiscoveryList"):
		return rewrite(data, rw.v2beta1GroupList)
	}
	return data, nil
}

// legacy is the apiVersion legacy discovery documents carry ("v1").
var legacy = schema.GroupVersion{Version: "v1"}

func rewrite[T any](data []byte, fn func(*T)) ([]byte, error) {
	v := new(T)
	if err := json.Unmarshal(data, v); err != nil {
		return nil, fmt.Errorf("decoding %T: %w", *v, err)
	}
	fn(v)
	return json.Marshal(v)
}

// groupList rewrites the legacy /apis document.
func (rw *Rewriter) groupList(l *metav1.APIGroupList) {
	groups := l.Groups[:0]
	for _, g := range l.Groups {
		if keep := rw.renameGroup(&g); keep {
			groups = append(groups, g)
		}
	}
	l.Groups = groups
}

// group rewrites the legacy /apis/<group> document.
func (rw *Rewriter) group(g *metav1.APIGroup) {
	rw.renameGroup(g)
}

// renameGroup renames a private group to its upstream name, keeping only the versions with routes. It
// returns false for a group to drop: an upstream-named group, or a private one without routed versions.
// Any other group is kept unchanged.
func (rw *Rewriter) renameGroup(g *metav1.APIGroup) bool {
	if translate.ToPrivate.Maps(g.Name) {
		return false
	}
	up, ok := upstream.UpstreamGroup(g.Name)
	if !ok {
		return true
	}
	var versions []metav1.GroupVersionForDiscovery
	preferred := -1
	for _, v := range g.Versions {
		if !rw.versions.Has(schema.GroupVersion{Group: g.Name, Version: v.Version}) {
			continue
		}
		if v.Version == g.PreferredVersion.Version {
			preferred = len(versions)
		}
		versions = append(versions, metav1.GroupVersionForDiscovery{
			GroupVersion: schema.GroupVersion{Group: up, Version: v.Version}.String(),
			Version:      v.Version,
		})
	}
	g.Name, g.Versions = up, versions
	switch {
	case preferred >= 0:
		g.PreferredVersion = versions[preferred]
	case len(versions) > 0:
		g.PreferredVersion = versions[0]
	default:
		g.PreferredVersion = metav1.GroupVersionForDiscovery{}
	}
	return len(versions) > 0
}

// resourceList rewrites the legacy /apis/<group>/<version> document.
func (rw *Rewriter) resourceList(l *metav1.APIResourceList) {
	gv, err := schema.ParseGroupVersion(l.GroupVersion)
	if err != nil || !translate.ToUpstream.Maps(gv.Group) {
		return
	}
	resources := l.APIResources[:0]
	for _, r := range l.APIResources {
		resource, subresource, _ := strings.Cut(r.Name, "/")
		route, ok := rw.table.ByPrivate(gv.WithResource(resource))
		if !ok {
			continue
		}
		if subresource == "" {
			r.ShortNames, r.Categories = route.ShortNames, route.Categories
			r.StorageVersionHash = rw.storageVersionHash(route, r.StorageVersionHash)
		}
		r.Group = translate.ToUpstream.Group(r.Group)
		resources = append(resources, r)
	}
	l.GroupVersion = translate.ToUpstream.APIVersion(l.GroupVersion)
	l.APIResources = resources
}

// v2GroupList rewrites the aggregated /apis document.
func (rw *Rewriter) v2GroupList(l *apidiscoveryv2.APIGroupDiscoveryList) {
	groups := l.Items[:0]
	for _, g := range l.Items {
		if translate.ToPrivate.Maps(g.Name) {
			continue
		}
		if up, ok := upstream.UpstreamGroup(g.Name); ok {
			g.Versions = rw.v2Versions(g.Name, g.Versions)
			if len(g.Versions) == 0 {
				continue
			}
			g.Name = up
		}
		groups = append(groups, g)
	}
	l.Items = groups
}

// v2Versions renames the versions of a private group, keeping only routed resources and versions with
// some.
func (rw *Rewriter) v2Versions(group string, in []apidiscoveryv2.APIVersionDiscovery) []apidiscoveryv2.APIVersionDiscovery {
	var versions []apidiscoveryv2.APIVersionDiscovery
	for _, v := range in {
		var resources []apidiscoveryv2.APIResourceDiscovery
		for _, r := range v.Resources {
			route, ok := rw.table.ByPrivate(schema.GroupVersionResource{Group: group, Version: v.Version, Resource: r.Resource})
			if !ok {
				continue
			}
			r.ResponseKind = upstreamGVK(r.ResponseKind)
			r.ShortNames, r.Categories = route.ShortNames, route.Categories
			subresources := make([]apidiscoveryv2.APISubresourceDiscovery, len(r.Subresources))
			for i, s := range r.Subresources {
				s.ResponseKind = upstreamGVK(s.ResponseKind)
				accepted := make([]metav1.GroupVersionKind, len(s.AcceptedTypes))
				for j, t := range s.AcceptedTypes {
					accepted[j] = *upstreamGVK(&t)
				}
				if s.AcceptedTypes == nil {
					accepted = nil
				}
				s.AcceptedTypes = accepted
				subresources[i] = s
			}
			if r.Subresources == nil {
				subresources = nil
			}
			r.Subresources = subresources
			resources = append(resources, r)
		}
		if len(resources) > 0 {
			v.Resources = resources
			versions = append(versions, v)
		}
	}
	return versions
}

// upstreamGVK returns a copy of gvk with its group translated to upstream (nil stays nil).
func upstreamGVK(gvk *metav1.GroupVersionKind) *metav1.GroupVersionKind {
	if gvk == nil {
		return nil
	}
	out := *gvk
	out.Group = translate.ToUpstream.Group(gvk.Group)
	return &out
}

// v2beta1GroupList rewrites a v2beta1 aggregated /apis document: v2beta1 and v2 have the same fields, so
// the document is converted to v2, rewritten and converted back.
func (rw *Rewriter) v2beta1GroupList(l *apidiscoveryv2beta1.APIGroupDiscoveryList) {
	v2 := v2beta1ToV2(l)
	rw.v2GroupList(v2)
	*l = *v2ToV2beta1(v2)
}

// storageVersionHash returns the storageVersionHash kube-apiserver shows for route's kind in its upstream
// group, given the one the backend shows for the private group ("" stays ""). apiextensions-apiserver
// computes it from the CRD's group, storage version and kind (StorageVersionHash);
// the storage version is the private CRD's, found by hashing each version of the kind with the private
// group. Should none match (a version the route table does not know), the hash is upstream's storage
// version's, so that a private group is never shown.
func (rw *Rewriter) storageVersionHash(route *translate.Route, backend string) string {
	if backend == "" {
		return ""
	}
	storage := route.Upstream.Version
	for _, v := range rw.table.Versions(route.UpstreamGVK().GroupKind()) {
		if StorageVersionHash(v.Private.Group, v.Private.Version, v.Kind) == backend {
			storage = v.Upstream.Version
			break
		}
		if v.Storage {
			storage = v.Upstream.Version
		}
	}
	return StorageVersionHash(route.Upstream.Group, storage, route.Kind)
}

// StorageVersionHash is k8s.io/apiserver/pkg/endpoints/discovery.StorageVersionHash, copied (and tested
// equal to it) so that the proxy does not link the apiserver's endpoint handlers and their tracing
// dependencies for four lines: the first 8 bytes of the SHA-256 of "<group>/<version>/<kind>", in
// standard base64.
func StorageVersionHash(group, version, kind string) string {
	sum := sha256.Sum256([]byte(group + "/" + version + "/" + kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}

// codecs encode the discovery documents: the legacy v1 ones (metav1's unversioned kinds) and
// apidiscovery.k8s.io's, as kube-apiserver's discovery handlers register them.
var codecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, legacy)
	for _, add := range []func(*runtime.Scheme) error{apidiscoveryv2.AddToScheme, apidiscoveryv2beta1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // fixed, known types
		}
	}
	return serializer.NewCodecFactory(s)
}()

// Encode returns a discovery document the proxy rewrote (JSON, Rewrite's output) in mediaType, the media
// type kube-apiserver answers the client in (negotiate.Answer at negotiate.Discovery), as kube-apiserver
// encodes it: JSON as it is, YAML as the YAML form of the JSON (its YAML serializer's), protobuf as the
// Kubernetes protobuf envelope of the typed document. contentType is the Content-Type of the JSON answer; the one to
// send is returned, the same media type parameters kept (an aggregated document's g, v and as). A
// document of a kind the scheme does not know is an error.
func Encode(data []byte, contentType, mediaType string) ([]byte, string, error) {
	_, params, _ := strings.Cut(contentType, ";")
	answerType := func(mediaType string) string {
		if params == "" {
			return mediaType
		}
		return mediaType + ";" + params
	}
	switch mediaType {
	case runtime.ContentTypeYAML:
		out, err := yaml.JSONToYAML(data)
		if err != nil {
			return nil, "", fmt.Errorf("encoding discovery document in YAML: %w", err)
		}
		return out, answerType(mediaType), nil
	case runtime.ContentTypeProtobuf:
		obj, _, err := codecs.UniversalDeserializer().Decode(data, nil, nil)
		if err != nil {
			return nil, "", fmt.Errorf("decoding discovery document: %w", err)
		}
		info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
		var buf bytes.Buffer
		if err := info.Serializer.Encode(obj, &buf); err != nil {
			return nil, "", fmt.Errorf("encoding discovery document in protobuf: %w", err)
		}
		return buf.Bytes(), answerType(mediaType), nil
	}
	return data, contentType, nil
}
