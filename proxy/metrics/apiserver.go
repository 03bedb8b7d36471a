package metrics

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/openshift/hypershift-capi-proxy/proxy/groupnames"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// APIServerText returns kube-apiserver's text exposition (its /metrics, version 0.0.4), body, read as a
// client of the proxy sees it (apiServerText); closing it closes body.
func APIServerText(body io.ReadCloser) io.ReadCloser {
	return &apiServerText{in: bufio.NewReaderSize(body, 32<<10), closer: body}
}

// apiServerText is kube-apiserver's text exposition read line by line, as a client of the proxy sees it:
// a line that names an upstream mapped group (a sample of the platform's own CAPI objects, which do not
// exist through the proxy) is dropped, and in any other line the private groups' names are replaced by
// the upstream ones (translate.Direction.Text), so that the private groups do not exist either and no two
// samples end up with the same labels. Comments (# HELP, # TYPE) name no group.
type apiServerText struct {
	in     *bufio.Reader
	closer io.Closer
	// out holds the translation of the lines read and not yet returned.
	out bytes.Buffer
	err error
}

func (m *apiServerText) Read(p []byte) (int, error) {
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
func (m *apiServerText) translate(line []byte) {
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

func (m *apiServerText) Close() error { return m.closer.Close() }
