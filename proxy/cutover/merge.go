package cutover

// Cluster-wide lists and watches of a namespaced mapped kind while some namespaces are served from the
// upstream groups: the private groups' answer without those namespaces, merged with each such namespace's
// answer from the upstream groups.
//
// LIST: the private list is read first, as the client asked it (resourceVersion, resourceVersionMatch,
// selectors), with a field selector metadata.namespace!=<ns> per upstream namespace (kube-apiserver
// serves that selector for every custom resource); then each upstream namespace's list at exactly the
// private list's resourceVersion (resourceVersionMatch=Exact: etcd revisions are global, so the parts
// are one consistent snapshot). The answer is the private list with the upstream items (or Table rows)
// appended, and the private list's resourceVersion. limit is not applied (the API allows a server to
// return the whole list), and a continue token is answered 410 Expired, as kube-apiserver answers a
// token it no longer serves, so that the client lists again from the start. An upstream namespace whose
// resource the backend does not serve (no upstream CRD of that kind or version: a 404 that is not a
// Status) contributes nothing. A Table takes the private list's column definitions.
//
// WATCH: watch.go.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/inprocess"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/jsonx"
	"github.com/openshift/hypershift-capi-proxy/proxy/loglevel"
	"github.com/openshift/hypershift-capi-proxy/proxy/negotiate"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
)

// initialEventsEnd is the annotation of the BOOKMARK that ends a watch's initial events
// (metav1.InitialEventsAnnotationKey).
const initialEventsEnd = metav1.InitialEventsAnnotationKey

