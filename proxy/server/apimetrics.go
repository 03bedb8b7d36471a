package server

import (
	"net/http"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/gzip"
	"github.com/openshift/hypershift-capi-proxy/proxy/metrics"
	"github.com/openshift/hypershift-capi-proxy/proxy/negotiate"
)

// apiserverMetricsPath is kube-apiserver's own Prometheus endpoint, which names the API groups of the
// requests and objects it counts (apiserver_request_total{group=...}, apiserver_storage_objects{resource=
// "machines.cluster.hypershift.openshift.io"}, ...).
const apiserverMetricsPath = "/metrics"

// metricsTextFormat is the Prometheus text exposition format (version 0.0.4), which every scraper takes
// and kube-apiserver serves whatever else a client asks for.
const metricsTextFormat = "text/plain; version=0.0.4"

// serveAPIServerMetrics serves kube-apiserver's /metrics with the groups as the proxy's clients see them
// (metrics.APIServerText): asked of the backend in the text format, uncompressed, and compressed for a client
// that accepts gzip as the proxy compresses its other answers (gzip.Compress).
func (s *server) serveAPIServerMetrics(w http.ResponseWriter, r *http.Request, ex *exchange) {
	ex.gzip = gzip.Accepts(r.Header)
	r.Header.Set("Accept", metricsTextFormat)
	r.Header.Set("Accept-Encoding", "identity")
	ex.respond = s.recordFailure(ex, func(resp *http.Response) error {
		if mediaType, _ := negotiate.MediaType(resp.Header.Get("Content-Type")); resp.StatusCode != http.StatusOK || mediaType != "text/plain" {
			return nil
		}
		if err := gzip.Decompress(resp); err != nil {
			return err
		}
		resp.Body = metrics.APIServerText(resp.Body)
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
		return nil
	})
	s.proxy.ServeHTTP(w, r)
}
