// Package openapi rewrites kube-apiserver's OpenAPI documents so that the proxy's clients (kubectl explain,
// kubectl's field validation, client-go's OpenAPI clients) see the private groups under their upstream
// names, as package discovery does for discovery:
//
//   - /openapi/v2 (one document) and /openapi/v3/apis/<group>/<version>: paths of the private groups are
//     renamed to the upstream groups, and paths of the upstream groups the backend serves itself (the
//     platform's own CAPI) are dropped; model names built from the reversed group
//     (io.openshift.hypershift.cluster.v1beta2.Machine) become upstream's (io.x-k8s.cluster.v1beta2.Machine),
//     with every $ref to them, and the platform's models of the upstream groups are dropped;
//     x-kubernetes-group-version-kind extensions, operation IDs and tags name the upstream group.
//     Replaced, never merged. Versions, kinds and resources without a route are dropped.
//   - /openapi/v3 (the index): entries of the private groups are renamed, the platform's upstream entries
//     dropped, and each renamed entry's hash is the proxy's own (Hash), derived from the backend's, so that
//     hash-keyed caches of clients never mix the two documents.
//
// Everything else in the documents (schemas, descriptions, which mention label keys such as
// cluster.x-k8s.io/cluster-name) is left as it is.
//
// Handler serves them through the proxy (package server dispatches the OpenAPI paths to it): each
// document read from the backend with the client's credentials, translated once per backend version
// (Cache), and answered as kube-apiserver answers, in JSON or protobuf (handler.go).
package openapi

