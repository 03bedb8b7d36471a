package cutover

import (
	"context"
	"net/http"

	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
)

// Where a request goes: a Target, decided once per request before package server's dispatch (by the
// Filter for the requests it serves by their namespace's mode, by package server for every other, and by
// the merge for the upstream parts it sends to the backend itself); the stages after it (the dispatch,
// the request and response stages, the rewrite of the outbound request) only read it.

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

// targetOf decides where r, classified as req, a resource request of a mapped or other kind that the
// Filter serves by its namespace, goes, with the namespaces' serving modes in view. A watch of a mapped
// kind that view covers ends when its namespaces' mode changes (Target.Ends), but for a cluster-wide
// watch over HTTP, which follows the changes itself (watch.go).
func (f *Filter) targetOf(r *http.Request, req *classify.Request, view *modes) Target {
	t := Target{BackendPath: req.BackendPath, From: PrivateGroups}
	if req.Class == classify.Other {
		if req.Namespace != "" && view.mode(req.Namespace).mode.Upstream() {
			t.From = UpstreamGroups
		}
		return t
	}
	if req.Class != classify.Mapped || !req.Route.Namespaced {
		return t
	}
	if req.Namespace == "" {
		if req.Writes() {
			return t
		}
		if req.Watch && !req.WebSocket {
			// Merged always, so that a namespace moves between the groups inside it (watch.go).
			t.From = MergedGroups
			return t
		}
		if req.Watch {
			t.Ends = f.namespaces.ended(r.Context(), view, "")
		}
		if len(view.upstream) > 0 && req.ListOrWatch() {
			t.From = MergedGroups
		}
		return t
	}
	if req.Watch {
		t.Ends = f.namespaces.ended(r.Context(), view, req.Namespace)
	}
	if view.mode(req.Namespace).mode.Upstream() {
		t.From, t.BackendPath = UpstreamGroups, r.URL.Path
	}
	return t
}
