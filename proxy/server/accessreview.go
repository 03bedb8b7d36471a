package server

import (
	"net/http"

	"github.com/openshift/hypershift-capi-proxy/proxy/accessreview"
	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/gzip"
	"github.com/openshift/hypershift-capi-proxy/proxy/status"
)

// prepareAccessReview decides how an access review (accessreview.IsAccessReview) is sent: as the request it asks
// about would be. Its namespace is in its body (accessreview.ReviewNamespace): where that namespace is served
// from the upstream groups (package cutover), the review goes to the backend as it is, as the requests of
// the namespace do (cutover.Target.UntranslatedRequest); elsewhere it is translated to the private groups as any
// body: it reports true for the former. A SelfSubjectRulesReview's answer is first rid of the rules that reach nothing through the proxy
// in that namespace (rulesReviewServed). A review of a namespace whose mode is not known yet (the
// Namespaces' first list is not in) is answered 503 with Retry-After, as such requests are. ok is false
// when it answered the request itself (an error).
func (s *server) prepareAccessReview(w http.ResponseWriter, r *http.Request, ex *exchange) (upstream, ok bool) {
	data, err := body.ReadRequest(r, s.maxBody)
	if err != nil {
		status.Write(w, err)
		return false, false
	}
	body.SetRequest(r, r.Header.Get("Content-Type"), data)
	if namespace := accessreview.ReviewNamespace(r.Header.Get("Content-Type"), data); namespace != "" && s.namespaces != nil {
		if !s.namespaces.Synced() {
			s.cutover.NotSynced(w)
			return false, false
		}
		upstream = s.namespaces.Upstream(namespace)
	}
	if ex.req.Resource == "selfsubjectrulesreviews" {
		reviewUpstream := upstream
		ex.rulesReview = &reviewUpstream
	}
	return upstream, true
}

// rulesReviewServed applies accessreview.RulesReviewServed to the backend's answer to a SelfSubjectRulesReview
// (a 201 in JSON or protobuf; anything else, a Status, is left to the translation).
func rulesReviewServed(resp *http.Response, upstream bool) error {
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return nil
	}
	if err := gzip.Decompress(resp); err != nil {
		return err
	}
	contentType := resp.Header.Get("Content-Type")
	return replaceBody(resp, func(data []byte) ([]byte, error) { return accessreview.RulesReviewServed(contentType, data, upstream) })
}
