// Package classify tells the proxy what a request is: its API coordinates (group, version, resource,
// subresource, namespace, name, verb) as kube-apiserver parses them, and how the proxy must treat it
// (Class), with the route of a mapped resource and the path to send to the backend.
//
// Parsing is k8s.io/apiserver's RequestInfoFactory, the apiserver's own parser, so that the proxy and the
// backend agree on every verb (list versus get, watch by ?watch= or by /watch/ path, deletecollection).
//
// A request is classified once; its classification travels in its context as one read-only value
// (NewContext, FromContext), as kube-apiserver's RequestInfo does, and every package reads it there.
package classify

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/httpstream"          //nolint:staticcheck // k8s.io/streaming, its new home, has no release before Kubernetes 0.36, and the tree must build at CAPI v1.13's pins too
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream" //nolint:staticcheck // as httpstream
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/openshift/hypershift-capi-proxy/apis/upstream"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// Class says how the proxy treats a request.
type Class int

const (
	// Other is every request outside the mapped groups (core, apps, /version, ...). It is forwarded as it
	// is; only the group-carrying metadata of its JSON bodies is translated.
	Other Class = iota
	// Mapped is a resource request of an upstream group with a route: the path is rewritten to the private
	// group and bodies are translated.
	Mapped
	// Unrouted is a request of a mapped upstream group that no route serves (an unknown resource or
	// version, or a version upstream does not serve), and any request whose path has "." or ".." segments,
	// or doubled slashes before its group, and would address a mapped upstream group once cleaned
	// (uncleanIntoMappedGroup). Forwarding it unchanged
	// would reach the backend's own copy of the upstream group, which the proxy's clients must never see:
	// where its path names the group plainly, BackendPath is the same path in the private group, where
	// nothing serves it either, so that the backend answers its own 404 (or 403); otherwise the proxy
	// answers 404 itself.
	Unrouted
	// Discovery is /apis, /apis/<mapped upstream group> or /apis/<mapped upstream group>/<version>.
	Discovery
	// Private is any path in a private group (/apis/cluster.hypershift.openshift.io/...): answered 404, as
	// kube-apiserver answers a group it does not serve, since through the proxy the private groups do not
	// exist.
	Private
	// Upgrade is a genuine connection upgrade, one kube-apiserver switches protocols for (see
	// isGenuineUpgrade): exec, attach, port-forward or proxy of a core resource, or a pod's log over a
	// websocket. Forwarded untouched on an HTTP/1.1 connection. Any other request's upgrade headers do not
	// make it one: kube-apiserver ignores them, and the proxy serves it by its class as an ordinary request.
	Upgrade
	// OpenAPI is an OpenAPI document that names the mapped groups: /openapi/v2, the /openapi/v3 index, and
	// /openapi/v3/apis/<group>/<version> of a mapped upstream group (served translated) or of a private
	// group (answered 404). Other groups' v3 documents are Other.
	OpenAPI
	// CRD is a request of apiextensions.k8s.io customresourcedefinitions: the private CRDs are served under
	// their upstream names, the platform's CRDs of the upstream groups and the private names hidden.
	CRD
	// Webhook is the proxy's own conversion webhook, WebhookPath.
	Webhook
	// APIService is a request of apiregistration.k8s.io apiservices, which kube-apiserver keeps for every
	// group version a CRD serves, named <version>.<group>: as for CRD, the private group versions' are
	// served under their upstream names, the platform's of the upstream groups and the private names
	// hidden.
	APIService
	// Admission is the proxy's own admission webhooks of the private groups, below AdmissionPathPrefix.
	Admission
)

// WebhookPath is where the proxy serves the conversion webhook of the private CRDs.
const WebhookPath = "/convert"

// AdmissionPathPrefix starts the paths where the proxy serves the admission webhooks of the private
// groups (upstream.AdmissionPathPrefix): kube-apiserver serves nothing there.
const AdmissionPathPrefix = upstream.AdmissionPathPrefix

var classNames = [...]string{"Other", "Mapped", "Unrouted", "Discovery", "Private", "Upgrade", "OpenAPI", "CRD", "Webhook", "APIService", "Admission"}

