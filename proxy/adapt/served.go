package adapt

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/openshift/hypershift-capi-proxy/proxy/loglevel"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// refreshTimeout bounds one read of the backend's discovery.
const refreshTimeout = 30 * time.Second

// aggregatedV2 is the Accept header of aggregated discovery (apidiscovery.k8s.io v2).
const aggregatedV2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// served knows which versions of each mapped resource the backend serves, as the proxy's own aggregated
// discovery document shows them (upstream names, routed resources only). It reads that document through
// the proxy, with the credentials of the request that needs it (discovery is open to every authenticated
// user), at most once per ttl: a stale view is used while a fresh one is read in the background; only a
// request that finds no view waits for one. A failed read (an anonymous client, say) leaves no view, and
// is not retried before ttl. It is safe for concurrent use.
type served struct {
	next http.Handler
	ttl  time.Duration

	mu        sync.Mutex
	resources map[schema.GroupResource]map[string]apidiscoveryv2.APIResourceDiscovery
	known     bool      // resources holds a view
	attempted time.Time // of the last read, successful or not
	fetching  bool
}

// versions returns the versions the backend serves of gr, each with its aggregated discovery entry, and
// whether the backend's discovery could be read at all (false: the caller must not assume anything).
func (s *served) versions(r *http.Request, gr schema.GroupResource) (map[string]apidiscoveryv2.APIResourceDiscovery, bool) {
	s.mu.Lock()
	if time.Since(s.attempted) >= s.ttl && !s.fetching {
		s.fetching, s.attempted = true, time.Now()
		if s.known {
			// The refresh outlives the request that starts it.
			go s.refresh(discoveryRequest(r.Clone(context.WithoutCancel(r.Context()))))
		} else {
			s.mu.Unlock()
			s.refresh(discoveryRequest(r.Clone(r.Context())))
			s.mu.Lock()
		}
	}
	defer s.mu.Unlock()
	return s.resources[gr], s.known
}

// all returns the whole view, read as versions reads it.
func (s *served) all(r *http.Request) (map[schema.GroupResource]map[string]apidiscoveryv2.APIResourceDiscovery, bool) {
	s.versions(r, schema.GroupResource{})
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resources, s.known
}

// invalidate makes the next request read the backend's discovery again, after the backend answered a
// resource the view says it serves with 404 (its CRD changed).
// A resource whose CRD is not installed at all answers 404 every time: one read per second at most.
func (s *served) invalidate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.attempted) > time.Second {
		s.attempted = time.Time{}
	}
}

// observe takes a fresh view from an aggregated discovery document the proxy just served.
func (s *served) observe(l *apidiscoveryv2.APIGroupDiscoveryList) {
	view := index(l)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resources, s.attempted, s.known = view, time.Now(), true
}

func (s *served) refresh(req *http.Request) {
	ctx, cancel := context.WithTimeout(req.Context(), refreshTimeout)
	defer cancel()
	req = req.WithContext(ctx)
	defer func() {
		s.mu.Lock()
		s.fetching = false
		s.mu.Unlock()
	}()
	l, err := s.fetch(req)
	if err != nil {
		klog.V(loglevel.Unusual).InfoS("Reading the backend's discovery for in-process conversion failed", "err", err)
		return
	}
	s.observe(l)
}

func (s *served) fetch(req *http.Request) (*apidiscoveryv2.APIGroupDiscoveryList, error) {
	rec, err := record(s.next, req)
	if err != nil {
		return nil, err
	}
	if rec.Code() != http.StatusOK {
		return nil, fmt.Errorf("GET /apis answered %d: %.200s", rec.Code(), rec.Body.Bytes())
	}
	l := &apidiscoveryv2.APIGroupDiscoveryList{}
	if err := json.Unmarshal(rec.Body.Bytes(), l); err != nil {
		return nil, fmt.Errorf("decoding the aggregated discovery: %w", err)
	}
	if l.GroupVersionKind() != apidiscoveryv2.SchemeGroupVersion.WithKind("APIGroupDiscoveryList") {
		return nil, fmt.Errorf("GET /apis answered a %s, not aggregated discovery v2", l.GroupVersionKind())
	}
	return l, nil
}

// index lists the resources of the mapped groups of an aggregated discovery document by group resource
// and version.
func index(l *apidiscoveryv2.APIGroupDiscoveryList) map[schema.GroupResource]map[string]apidiscoveryv2.APIResourceDiscovery {
	out := map[schema.GroupResource]map[string]apidiscoveryv2.APIResourceDiscovery{}
	for _, g := range l.Items {
		if !translate.ToPrivate.Maps(g.Name) {
			continue
		}
		for _, v := range g.Versions {
			for _, r := range v.Resources {
				gr := schema.GroupResource{Group: g.Name, Resource: r.Resource}
				if out[gr] == nil {
					out[gr] = map[string]apidiscoveryv2.APIResourceDiscovery{}
				}
				out[gr][v.Version] = r
			}
		}
	}
	return out
}

// discoveryRequest turns a clone of a client's request into a GET of the aggregated /apis, with the
// client's headers (credentials, impersonation, user agent) but no body.
func discoveryRequest(r *http.Request) *http.Request {
	r.Method = http.MethodGet
	retarget(r, "/apis", "")
	r.Body, r.GetBody, r.ContentLength = http.NoBody, nil, 0
	for _, h := range []string{"Content-Type", "Content-Length", "Content-Encoding", "If-None-Match"} {
		r.Header.Del(h)
	}
	r.Header.Set("Accept", aggregatedV2)
	return r
}
