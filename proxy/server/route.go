package server

import (
	"context"
	"net/http"
	"strings"

	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
	"github.com/openshift/hypershift-capi-proxy/proxy/groupnamed"
)

// Where a request goes: a target, decided once per request by targetOf, before the dispatch
// (withServing for the requests it serves by their namespace's mode, withTarget for every other, and
// the merge for the upstream parts it sends to the backend itself); the
// stages after it (the dispatch, the request and response stages, rewrite) only read it.

// groups says from which API groups a request of a mapped kind is served (cutover.go).
type groups int

const (
	// privateGroups: the private groups, request and answer translated. Every request is served so
	// without Options.Namespaces.
	privateGroups groups = iota
	// upstreamGroups: a namespace served from the upstream groups. A mapped kind's request goes to the
	// backend as it is, and its answer comes back as it is (serveUpstream); a built-in kind's request goes
	// as it is (its references to the upstream groups stay so), its answer is translated.
	upstreamGroups
	// mergedGroups: a cluster-wide list or watch of a namespaced mapped kind while some namespaces are
	// served from the upstream groups, merged from both (merge.go).
	mergedGroups
)

// target is where a request goes.
type target struct {
	// backendPath is the URL path the request is sent to (rewrite): classify.Request.BackendPath (the
	// private group's path of a mapped resource), but the client's own path for a request served from the
	// upstream groups, and the private object's path for a CustomResourceDefinition or APIService named
	// by its upstream name (serveGroupNamed).
	backendPath string
	// from is the groups the request is served from.
	from groups
	// ends, when set, ends a watch with 410 Expired once it is cancelled with the cause errModeChanged
	// (Namespaces.ended: a namespace it covers changed its mode); it ends with the request too.
	ends context.Context
}

// untranslatedRequest reports whether the request's query and body go to the backend as they are: a
// built-in kind's in a namespace served from the upstream groups.
func (t *target) untranslatedRequest() bool { return t.from == upstreamGroups }

// targetOf decides where r, classified as req, goes. view is the namespaces' serving modes for a
// resource request withServing serves by its namespace (view.mode), nil for every other request, which
// is served from the private groups. A watch of a mapped kind that view covers ends when its
// namespaces' mode changes (target.ends).
func (s *server) targetOf(r *http.Request, req *classify.Request, view *modes) target {
	t := target{backendPath: req.BackendPath, from: privateGroups}
	switch req.Class {
	case classify.CRD:
		t.backendPath = privateObjectPath(r, req, s.crdNamed.names)
	case classify.APIService:
		t.backendPath = privateObjectPath(r, req, s.apiServices.names)
	}
	if view == nil {
		return t
	}
	if req.Class == classify.Other {
		if req.Namespace != "" && view.mode(req.Namespace).mode.Upstream() {
			t.from = upstreamGroups
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
		if req.Watch {
			t.ends = s.namespaces.ended(r.Context(), view, "")
		}
		if len(view.upstream) > 0 && req.ListOrWatch() {
			t.from = mergedGroups
		}
		return t
	}
	if req.Watch {
		t.ends = s.namespaces.ended(r.Context(), view, req.Namespace)
	}
	if view.mode(req.Namespace).mode.Upstream() {
		t.from, t.backendPath = upstreamGroups, r.URL.Path
	}
	return t
}

// namedObject returns what the request of a resource whose objects are named after a group (package
// groupnamed) addresses by the name in its path, and, for groupnamed.Mapped, the private object's name.
// A list or watch selecting metadata.name has req.Name set too (as the apiserver authorizes it); only a
// name in the path addresses one object: groupnamed.Unmapped otherwise.
func namedObject(r *http.Request, req *classify.Request, names *groupnamed.Names) (groupnamed.Target, string) {
	if req.Name == "" || !strings.Contains(r.URL.Path, "/"+names.GroupResource().Resource+"/"+req.Name) {
		return groupnamed.Unmapped, ""
	}
	return names.Lookup(req.Name)
}

// privateObjectPath returns the path of the private object a request names by its upstream name, or
// req.BackendPath.
func privateObjectPath(r *http.Request, req *classify.Request, names *groupnamed.Names) string {
	named, privateName := namedObject(r, req, names)
	if named != groupnamed.Mapped {
		return req.BackendPath
	}
	resource := names.GroupResource().Resource
	return strings.Replace(r.URL.Path, "/"+resource+"/"+req.Name, "/"+resource+"/"+privateName, 1)
}

// withTarget decides the target of a request that has none yet (targetOf), from the private groups: the
// requests withServing does not serve by a namespace's mode, genuine upgrades, and the requests the
// Adapter and the merged lists and watches make themselves. Every request the proxy forwards passes it
// (or withServing) before it reaches a ReverseProxy (rewrite reads the target).
func (s *server) withTarget(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ex := exchangeFrom(r.Context()); ex.target == nil {
			t := s.targetOf(r, ex.req, nil)
			ex.target = &t
		}
		next.ServeHTTP(w, r)
	})
}