import (
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	openapiendpoints "k8s.io/apiserver/pkg/endpoints/openapi"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/jsonx"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// translationVersion changes whenever the rewriting changes what it produces from the same input, so
// that Hash changes with it.
const translationVersion = "capi-proxy-openapi/1"

// groupNames are the names a group takes in an OpenAPI document.
type groupNames struct {
	// group is the API group, e.g. cluster.hypershift.openshift.io.
	group string
	// model is the reversed group that model names start with, e.g. io.openshift.hypershift.cluster.
	model string
	// operation and tag are the group's part of operation IDs and tags (see GetOperationIDAndTags in
	// k8s.io/apiserver/pkg/endpoints/openapi), e.g. ClusterHypershiftOpenshiftIo, clusterHypershiftOpenshiftIo.
	operation, tag string
}

func newGroupNames(group string) groupNames {
	parts := strings.Split(group, ".")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	trimmed := strings.TrimSuffix(group, ".k8s.io")
	return groupNames{
		group:     group,
		model:     strings.Join(parts, "."),
		operation: openapiendpoints.ToValidOperationID(trimmed, true),
		tag:       openapiendpoints.ToValidOperationID(trimmed, false),
	}
}

// groupPair is a mapped group's names either side.
type groupPair struct{ private, upstream groupNames }

// Rewriter rewrites OpenAPI documents with a route table. It is safe for concurrent use.
type Rewriter struct {
	// byPrivate and byUpstream index the mapped groups by their API group name; byModel by the reversed
	// group of model names, either side.
	byPrivate, byUpstream, byModel map[string]*groupPair
	// kinds are the private kinds and list kinds with a route; resources the private resources and
	// versions the private group versions.
	kinds     sets.Set[schema.GroupVersionKind]
	resources sets.Set[schema.GroupVersionResource]
	versions  sets.Set[schema.GroupVersion]
	// salt goes into Hash: the translation version and what the route table serves.
	salt string
}

// New returns a Rewriter for the routes of table.
func New(table *translate.Table) *Rewriter {
	rw := &Rewriter{
		byPrivate: map[string]*groupPair{}, byUpstream: map[string]*groupPair{}, byModel: map[string]*groupPair{},
		kinds: sets.New[schema.GroupVersionKind](), resources: sets.New[schema.GroupVersionResource](), versions: sets.New[schema.GroupVersion](),
	}
	for _, g := range upstream.Groups {
		p := &groupPair{private: newGroupNames(g.Private), upstream: newGroupNames(g.Upstream)}
		rw.byPrivate[g.Private], rw.byUpstream[g.Upstream] = p, p
		rw.byModel[p.private.model], rw.byModel[p.upstream.model] = p, p
	}
	var served []string
	for _, r := range table.Routes() {
		rw.kinds.Insert(r.PrivateGVK(), r.Private.GroupVersion().WithKind(r.ListKind))
		rw.resources.Insert(r.Private)
		rw.versions.Insert(r.Private.GroupVersion())
		served = append(served, r.Upstream.String()+"="+r.Private.String())
	}
	sort.Strings(served)
	rw.salt = translationVersion + "\n" + strings.Join(served, "\n")
	return rw
}

// Hash returns the proxy's hash of the translation of the document whose backend hash (the ETag of a
// /openapi/v3/apis/<group>/<version> document, or of /openapi/v2) is backendHash: upper-case hex like
// kube-apiserver's, changing whenever the backend's document or the proxy's translation changes.
func (rw *Rewriter) Hash(backendHash string) string {
	sum := sha512.Sum512([]byte(rw.salt + "\n" + backendHash))
	return strings.ToUpper(hex.EncodeToString(sum[:]))
}

// PrivateGroupVersion returns the private group version a client's upstream group version maps to, and
// whether the proxy serves it (a routed version of a mapped group).
func (rw *Rewriter) PrivateGroupVersion(gv schema.GroupVersion) (schema.GroupVersion, bool) {
	p, ok := rw.byUpstream[gv.Group]
	if !ok {
		return gv, false
	}
	private := schema.GroupVersion{Group: p.private.group, Version: gv.Version}
	return private, rw.versions.Has(private)
}

// Maps reports whether group is an upstream mapped group.
func (rw *Rewriter) Maps(group string) bool {
	_, ok := rw.byUpstream[group]
	return ok
}

// Spec rewrites an OpenAPI v2 document (/openapi/v2) or v3 document (/openapi/v3/apis/<group>/<version>).
// Malformed JSON is an error.
func (rw *Rewriter) Spec(data []byte) ([]byte, error) {
	v, err := jsonx.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("decoding OpenAPI document: %w", err)
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("decoding OpenAPI document: want an object, got %T", v)
	}
	if defs, ok := doc["definitions"].(map[string]any); ok {
		doc["definitions"] = rw.models(defs)
	}
	if components, ok := doc["components"].(map[string]any); ok {
		if schemas, ok := components["schemas"].(map[string]any); ok {
			components["schemas"] = rw.models(schemas)
		}
	}
	if paths, ok := doc["paths"].(map[string]any); ok {
		doc["paths"] = rw.paths(paths)
	}
	for k, v := range doc {
		if k != "paths" {
			doc[k] = rw.walk(v, nil)
		}
	}
	return jsonx.Encode(doc)
}

// models renames the models of the private groups and drops those of the upstream groups.
func (rw *Rewriter) models(in map[string]any) map[string]any {
	out := make(map[string]any, len(in))
	for name, schema := range in {
		if name, ok := rw.modelName(name); ok {
			out[name] = schema
		}
	}
	return out
}

// modelName maps a model name "<reversed group>.<version>.<Kind>": a routed private kind gets its
// upstream name, a model of a mapped group that is not a routed private kind is dropped (false), any other
// name is kept.
func (rw *Rewriter) modelName(name string) (string, bool) {
	kindAt := strings.LastIndexByte(name, '.')
	if kindAt < 0 {
		return name, true
	}
	versionAt := strings.LastIndexByte(name[:kindAt], '.')
	if versionAt < 0 {
		return name, true
	}
	p, ok := rw.byModel[name[:versionAt]]
	if !ok {
		return name, true
	}
	gvk := schema.GroupVersionKind{Group: p.private.group, Version: name[versionAt+1 : kindAt], Kind: name[kindAt+1:]}
	if name[:versionAt] != p.private.model || !rw.kinds.Has(gvk) {
		return "", false
	}
	return p.upstream.model + name[versionAt:], true
}