func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// Request is a classified request. Group and Version are the ones the client addressed (upstream for
// Mapped); Verb is the Kubernetes verb (get, list, watch, create, update, patch, delete,
// deletecollection), or the lower-case HTTP method of a non-resource request.
type Request struct {
	Class Class

	Group, Version, Resource, Subresource, Namespace, Name, Verb string
	// IsResource is true for a resource request (/api/v1/..., /apis/<group>/<version>/<resource>...), false
	// for discovery and other non-resource paths.
	IsResource bool
	// Watch is true for a watch (?watch=true, or a /watch/ path).
	Watch bool
	// LongRunning is true for a request kube-apiserver exempts from its request timeout: a watch, a proxy
	// verb, a log, exec, attach, port-forward or proxy subresource (upgrade headers play no part, as in
	// k8s.io/apiserver's BasicLongRunningRequestCheck).
	LongRunning bool
	// Connect is true for a connect subresource of the core group (connectSubresources: a pod's attach,
	// exec, portforward or proxy, a service's or node's proxy): its bodies and answers are the bytes of
	// whatever it reaches, never API objects.
	Connect bool
	// WebSocket is true for a watch that asks to be served over a websocket (Upgrade: websocket, as
	// k8s.io/apimachinery's wsstream.IsWebSocketRequest tells): kube-apiserver then sends each event as one
	// websocket message (k8s.io/apiserver/pkg/endpoints/handlers/watch.go). Its upgrade headers are
	// forwarded, and its events are translated like those of any watch of its class.
	WebSocket bool

	// Route is set for Mapped.
	Route *translate.Route
	// BackendPath is the URL path to send to the backend: the request's path with the private group in
	// place of the upstream one for Mapped and for Discovery of a group, the request's path otherwise.
	BackendPath string
}

// The verb sets the proxy acts on, each stated once here, by kube-apiserver's verb names
// (RequestInfo.Verb). They hold for any resource and subresource (status and scale are updates and
// patches), dry runs included.

