package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/transport"
)

// reqKind is what an informer's GET asks for.
type reqKind int

const (
	// reqList is a LIST (the reflector's list, or its fallback from a watch list).
	reqList reqKind = iota
	// reqWatch is a watch from a resourceVersion the informer has (a resumed watch).
	reqWatch
	// reqWatchList is a watch with sendInitialEvents=true: client-go 1.35's list (WatchListClient).
	reqWatchList
)

// request is one GET of an informer, as its transport saw it.
type request struct {
	kind reqKind
	// start is when it was sent, header when its response headers came, end when its body ended (zero
	// while open), initialEnd when a watch list's initial-events-end bookmark came.
	start, header, end, initialEnd time.Time
	// status is the response's HTTP status, 0 on a transport error.
	status int
}

// tracker records every informer's list and watch requests, by informer (requestKey), since the last
// mark: how many there were of each kind and when each informer's watch was live again.
type tracker struct {
	mu    sync.Mutex
	byKey map[string][]*request
	// held counts the writes answered 429 (held while their namespace is cut over; client-go retries them).
	held atomic.Int64
}

func newTracker() *tracker { return &tracker{byKey: map[string][]*request{}} }

// mark forgets every request so far.
func (t *tracker) mark() {
	t.mu.Lock()
	t.byKey = map[string][]*request{}
	t.mu.Unlock()
	t.held.Store(0)
}

// requestKey names an informer's requests: its manager, the collection's path, its label selector and
// whether it reads metadata only (two informers of a manager differ in one of these).
func requestKey(manager, path, labelSelector string, metadataOnly bool) string {
	k := manager + " " + path + "?" + labelSelector
	if metadataOnly {
		k += " metadata"
	}
	return k
}

// wrap returns the transport wrapper of manager's clients.
func (t *tracker) wrap(manager string) transport.WrapperFunc {
	return func(next http.RoundTripper) http.RoundTripper {
		return &trackedTransport{t: t, manager: manager, next: next}
	}
}

type trackedTransport struct {
	t       *tracker
	manager string
	next    http.RoundTripper
}

func (rt *trackedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		resp, err := rt.next.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusTooManyRequests {
			rt.t.held.Add(1)
		}
		return resp, err
	}
	q := req.URL.Query()
	kind := reqList
	if w := q.Get("watch"); w == "true" || w == "1" {
		kind = reqWatch
		if q.Get("sendInitialEvents") == "true" {
			kind = reqWatchList
		}
	}
	key := requestKey(rt.manager, req.URL.Path, q.Get("labelSelector"), strings.Contains(req.Header.Get("Accept"), "as=PartialObjectMetadata"))
	r := &request{kind: kind, start: time.Now()}
	rt.t.mu.Lock()
	rt.t.byKey[key] = append(rt.t.byKey[key], r)
	rt.t.mu.Unlock()
	resp, err := rt.next.RoundTrip(req)
	rt.t.mu.Lock()
	defer rt.t.mu.Unlock()
	r.header = time.Now()
	if err != nil {
		r.end = r.header
		return nil, err
	}
	r.status = resp.StatusCode
	resp.Body = &trackedBody{ReadCloser: resp.Body, t: rt.t, r: r, scan: kind == reqWatchList}
	return resp, nil
}

// initialEventsEnd is the annotation key of the bookmark that ends a watch list's initial events
// (metav1.InitialEventsAnnotationKey); its bytes appear in the JSON and the protobuf encodings alike.
var initialEventsEnd = []byte("k8s.io/initial-events-end")

// trackedBody records when a response body ends and, for a watch list, when its initial events end.
type trackedBody struct {
	io.ReadCloser
	t    *tracker
	r    *request
	scan bool
	tail []byte // the last bytes read, for a marker split across reads
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.scan && n > 0 {
		found := bytes.Contains(p[:n], initialEventsEnd)
		if !found && len(b.tail) > 0 {
			head := p[:min(n, len(initialEventsEnd)-1)]
			found = bytes.Contains(append(b.tail, head...), initialEventsEnd)
		}
		if found {
			b.scan = false
			b.t.mu.Lock()
			b.r.initialEnd = time.Now()
			b.t.mu.Unlock()
		} else {
			keep := p[max(0, n-(len(initialEventsEnd)-1)):n]
			b.tail = append(b.tail[:0], keep...)
		}
	}
	if err != nil {
		b.finish()
	}
	return n, err
}

func (b *trackedBody) Close() error {
	b.finish()
	return b.ReadCloser.Close()
}

func (b *trackedBody) finish() {
	b.t.mu.Lock()
	if b.r.end.IsZero() {
		b.r.end = time.Now()
	}
	b.t.mu.Unlock()
}

// counts are the requests since the mark: relists (LISTs and watch lists), resumed watches, and those
// that failed (a transport error or a status other than 200).
type counts struct {
	relists, watches, failed int
	// relistedKeys counts the informers that relisted.
	relistedKeys int
}

// live says whether every informer of keys has, since the mark, a watch open for at least settle that is
// live (its response headers in and, for a watch list, its initial events), and when the last of them
// became live. notLive counts the informers that are not.
func (t *tracker) live(keys []string, settle time.Duration) (all bool, last time.Time, notLive int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	for _, k := range keys {
		reqs := t.byKey[k]
		if len(reqs) == 0 {
			notLive++
			continue
		}
		r := reqs[len(reqs)-1]
		if r.kind == reqList || r.status != http.StatusOK || !r.end.IsZero() {
			notLive++
			continue
		}
		at := r.header
		if r.kind == reqWatchList {
			if r.initialEnd.IsZero() {
				notLive++
				continue
			}
			at = r.initialEnd
		}
		if now.Sub(at) < settle {
			notLive++
			continue
		}
		if at.After(last) {
			last = at
		}
	}
	return notLive == 0, last, notLive
}

// managerOf is the manager of an informer's key (requestKey).
func managerOf(key string) string {
	m, _, _ := strings.Cut(key, " ")
	return m
}

// count returns the counts since the mark of the informers whose key satisfies match (all if nil).
func (t *tracker) count(match func(key string) bool) counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	var c counts
	for k, reqs := range t.byKey {
		if match != nil && !match(k) {
			continue
		}
		relisted := false
		for _, r := range reqs {
			switch {
			case r.status != http.StatusOK && !r.header.IsZero():
				c.failed++
			case r.kind == reqWatch:
				c.watches++
			default:
				c.relists++
				relisted = true
			}
		}
		if relisted {
			c.relistedKeys++
		}
	}
	return c
}
