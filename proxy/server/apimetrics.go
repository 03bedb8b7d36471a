package server

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"

	"github.com/openshift/hypershift-capi-proxy/proxy/groupnames"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/gzip"
	"github.com/openshift/hypershift-capi-proxy/proxy/negotiate"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// apiserverMetricsPath is kube-apiserver's own Prometheus endpoint, which names the API groups of the
// requests and objects it counts (apiserver_request_total{group=...}, apiserver_storage_objects{resource=
// "machines.cluster.hypershift.openshift.io"}, ...).
const apiserverMetricsPath = "/metrics"

// metricsTextFormat is the Prometheus text exposition format (version 0.0.4), which every scraper takes
// and kube-apiserver serves whatever else a client asks for.
const metricsTextFormat = "text/plain; version=0.0.4"

// serveAPIServerMetrics serves kube-apiserver's /metrics with the groups as the proxy's clients see them
// (apiserverMetrics): asked of the backend in the text format, uncompressed, and compressed for a client
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
		resp.Body = &metricsReader{in: bufio.NewReaderSize(resp.Body, 32<<10), closer: resp.Body}
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
		return nil
	})
	s.proxy.ServeHTTP(w, r)
}

// metricsReader is kube-apiserver's text exposition read line by line, as a client of the proxy sees it:
// a line that names an upstream mapped group (a sample of the platform's own CAPI objects, which do not
// exist through the proxy) is dropped, and in any other line the private groups' names are replaced by
// the upstream ones (translate.Direction.Text), so that the private groups do not exist either and no two
// samples end up with the same labels. Comments (# HELP, # TYPE) name no group.
type metricsReader struct {
	in     *bufio.Reader
	closer io.Closer
	// out holds the translation of the lines read and not yet returned.
	out bytes.Buffer
	err error
}

func (m *metricsReader) Read(p []byte) (int, error) {
	for m.out.Len() == 0 && m.err == nil {
		line, err := m.in.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: whole, however long.
			long := append([]byte(nil), line...)
			var rest []byte
			rest, err = m.in.ReadBytes('\n')
			line = append(long, rest...)
		}
		m.err = err
		if len(line) > 0 {
			m.translate(line)
		}
	}
	if m.out.Len() > 0 {
		return m.out.Read(p)
	}
	return 0, m.err
}

// translate appends the translation of one line to out.
func (m *metricsReader) translate(line []byte) {
	upstreamNames := groupnames.Mentions(translate.ToPrivate, line) && translate.ToPrivate.NamesIn(string(line))
	switch {
	case upstreamNames:
		// A sample of an upstream group: dropped.
	case groupnames.Mentions(translate.ToUpstream, line):
		m.out.WriteString(translate.ToUpstream.Text(string(line)))
	default:
		m.out.Write(line)
	}
}

func (m *metricsReader) Close() error { return m.closer.Close() }