// Writes reports whether req changes objects: create, update, patch, delete or deletecollection. These are
// the verbs whose body kube-apiserver reads up to its limit (an object, a patch, DeleteOptions), and the
// ones held in a held namespace.
func (req Request) Writes() bool {
	switch req.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// SendsObject reports whether req's body is an object or a patch of one (create, update, patch), whose
// group-carrying fields the proxy translates; a delete's DeleteOptions name no group.
func (req Request) SendsObject() bool {
	return req.Verb == "create" || req.Verb == "update" || req.Verb == "patch"
}

// ListOrWatch reports whether req reads a collection: a list or a watch.
func (req Request) ListOrWatch() bool { return req.Verb == "list" || req.Verb == "watch" }

// Selects reports whether req takes label and field selectors: a list, a watch or a deletecollection.
func (req Request) Selects() bool { return req.ListOrWatch() || req.Verb == "deletecollection" }

// AnswersList reports whether req's successful answer is a list: a list or a deletecollection (which
// answers with the list of what it deleted).
func (req Request) AnswersList() bool { return req.Verb == "list" || req.Verb == "deletecollection" }

// longRunningVerbs and longRunningSubresources are kube-apiserver's long-running requests, as its
// server options configure k8s.io/apiserver's BasicLongRunningRequestCheck.
var (
	longRunningVerbs        = sets.New("watch", "proxy")
	longRunningSubresources = sets.New("attach", "exec", "proxy", "log", "portforward")
)

// connectSubresources are the subresources of the core group that kube-apiserver serves as connections
// to the kubelet, a pod or a service (its rest.Connecter storages: pods/attach, pods/exec,
// pods/portforward, pods/proxy, services/proxy, nodes/proxy), by resource. Their handler,
// k8s.io/apimachinery's proxy.UpgradeAwareHandler, switches protocols for a request that
// httpstream.IsUpgradeRequest accepts.
var connectSubresources = map[string]sets.Set[string]{
	"pods":     sets.New("attach", "exec", "portforward", "proxy"),
	"services": sets.New("proxy"),
	"nodes":    sets.New("proxy"),
}

// isGenuineUpgrade reports whether kube-apiserver answers r, classified as req, by switching protocols:
//
//   - a connect subresource of the core group (connectSubresources) with a Connection header naming
//     upgrade (httpstream.IsUpgradeRequest, the test of proxy.UpgradeAwareHandler);
//   - a pod's log asked for over a websocket (wsstream.IsWebSocketRequest, the test of
//     k8s.io/apiserver's responsewriters.StreamObject, which streams it in the base64.binary.k8s.io or
//     binary.k8s.io websocket protocol).
//
// A watch over a websocket is not one of these: the proxy translates its events (Request.WebSocket).
// Nor is the proxy verb (/api/v1/proxy/...): k8s.io/apiserver's installer serves no route for it, the
// apiserver answers 404. Every other handler of kube-apiserver ignores upgrade headers.
func isGenuineUpgrade(r *http.Request, req Request) bool {
	if !req.IsResource || req.Group != "" || req.Name == "" {
		return false
	}
	if connectSubresources[req.Resource].Has(req.Subresource) {
		return httpstream.IsUpgradeRequest(r)
	}
	return req.Resource == "pods" && req.Subresource == "log" && wsstream.IsWebSocketRequest(r)
}

// Classifier classifies requests against a route table. It is safe for concurrent use.
type Classifier struct {
	table *translate.Table
	infos *request.RequestInfoFactory
	// groups and groupVersions are the upstream groups and group versions with at least one route.
	groups        sets.Set[string]
	groupVersions sets.Set[schema.GroupVersion]
}

// New returns a Classifier for the routes of table.
func New(table *translate.Table) *Classifier {
	c := &Classifier{
		table: table,
		infos: &request.RequestInfoFactory{
			APIPrefixes:          sets.NewString("api", "apis"),
			GrouplessAPIPrefixes: sets.NewString("api"),
		},
		groups:        sets.New[string](),
		groupVersions: sets.New[schema.GroupVersion](),
	}
	for _, r := range table.Routes() {
		c.groups.Insert(r.Upstream.Group)
		c.groupVersions.Insert(r.Upstream.GroupVersion())
	}
	return c
}

// Classify parses r. It never fails: a request the parser rejects is Unrouted in a mapped group (the
// proxy answers 404) and Other elsewhere (the backend answers).
func (c *Classifier) Classify(r *http.Request) Request {
	info, err := c.infos.NewRequestInfo(r)
	req := Request{
		Class:       Other,
		Group:       info.APIGroup,
		Version:     info.APIVersion,
		Resource:    info.Resource,
		Subresource: info.Subresource,
		Namespace:   info.Namespace,
		Name:        info.Name,
		Verb:        info.Verb,
		IsResource:  info.IsResourceRequest && err == nil,
		Watch:       info.Verb == "watch",
		BackendPath: r.URL.Path,
	}
	req.LongRunning = req.IsResource && (longRunningVerbs.Has(req.Verb) || longRunningSubresources.Has(req.Subresource))
	req.Connect = req.IsResource && req.Group == "" && connectSubresources[req.Resource].Has(req.Subresource)
	req.WebSocket = req.Watch && req.IsResource && wsstream.IsWebSocketRequest(r)

	if group, ok := uncleanIntoMappedGroup(r.URL.Path); ok {
		// No client sends such paths (client-go cleans its paths); a server cleaning them would reach
		// the backend's own copy of an upstream group.
		req.Class, req.Group, req.IsResource, req.Route = Unrouted, group, false, nil
		return req
	}
	if !req.IsResource {
		return c.nonResource(r, req, err == nil)
	}
	switch (schema.GroupResource{Group: req.Group, Resource: req.Resource}) {
	case CRDResource:
		req.Class = CRD
		return req
	case APIServiceResource:
		req.Class = APIService
		return req
	}
	if _, mapped := upstream.PrivateGroup(req.Group); mapped {
		return c.mapped(r, req)
	}
	if _, private := upstream.UpstreamGroup(req.Group); private {
		req.Class = Private
		return req
	}
	if isGenuineUpgrade(r, req) {
		req.Class = Upgrade
	}
	return req
}

// mapped classifies a resource request of a mapped upstream group.
func (c *Classifier) mapped(r *http.Request, req Request) Request {
	route, ok := c.table.ByUpstream(schema.GroupVersionResource{Group: req.Group, Version: req.Version, Resource: req.Resource})
	if !ok || route.Unserved {
		// A version upstream keeps but does not serve (CAPA's v1beta1) is not served through the proxy
		// either.
		req.Class = Unrouted
		privateGroup, _ := upstream.PrivateGroup(req.Group)
		if path, ok := toPrivatePath(r.URL.Path, req.Group, privateGroup); ok {
			req.BackendPath = path
		}
		return req
	}
	path, ok := toPrivatePath(r.URL.Path, req.Group, route.Private.Group)
	if !ok {
		req.Class = Unrouted
		return req
	}
	req.Class, req.Route, req.BackendPath = Mapped, route, path
	return req
}

// nonResource classifies discovery, private group and other non-resource paths. parsed is false when the
// apiserver's parser rejected the path.
func (c *Classifier) nonResource(r *http.Request, req Request, parsed bool) Request {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.URL.Path == WebhookPath:
		req.Class = Webhook
		return req
	case strings.HasPrefix(r.URL.Path, AdmissionPathPrefix):
		req.Class = Admission
		return req
	case parts[0] == "openapi":
		if isOpenAPI(parts) {
			req.Class = OpenAPI
		}
		return req
	case parts[0] != "apis":
		return req
	}
	if len(parts) == 1 {
		req.Class = Discovery
		return req
	}
	group := parts[1]
	if _, private := upstream.UpstreamGroup(group); private {
		req.Group, req.Class = group, Private
		return req
	}
	privateGroup, mapped := upstream.PrivateGroup(group)
	if !mapped {
		return req
	}
	req.Group, req.Class = group, Unrouted
	path, ok := toPrivatePath(r.URL.Path, group, privateGroup)
	if !parsed || !ok {
		return req
	}
	req.BackendPath = path
	if len(parts) > 3 {
		return req
	}
	switch len(parts) {
	case 2:
		if !c.groups.Has(group) {
			return req
		}
	case 3:
		req.Version = parts[2]
		if !c.groupVersions.Has(schema.GroupVersion{Group: group, Version: req.Version}) {
			return req
		}
	}
	req.Class, req.BackendPath = Discovery, path
	return req
}

