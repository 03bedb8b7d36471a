package cutover

import (
	"context"
	"net/http"

	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
)

// Where a request goes: a Target, decided in one place, TargetOf, once per request before package server's
// dispatch: by the Filter for the requests it serves by their namespace's mode, by package server for
// every other (its withTarget), and by the merge for the upstream parts it sends to the backend itself.
// The stages after it (the dispatch, the request and response stages, the rewrite of the outbound
// request) only read it.

// Groups says from which API groups a request of a mapped kind is served.
type Groups int

const (
	// PrivateGroups: the private groups, request and answer translated. Every request is served so
	// without a Filter (package server's Options.Namespaces).
	PrivateGroups Groups = iota
	// UpstreamGroups: a namespace served from the upstream groups. A mapped kind's request goes to the
	// backend as it is, and its answer comes back as it is (Proxy.ServeUpstream); a built-in kind's request
	// goes as it is (its references to the upstream groups stay so), its answer is translated.
	UpstreamGroups
	// MergedGroups: a cluster-wide list of a namespaced mapped kind while some namespaces are served
	// from the upstream groups, merged from both (merge.go), and every cluster-wide watch of one over
	// HTTP (watch.go).
	MergedGroups
)

// Target is where a request goes.
type Target struct {
	// BackendPath is the URL path the request is sent to: classify.Request.BackendPath (the private
	// group's path of a mapped resource), but the client's own path for a request served from the
	// upstream groups, and the private object's path for a CustomResourceDefinition or APIService named
	// by its upstream name (package server).
	BackendPath string
	// From is the groups the request is served from.
	From Groups
	// Ends, when set, ends a watch with 410 Expired once it is cancelled with the cause errModeChanged
	// (Namespaces.ended: a namespace it covers changed its mode); it ends with the request too.
	Ends context.Context
}

// UntranslatedRequest reports whether the request's query and body go to the backend as they are: a
// built-in kind's in a namespace served from the upstream groups.
func (t *Target) UntranslatedRequest() bool { return t.From == UpstreamGroups }

// GroupNamed finds the private object that a request of a resource whose objects are named after a
// group (a CustomResourceDefinition, an APIService: package groupnamed) names by its upstream name.
// Package server gives it, from its groupnamed.Names.
type GroupNamed interface {
	// PrivateObjectPath returns the URL path of the private object that r, classified as req (class
	// classify.CRD or classify.APIService), names by its upstream name in its path, or "" when it names
	// none that way (a list, a watch, a name the route table does not map).
	PrivateObjectPath(r *http.Request, req *classify.Request) string
}

// Inputs is what TargetOf decides a target from, besides the request and its classification. The zero
// value decides for a request served from the private groups, as package server's are without a Filter.
type Inputs struct {
	// GroupNamed, when set, gives the private object's path of a CustomResourceDefinition or APIService
	// request that names an object by its upstream name; nil sends such a request to req.BackendPath.
	GroupNamed GroupNamed

	// view and namespaces, set by the Filter for a request it serves by its namespace's mode (a resource
	// request of a mapped or other kind), are the namespaces' serving modes it is decided with.
	view       *modes
	namespaces *Namespaces
	// upstreamPart is set by the merge for an upstream part of a merged list or watch: the backend, as
	// it is, at the part's own path.
	upstreamPart bool
}

// TargetOf decides where r, classified as req, goes; it is the one place a Target is decided:
//
//   - an upstream part of a merged list or watch (the merge's): the upstream groups, at r's own path;
//   - a request the Filter serves by its namespace's mode (Inputs from the Filter): a built-in kind's in
//     a namespace served from the upstream groups goes there, its request untranslated; a namespaced
//     request of a mapped kind goes to its namespace's groups (the client's own path for the upstream
//     ones); a cluster-wide list or watch of a namespaced mapped kind is merged from both while some
//     namespace is served from the upstream groups, and a cluster-wide watch over HTTP is merged always
//     (a namespace moves between the groups inside it, watch.go); any other watch of a mapped kind ends
//     when the mode of a namespace it covers changes (Target.Ends);
//   - a CustomResourceDefinition or APIService named by its upstream name (Inputs.GroupNamed): the
//     private object's path;
//   - any other: the private groups, at req.BackendPath.
func TargetOf(r *http.Request, req *classify.Request, in Inputs) Target {
	if in.upstreamPart {
		return Target{BackendPath: r.URL.Path, From: UpstreamGroups}
	}
	t := Target{BackendPath: req.BackendPath, From: PrivateGroups}
	switch {
	case in.view != nil:
		in.byMode(r, req, &t)
	case req.Class == classify.CRD || req.Class == classify.APIService:
		if in.GroupNamed != nil {
			if path := in.GroupNamed.PrivateObjectPath(r, req); path != "" {
				t.BackendPath = path
			}
		}
	}
	return t
}

// byMode decides t for r, classified as req, a resource request of a mapped or other kind that the
// Filter serves by its namespace, with the namespaces' serving modes in view.
func (in *Inputs) byMode(r *http.Request, req *classify.Request, t *Target) {
	view := in.view
	if req.Class == classify.Other {
		if req.Namespace != "" && view.mode(req.Namespace).mode.Upstream() {
			t.From = UpstreamGroups
		}
		return
	}
	if req.Class != classify.Mapped || !req.Route.Namespaced {
		return
	}
	if req.Namespace == "" {
		if req.Writes() {
			return
		}
		if req.Watch && !req.WebSocket {
			// Merged always, so that a namespace moves between the groups inside it (watch.go).
			t.From = MergedGroups
			return
		}
		if req.Watch {
			t.Ends = in.namespaces.ended(r.Context(), view, "")
		}
		if len(view.upstream) > 0 && req.ListOrWatch() {
			t.From = MergedGroups
		}
		return
	}
	if req.Watch {
		t.Ends = in.namespaces.ended(r.Context(), view, req.Namespace)
	}
	if view.mode(req.Namespace).mode.Upstream() {
		t.From, t.BackendPath = UpstreamGroups, r.URL.Path
	}
}
