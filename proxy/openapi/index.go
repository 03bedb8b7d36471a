package openapi

import (
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/jsonx"
)

// Index rewrites the /openapi/v3 index,
//
//	{"paths":{"apis/cluster.hypershift.openshift.io/v1beta2":
//	  {"serverRelativeURL":"/openapi/v3/apis/cluster.hypershift.openshift.io/v1beta2?hash=<backend hash>"}, ...}}
//
// into {"paths":{"apis/cluster.x-k8s.io/v1beta2":{"serverRelativeURL":"/openapi/v3/apis/cluster.x-k8s.io/v1beta2?hash=<Hash>"}}}:
// routed private group versions renamed with the proxy's hash, the upstream groups' entries (the
// platform's) and unrouted private versions dropped. Malformed JSON is an error.
func (rw *Rewriter) Index(data []byte) ([]byte, error) {
	v, err := jsonx.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("decoding the OpenAPI v3 index: %w", err)
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("decoding the OpenAPI v3 index: want an object, got %T", v)
	}
	paths, ok := doc["paths"].(map[string]any)
	if !ok {
		return data, nil
	}
	out := make(map[string]any, len(paths))
	for key, entry := range paths {
		parts := strings.Split(key, "/")
		if len(parts) != 3 || parts[0] != "apis" {
			out[key] = entry
			continue
		}
		if rw.Maps(parts[1]) {
			continue
		}
		p, ok := rw.byPrivate[parts[1]]
		if !ok {
			out[key] = entry
			continue
		}
		if !rw.versions.Has(schema.GroupVersion{Group: parts[1], Version: parts[2]}) {
			continue
		}
		renamed := "apis/" + p.upstream.group + "/" + parts[2]
		if e, ok := entry.(map[string]any); ok {
			if u, ok := e["serverRelativeURL"].(string); ok {
				e["serverRelativeURL"] = rw.serverRelativeURL(renamed, u)
			}
		}
		out[renamed] = entry
	}
	doc["paths"] = out
	return jsonx.Encode(doc)
}

// serverRelativeURL is the proxy's URL of the document gvPath ("apis/<group>/<version>") whose backend URL
// is backendURL: the upstream path with the proxy's hash of the backend's.
func (rw *Rewriter) serverRelativeURL(gvPath, backendURL string) string {
	u := url.URL{Path: "/openapi/v3/" + gvPath}
	if parsed, err := url.Parse(backendURL); err == nil {
		if h := parsed.Query().Get("hash"); h != "" {
			u.RawQuery = url.Values{"hash": {rw.Hash(h)}}.Encode()
		}
	}
	return u.String()
}

// GroupVersionURL is the proxy's URL of the v3 document of an upstream group version whose backend
// document has the hash backendHash (its ETag), for redirects to the current document.
func (rw *Rewriter) GroupVersionURL(gv schema.GroupVersion, backendHash string) string {
	return rw.serverRelativeURL("apis/"+gv.String(), "?hash="+url.QueryEscape(backendHash))
}
