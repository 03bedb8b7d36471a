package server

import (
	"net/http"
	"strings"

	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
	"github.com/openshift/hypershift-capi-proxy/proxy/cutover"
	"github.com/openshift/hypershift-capi-proxy/proxy/groupnamed"
)

// Where a request goes: a cutover.Target, decided once per request before the dispatch, by
// cutover.TargetOf (the cut-over, withServing, for the requests it serves by their namespace's mode;
// withTarget for every other, with the server's group-named objects as its input); the stages after it
// (the dispatch, the request and response stages, rewrite) only read it.

// groupNamedPaths is the server's cutover.GroupNamed: the private objects of the
// CustomResourceDefinitions and APIServices named by their upstream names (serveGroupNamed).
type groupNamedPaths struct{ s *server }

// PrivateObjectPath returns the path of the private object a CRD or APIService request names by its
// upstream name, or "".
func (g groupNamedPaths) PrivateObjectPath(r *http.Request, req *classify.Request) string {
	switch req.Class {
	case classify.CRD:
		return privateObjectPath(r, req, g.s.crdNamed.names)
	case classify.APIService:
		return privateObjectPath(r, req, g.s.apiServices.names)
	}
	return ""
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

// privateObjectPath returns the path of the private object a request names by its upstream name, or "".
func privateObjectPath(r *http.Request, req *classify.Request, names *groupnamed.Names) string {
	named, privateName := namedObject(r, req, names)
	if named != groupnamed.Mapped {
		return ""
	}
	resource := names.GroupResource().Resource
	return strings.Replace(r.URL.Path, "/"+resource+"/"+req.Name, "/"+resource+"/"+privateName, 1)
}

// withTarget decides the target of a request that has none yet (cutover.TargetOf), from the private
// groups: the requests withServing does not serve by a namespace's mode, genuine upgrades, and the
// requests the Adapter and the merged lists and watches make themselves. Every request the proxy forwards passes it
// (or withServing) before it reaches a ReverseProxy (rewrite reads the target).
func (s *server) withTarget(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ex := exchangeFrom(r.Context()); ex.target == nil {
			t := cutover.TargetOf(r, ex.req, cutover.Inputs{GroupNamed: groupNamedPaths{s}})
			ex.target = &t
		}
		next.ServeHTTP(w, r)
	})
}