// serveMergedList serves a cluster-wide list, classified as req, while namespaces are served from the
// upstream groups; core serves its private part.
func (f *Filter) serveMergedList(w http.ResponseWriter, r *http.Request, req *classify.Request, core http.Handler, view *modes) {
	q := r.URL.Query()
	if q.Get("continue") != "" {
		status.Write(w, apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result: namespaces are served from other API groups since. List again without it."))
		return
	}
	q.Del("limit")
	private := cloneQuery(q)
	private.Set("fieldSelector", excludeNamespaces(q.Get("fieldSelector"), view.upstream))
	priv := f.record(r, core, r.URL.Path, private, false)
	if priv.code != http.StatusOK || !negotiate.IsJSON(priv.header.Get("Content-Type")) {
		priv.writeTo(w)
		return
	}
	var head listHead
	if err := json.Unmarshal(priv.body.Bytes(), &head); err != nil {
		status.Write(w, apierrors.NewInternalError(fmt.Errorf("reading the private list: %w", err)))
		return
	}
	key := "items"
	if head.Kind == "Table" {
		key = "rows"
	}
	var extra []json.RawMessage
	for _, ns := range view.upstream {
		up := cloneQuery(q)
		up.Set("resourceVersion", head.Metadata.ResourceVersion)
		up.Set("resourceVersionMatch", string(metav1.ResourceVersionMatchExact))
		part := f.record(r, core, namespacedPath(r.URL.Path, req.Group, req.Version, ns), up, true)
		if part.unserved() {
			continue
		}
		if part.code != http.StatusOK {
			part.writeTo(w)
			return
		}
		items, err := listMember(part.body.Bytes(), key, head.columns())
		if err != nil {
			status.Write(w, apierrors.NewInternalError(fmt.Errorf("reading the upstream list of namespace %s: %w", ns, err)))
			return
		}
		extra = append(extra, items...)
	}
	out, err := jsonx.Members(priv.body.Bytes(), func(k string, raw json.RawMessage) (json.RawMessage, error) {
		if k != key {
			return raw, nil
		}
		return appendElements(raw, extra)
	})
	if err != nil {
		status.Write(w, apierrors.NewInternalError(fmt.Errorf("merging the lists: %w", err)))
		return
	}
	h := w.Header()
	for k, v := range priv.header {
		h[k] = v
	}
	if negotiate.AnswersYAML(r.Header.Values("Accept"), negotiate.CustomResource) {
		// As kube-apiserver writes YAML: the YAML form of its JSON.
		if out, err = yaml.JSONToYAML(out); err != nil {
			status.Write(w, apierrors.NewInternalError(fmt.Errorf("merging the lists: %w", err)))
			return
		}
		h.Set("Content-Type", "application/yaml")
	}
	h.Del("Content-Encoding")
	h.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

// listHead is what the merge reads of a list or Table.
type listHead struct {
	Kind     string `json:"kind"`
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	ColumnDefinitions []struct {
		Name string `json:"name"`
	} `json:"columnDefinitions"`
}

// columns returns a Table's column names (nil for a list).
func (h listHead) columns() []string {
	var names []string
	for _, c := range h.ColumnDefinitions {
		names = append(names, c.Name)
	}
	return names
}

// listMember returns the elements of a list's member key ("items", or a Table's "rows"). A Table's rows
// get their cells in the order of columns, the merged Table's (the private one's), matched by column
// name: the upstream CRDs may print other columns. A column the part lacks is an empty cell.
func listMember(list []byte, key string, columns []string) ([]json.RawMessage, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(list, &members); err != nil {
		return nil, err
	}
	var items []json.RawMessage
	if raw, ok := members[key]; ok {
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
	}
	if key != "rows" || len(items) == 0 {
		return items, nil
	}
	var head listHead
	if err := json.Unmarshal(list, &head); err != nil {
		return nil, err
	}
	own := head.columns()
	if slices.Equal(own, columns) {
		return items, nil
	}
	index := make(map[string]int, len(own))
	for i, name := range own {
		index[name] = i
	}
	for i, row := range items {
		out, err := jsonx.Members(row, func(k string, raw json.RawMessage) (json.RawMessage, error) {
			if k != "cells" {
				return raw, nil
			}
			var cells []json.RawMessage
			if err := json.Unmarshal(raw, &cells); err != nil {
				return nil, fmt.Errorf("row %d: cells: %w", i, err)
			}
			remapped := make([]json.RawMessage, len(columns))
			for j, name := range columns {
				remapped[j] = json.RawMessage(`""`)
				if at, ok := index[name]; ok && at < len(cells) {
					remapped[j] = cells[at]
				}
			}
			return json.Marshal(remapped)
		})
		if err != nil {
			return nil, err
		}
		items[i] = out
	}
	return items, nil
}

// appendElements appends extra to the JSON array (or null) arr.
func appendElements(arr json.RawMessage, extra []json.RawMessage) (json.RawMessage, error) {
	if len(extra) == 0 {
		return arr, nil
	}
	t := bytes.TrimSpace(arr)
	var out []byte
	switch {
	case bytes.Equal(t, []byte("null")):
		out = []byte{'['}
	case len(t) >= 2 && t[0] == '[' && t[len(t)-1] == ']':
		out = append(out, t[:len(t)-1]...)
		if len(bytes.TrimSpace(t[1:len(t)-1])) > 0 {
			out = append(out, ',')
		}
	default:
		return nil, errors.New("the list's items are not an array")
	}
	for i, e := range extra {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, e...)
	}
	return append(out, ']'), nil
}

// excludeNamespaces adds metadata.namespace!=<ns> for each namespace to a field selector.
func excludeNamespaces(selector string, namespaces []string) string {
	parts := make([]string, 0, len(namespaces)+1)
	if strings.TrimSpace(selector) != "" {
		parts = append(parts, selector)
	}
	for _, ns := range namespaces {
		parts = append(parts, "metadata.namespace!="+ns)
	}
	return strings.Join(parts, ",")
}

// namespacedPath turns the path of a cluster-wide request of group/version
// (/apis/<g>/<v>/<resource>, or /apis/<g>/<v>/watch/<resource>) into namespace's.
func namespacedPath(path, group, version, namespace string) string {
	prefix := "/apis/" + group + "/" + version + "/"
	rest := strings.TrimPrefix(path, prefix)
	if w, ok := strings.CutPrefix(rest, "watch/"); ok {
		return prefix + "watch/namespaces/" + namespace + "/" + w
	}
	return prefix + "namespaces/" + namespace + "/" + rest
}

func cloneQuery(q url.Values) url.Values {
	out := make(url.Values, len(q))
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// part is the answer of one part of a merged list or watch, as the client would have got it.
type part struct {
	code   int
	header http.Header
	body   *bytes.Buffer
}

// unserved reports whether the answer is kube-apiserver's 404 for a path it does not serve (a resource
// or version the upstream CRDs do not have), rather than a Status.
func (p *part) unserved() bool {
	return p.code == http.StatusNotFound && !negotiate.IsJSON(p.header.Get("Content-Type"))
}

// writeTo sends the part's answer to the client as it is.
func (p *part) writeTo(w http.ResponseWriter) {
	h := w.Header()
	for k, v := range p.header {
		h[k] = v
	}
	h.Set("Content-Length", strconv.Itoa(p.body.Len()))
	w.WriteHeader(p.code)
	_, _ = w.Write(p.body.Bytes())
}

// record serves one part of a merged list in process (inprocess.Serve) and records its answer. A part
// broken off is what it wrote before (a list cut short, which the merge cannot read).
func (f *Filter) record(r *http.Request, core http.Handler, path string, query url.Values, upstream bool) *part {
	sub, cancel := f.subRequest(r, path, query, upstream)
	defer cancel()
	rec, err := inprocess.Serve(f.partHandler(core, upstream), sub)
	if err != nil {
		klog.V(loglevel.Unusual).InfoS("A part of a merged list broke off", "path", sub.URL.Path, "err", err)
	}
	return &part{code: rec.Code(), header: rec.Header(), body: &rec.Body}
}

// subRequest returns a GET of path and query with r's headers (as the proxy's filters left them: the
// client's credentials), asking for JSON in the shape r asks for (negotiate.Narrow), uncompressed. Its
// context ends with r's but carries none of its values: it is a new request to the proxy's core (private),
// which classifies it on its own, or to the backend (upstream), classified by the proxy
// (Proxy.NewRequest).
func (f *Filter) subRequest(r *http.Request, path string, query url.Values, upstream bool) (*http.Request, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(r.Context(), cancel)
	u := *r.URL
	u.Path, u.RawPath, u.RawQuery = path, "", query.Encode()
	sub := (&http.Request{Method: http.MethodGet, URL: &u, Proto: r.Proto, ProtoMajor: r.ProtoMajor, ProtoMinor: r.ProtoMinor,
		Header: r.Header.Clone(), Host: r.Host, RemoteAddr: r.RemoteAddr, RequestURI: u.RequestURI(), Body: http.NoBody}).WithContext(ctx)
	sub.Header.Del("Accept-Encoding")
	sub.Header.Del("Content-Length")
	sub.Header.Del("Content-Type")
	negotiate.Narrow(sub.Header, negotiate.CustomResource)
	if upstream {
		sub = f.proxy.NewRequest(sub)
		// Its target, an upstream part's (TargetOf): the backend, as it is, at path.
		req, _ := classify.FromContext(sub.Context())
		t := TargetOf(sub, req, Inputs{upstreamPart: true})
		f.proxy.SetTarget(sub, &t)
	}
	return sub, func() { stop(); cancel() }
}

// partHandler is what serves a part: a private part the proxy's core (translated), an upstream part
// the backend (as it is, Proxy.ServeUpstream).
func (f *Filter) partHandler(core http.Handler, upstream bool) http.Handler {
	if upstream {
		return http.HandlerFunc(f.proxy.ServeUpstream)
	}
	return core
}