// paths renames the paths of the private groups' routed resources, drops the rest of the mapped groups'
// paths, and rewrites the operations of the renamed ones.
func (rw *Rewriter) paths(in map[string]any) map[string]any {
	out := make(map[string]any, len(in))
	for path, item := range in {
		p, renamed, keep := rw.path(path)
		if !keep {
			continue
		}
		out[renamed] = rw.walk(item, p)
	}
	return out
}

// path maps an API path "/apis/<group>/<version>[/namespaces/{namespace}]/<resource>...".
func (rw *Rewriter) path(path string) (p *groupPair, renamed string, keep bool) {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(parts) < 2 || parts[0] != "apis" {
		return nil, path, true
	}
	if _, ok := rw.byUpstream[parts[1]]; ok {
		return nil, "", false
	}
	p, ok := rw.byPrivate[parts[1]]
	if !ok {
		return nil, path, true
	}
	if len(parts) > 2 {
		gv := schema.GroupVersion{Group: parts[1], Version: parts[2]}
		if !rw.versions.Has(gv) {
			return nil, "", false
		}
		rest := parts[3:]
		if len(rest) >= 2 && rest[0] == "namespaces" {
			rest = rest[2:]
		}
		if len(rest) > 0 && rest[0] == "watch" {
			rest = rest[1:]
		}
		if len(rest) > 0 && rest[0] != "" && !rw.resources.Has(gv.WithResource(rest[0])) {
			return nil, "", false
		}
	}
	parts[1] = p.upstream.group
	return p, "/" + strings.Join(parts, "/"), true
}

// walk rewrites, below v, $refs to models, x-kubernetes-group-version-kind extensions and, inside the
// operations of a path of the mapped group p, operation IDs and tags.
func (rw *Rewriter) walk(v any, p *groupPair) any {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			switch k {
			case "$ref":
				if ref, ok := c.(string); ok {
					t[k] = rw.ref(ref)
					continue
				}
			case "x-kubernetes-group-version-kind":
				t[k] = rw.gvks(c)
				continue
			case "operationId":
				if id, ok := c.(string); ok && p != nil {
					t[k] = strings.Replace(id, p.private.operation, p.upstream.operation, 1)
					continue
				}
			case "tags":
				if tags, ok := c.([]any); ok && p != nil {
					for i, tag := range tags {
						if s, ok := tag.(string); ok && (s == p.private.tag || strings.HasPrefix(s, p.private.tag+"_")) {
							tags[i] = p.upstream.tag + strings.TrimPrefix(s, p.private.tag)
						}
					}
					continue
				}
			}
			t[k] = rw.walk(c, p)
		}
	case []any:
		for i, c := range t {
			t[i] = rw.walk(c, p)
		}
	}
	return v
}

// ref maps a JSON reference to a model ("#/definitions/<name>", "#/components/schemas/<name>").
func (rw *Rewriter) ref(ref string) string {
	i := strings.LastIndexByte(ref, '/')
	if i < 0 {
		return ref
	}
	if name, ok := rw.modelName(ref[i+1:]); ok {
		return ref[:i+1] + name
	}
	return ref
}

// gvks maps an x-kubernetes-group-version-kind value, one {group, version, kind} object or a list of them:
// private groups become upstream, entries of the upstream groups (the platform's) are dropped.
func (rw *Rewriter) gvks(v any) any {
	switch t := v.(type) {
	case map[string]any:
		rw.gvk(t)
		return t
	case []any:
		out := t[:0]
		seen := sets.New[string]()
		for _, e := range t {
			m, ok := e.(map[string]any)
			if !ok {
				out = append(out, e)
				continue
			}
			if g, _ := m["group"].(string); rw.byUpstream[g] != nil {
				continue
			}
			rw.gvk(m)
			key := fmt.Sprint(m["group"], "/", m["version"], "/", m["kind"])
			if !seen.Has(key) {
				seen.Insert(key)
				out = append(out, m)
			}
		}
		return out
	}
	return v
}

func (rw *Rewriter) gvk(m map[string]any) {
	if g, ok := m["group"].(string); ok {
		if p := rw.byPrivate[g]; p != nil {
			m["group"] = p.upstream.group
		}
	}
}