// CRDResource is the resource of CustomResourceDefinitions, APIServiceResource that of APIServices.
var (
	CRDResource        = schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}
	APIServiceResource = schema.GroupResource{Group: "apiregistration.k8s.io", Resource: "apiservices"}
)

// isOpenAPI reports whether the path segments parts name an OpenAPI document the proxy serves itself:
// openapi/v2, openapi/v3, or openapi/v3/apis/<group>[/...] of a mapped upstream or a private group.
func isOpenAPI(parts []string) bool {
	switch {
	case len(parts) == 2:
		return parts[1] == "v2" || parts[1] == "v3"
	case len(parts) >= 4 && parts[1] == "v3" && parts[2] == "apis":
		_, mapped := upstream.PrivateGroup(parts[3])
		_, private := upstream.UpstreamGroup(parts[3])
		return mapped || private
	}
	return false
}

// NewContext returns a copy of ctx carrying req, the classification of the request ctx belongs to: the
// one value every stage of the proxy reads it from (FromContext), in every package, as kube-apiserver's
// handlers read its endpoints/request.RequestInfo. req is parsed once and read only: nothing changes it
// once it is in a context.
func NewContext(ctx context.Context, req *Request) context.Context {
	return context.WithValue(ctx, contextKey{}, req)
}

// FromContext returns the classification NewContext put into ctx, to be read only; false if there is
// none.
func FromContext(ctx context.Context) (*Request, bool) {
	req, ok := ctx.Value(contextKey{}).(*Request)
	return req, ok && req != nil
}

type contextKey struct{}

// uncleanIntoMappedGroup reports whether p has "." or ".." segments or doubled slashes where they could
// make another parser or a cleaning router read another group than the proxy's classification reads,
// and, cleaned (path.Clean), addresses a mapped upstream group (/apis/<group>[/...]), and which.
// Doubled slashes after a group segment do not count ("/apis/<group>/v1beta2/machines/m1//status",
// ".../m1//"): kube-apiserver's RequestInfoFactory, which the classification uses too, splits the path
// as it is, and no cleaning of empty segments can move the group segment, in the client's path or in the
// private group's path the proxy sends; "." and ".." segments can, anywhere.
func uncleanIntoMappedGroup(p string) (string, bool) {
	if !strings.Contains(p, "//") && !strings.Contains(p, "/.") {
		return "", false // the common case, without allocating
	}
	segments := strings.Split(p, "/")
	dots := false
	for _, s := range segments {
		dots = dots || s == "." || s == ".."
	}
	if !dots && len(segments) > 2 && segments[0] == "" && segments[1] == "apis" && segments[2] != "" {
		return "", false
	}
	unclean := dots || strings.Contains(p, "//")
	if !unclean {
		return "", false
	}
	parts := strings.Split(strings.TrimPrefix(path.Clean("/"+p), "/"), "/")
	if len(parts) < 2 || parts[0] != "apis" {
		return "", false
	}
	if _, mapped := upstream.PrivateGroup(parts[1]); !mapped {
		return "", false
	}
	return parts[1], true
}

// toPrivatePath replaces the group segment of "/apis/<group>[/...]". It fails on any other shape
// (a doubled slash before the group, for example), so that an upstream group path is never forwarded
// unchanged.
func toPrivatePath(path, group, privateGroup string) (string, bool) {
	prefix := "/apis/" + group
	rest, ok := strings.CutPrefix(path, prefix)
	if !ok || (rest != "" && rest[0] != '/') {
		return "", false
	}
	return "/apis/" + privateGroup + rest, true
}
