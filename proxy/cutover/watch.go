package cutover

// Cluster-wide watches of a namespaced mapped kind (over HTTP; a websocket's is served as a namespaced
// one is, and answered 503 while namespaces are mixed): served through the merge always, so that a
// namespace can move between the groups inside the open watch, which a change of a namespace's serving
// label then never ends.
//
// PARTS: the private watch of every namespace but those served from the upstream groups when the watch
// began (a field selector metadata.namespace!=<ns> for each), and one watch per namespace served from
// elsewhere (its upstream groups, or its private groups once it moved back), each started from the
// client's resourceVersion, or from the list of a move (below). Their events are sent to the client as
// they arrive: each part's events keep their order, events of different parts are ordered only by
// arrival (their resourceVersions are not monotonic across parts). Each namespace's events are taken
// from one part only, its owner; what other parts send of it is dropped. BOOKMARK events that report a
// part's progress are not passed on (one part's progress says nothing of another's), but record it; the
// bookmark that ends a watch's initial events (sendInitialEvents, annotation k8s.io/initial-events-end)
// is sent once every first part has sent its own, with the lowest of their resourceVersions, so that a
// watch resumed from it misses nothing (it may see again what it saw). When any part ends, the whole
// watch ends (cleanly, at an event boundary): client-go's reflector resumes it at once from the last
// resourceVersion it saw, without a relist. An ERROR event of a part is passed on and ends it too.
//
// MOVE: when a namespace's groups change (the Namespaces' view replaced after a mode change), the watch
// moves the namespace between its events, in the client's terms:
//
//  1. What the client holds of the namespace: the list of its owner part's groups at that part's
//     progress P (resourceVersionMatch=Exact). The part's events come in resourceVersion order and all of
//     them up to P were handled, so the client holds exactly that list.
//  2. What it must hold now: a list from the namespace's new groups, at the latest resourceVersion Q
//     (etcd revisions are one sequence across both groups' CRDs, and Q follows the label change that the
//     proxy saw).
//  3. The difference, as watch events sorted by name: DELETED (the object as the client holds it) for
//     what is gone, ADDED for what is new, MODIFIED for what changed with its uid kept, and DELETED then
//     ADDED for an object whose uid differs (the private copy and the upstream one are different objects:
//     kube-apiserver never changes an object's uid, so a client sees a uid change only as a deletion and a
//     creation; client-go's informer then calls OnDelete with the old object and OnAdd with the new, where
//     MODIFIED would call OnUpdate with two objects of different uids, which no apiserver sends).
//  4. From then on the namespace's events come from a part of its new groups from Q.
//  5. A BOOKMARK (if the client asked allowWatchBookmarks) once every part has progressed to Q at least,
//     at the lowest part's progress: client-go's reflector resumes from it, after the change, and each
//     part resumed from there misses nothing (a part ahead of the others sends again what it sent).
//
// A watch resumed from a resourceVersion before the last move of any namespace is answered 410 Expired
// (Filter.guard): the proxy cannot tell from which groups the client holds a namespace then. A move that
// cannot be served (the owner part's progress unknown: a watch from resourceVersion "" or "0", its initial
// events not done, or a Table; the list at P gone with etcd's compaction; any part's error) ends the
// watch with a 410 Expired ERROR event, as every change did before.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/openshift/hypershift-capi-proxy/proxy/classify"
	"github.com/openshift/hypershift-capi-proxy/proxy/internal/inprocess"
	"github.com/openshift/hypershift-capi-proxy/proxy/loglevel"
	"github.com/openshift/hypershift-capi-proxy/translate"
)

// serveMergedWatch serves a cluster-wide watch, classified as req, with the namespaces' modes in view;
// core serves its private parts.
func (f *Filter) serveMergedWatch(w http.ResponseWriter, r *http.Request, req *classify.Request, core http.Handler, view *modes) {
	if req.WebSocket {
		f.unavailable(w, "a cluster-wide watch over a websocket is not served while namespaces are served from different API groups; watch over HTTP")
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	m := &mergedWatch{f: f, r: r.WithContext(ctx), req: req, core: core, w: w, query: r.URL.Query(),
		upstream: map[string]bool{}, excluded: map[string]bool{}, owners: map[string]owner{},
		events: make(chan watchLine), changed: make(chan struct{}, 1), view: view}
	defer m.closeParts()
	m.bookmarks = m.query.Get("allowWatchBookmarks") == "true"
	m.initialAsked = m.query.Get("sendInitialEvents") == "true"
	start := parseRV(m.query.Get("resourceVersion"))
	// A Table's events carry rows, not the objects a move lists: its watch ends on a move.
	m.switchable = !strings.Contains(strings.Join(r.Header.Values("Accept"), ","), "as=Table")

	parts := cloneQuery(m.query)
	parts.Set("allowWatchBookmarks", "true") // each part's progress; passed on only as the client asked
	private := cloneQuery(parts)
	private.Set("fieldSelector", excludeNamespaces(m.query.Get("fieldSelector"), view.upstream))
	first := m.start(r.URL.Path, private, false)
	if first.code != http.StatusOK {
		first.writeTo(w)
		return
	}
	for _, ns := range view.upstream {
		m.upstream[ns], m.excluded[ns] = true, true
		p := m.start(namespacedPath(r.URL.Path, req.Group, req.Version, ns), parts, true)
		if p.unserved() {
			m.closePart(len(m.parts) - 1)
			m.owners[ns] = owner{part: -1}
			continue
		}
		if p.code != http.StatusOK {
			p.writeTo(w)
			return
		}
		m.owners[ns] = owner{part: len(m.parts) - 1}
	}
	for _, p := range m.parts {
		if p != nil && start > 0 && !m.initialAsked {
			p.progress, p.known = start, true
		}
	}

	h := w.Header()
	for k, v := range first.header {
		h[k] = v
	}
	h.Del("Content-Length")
	w.WriteHeader(http.StatusOK)
	m.flush()

	for i, p := range m.parts {
		if p != nil {
			go p.lines(ctx, i, m.events)
		}
	}
	m.initial = newInitialEnds(len(m.parts))
	for i, p := range m.parts {
		if p == nil {
			m.initial.done(i)
		}
	}
	m.follow()
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.changed:
			if !m.moveAll() {
				_, _ = w.Write(expiredEvent(modeChanged))
				m.flush()
				return
			}
		case l := <-m.events:
			if m.handle(l) {
				return
			}
		}
	}
}

// mergedWatch is the state of one cluster-wide watch served through the merge; only its serving
// goroutine touches it, but for changed.
type mergedWatch struct {
	f     *Filter
	r     *http.Request
	req   *classify.Request
	core  http.Handler
	w     http.ResponseWriter
	query url.Values // the client's

	// parts are the watch's parts by index (0: the private watch of every namespace but excluded); a
	// part replaced by a move is closed and nil.
	parts []*watchPart
	// excluded are the namespaces part 0 does not cover (served from the upstream groups when it began).
	excluded map[string]bool
	// owners are the namespaces whose events come from another part than 0, or from part 0 only after a
	// resourceVersion.
	owners map[string]owner
	// upstream are the namespaces this watch serves from the upstream groups, and view the Namespaces'
	// view it last followed.
	upstream map[string]bool
	view     *modes

	events  chan watchLine
	changed chan struct{}
	stop    func() bool

	initial *initialEnds
	// initialAsked says the client asked for the initial events (sendInitialEvents).
	initialAsked bool
	// bookmarks says the client asked for BOOKMARK events; switchable that a move can be served in the
	// open watch.
	bookmarks, switchable bool
	// object is an event object's kind and apiVersion as the client gets them (the BOOKMARKs' own).
	object []byte
	// moved is the resourceVersion of the last move served; bookmark says a BOOKMARK is due once every
	// part progressed to it.
	moved    uint64
	bookmark bool
}

// owner is the part a namespace's events come from (-1: none, its groups do not serve the resource), and
// only those above resourceVersion after.
type owner struct {
	part  int
	after uint64
}

func (m *mergedWatch) flush() { _ = http.NewResponseController(m.w).Flush() }

// ownerOf returns the owner of namespace's events.
func (m *mergedWatch) ownerOf(namespace string) owner {
	if o, ok := m.owners[namespace]; ok {
		return o
	}
	if m.excluded[namespace] {
		return owner{part: -1}
	}
	return owner{}
}

// start starts a part (f.startWatch) and adds it.
func (m *mergedWatch) start(path string, query url.Values, upstream bool) *watchPart {
	p := m.f.startWatch(m.r, m.core, path, query, upstream)
	m.parts = append(m.parts, p)
	return p
}

func (m *mergedWatch) closePart(i int) {
	if p := m.parts[i]; p != nil {
		p.close()
		m.parts[i] = nil
	}
}

func (m *mergedWatch) closeParts() {
	if m.stop != nil {
		m.stop()
	}
	for i := range m.parts {
		m.closePart(i)
	}
}

// follow arranges for changed to be signalled once the view it follows is replaced after a mode change.
func (m *mergedWatch) follow() {
	if m.stop != nil {
		m.stop()
	}
	m.stop = context.AfterFunc(m.view.changed, func() {
		select {
		case m.changed <- struct{}{}:
		default:
		}
	})
}

// eventHead is what the watch reads of an event: its type, its object's kind and apiVersion, namespace
// and resourceVersion, and whether it is the BOOKMARK that ends the initial events.
type eventHead struct {
	typ, kind, apiVersion, namespace, resourceVersion string
	initialEventsEnd                                  bool
}

// readEventHead reads an event's head as kube-apiserver's decoder reads members (names matched exactly,
// the last of duplicates winning, a value that is no string read as ""), with translate's scanner: one
// validating pass and one pass over the event's and the object's members, without decoding the rest.
// ok is false for an event that is not valid JSON.
func readEventHead(data []byte) (ev eventHead, ok bool) {
	if translate.Valid(data) != nil {
		return ev, false
	}
	var object []byte
	translate.EachMember(data, func(key []byte, start, end int) bool {
		switch string(key) {
		case "type":
			ev.typ = stringValue(data[start:end])
		case "object":
			object = data[start:end]
		}
		return true
	})
	var metadata []byte
	translate.EachMember(object, func(key []byte, start, end int) bool {
		switch string(key) {
		case "kind":
			ev.kind = stringValue(object[start:end])
		case "apiVersion":
			ev.apiVersion = stringValue(object[start:end])
		case "metadata":
			metadata = object[start:end]
		}
		return true
	})
	var annotations []byte
	translate.EachMember(metadata, func(key []byte, start, end int) bool {
		switch string(key) {
		case "namespace":
			ev.namespace = stringValue(metadata[start:end])
		case "resourceVersion":
			ev.resourceVersion = stringValue(metadata[start:end])
		case "annotations":
			annotations = metadata[start:end]
		}
		return true
	})
	if ev.typ == "BOOKMARK" {
		ev.initialEventsEnd = translate.TopLevelStrings(annotations, initialEventsEnd)[0] == "true"
	}
	return ev, true
}

// stringValue is the string a JSON value (valid) holds, or "" if it is no string.
func stringValue(v []byte) string {
	if len(v) < 2 || v[0] != '"' {
		return ""
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1])
	}
	var s string
	_ = json.Unmarshal(v, &s) // valid: a string decodes
	return s
}

type objectHead struct {
	Name            string `json:"name"`
	Namespace       string `json:"namespace"`
	UID             string `json:"uid"`
	ResourceVersion string `json:"resourceVersion"`
}

// handle handles one event (or end) of a part; it reports whether the watch ends.
func (m *mergedWatch) handle(l watchLine) bool {
	p := m.parts[l.part]
	if p == nil {
		return false // a part a move replaced
	}
	if l.err != nil {
		return true // a part ended: so does the watch, at an event boundary
	}
	ev, ok := readEventHead(l.data)
	if !ok {
		return !m.write(l.data) // not ours to judge: the client reports it
	}
	if m.object == nil && ev.kind != "" {
		m.object, _ = json.Marshal(map[string]string{"kind": ev.kind, "apiVersion": ev.apiVersion})
	}
	rv := parseRV(ev.resourceVersion)
	switch ev.typ {
	case "ERROR":
		m.write(l.data)
		return true
	case "BOOKMARK":
		if ev.initialEventsEnd {
			p.progress, p.known = max(p.progress, rv), true
			if out := m.initial.event(l.part, rv, l.data); out != nil && !m.write(out) {
				return true
			}
		} else if p.known {
			p.progress = max(p.progress, rv)
		}
		return !m.dueBookmark()
	}
	if p.known {
		p.progress = max(p.progress, rv)
	}
	if o := m.ownerOf(ev.namespace); o.part != l.part || rv <= o.after && rv != 0 {
		return false // another part's namespace, or what a move's list brought the client
	}
	return !m.write(l.data) || !m.dueBookmark()
}

// write sends events to the client and flushes them; it reports whether they were sent.
func (m *mergedWatch) write(events []byte) bool {
	if _, err := m.w.Write(events); err != nil {
		return false
	}
	m.flush()
	return true
}

// dueBookmark sends the BOOKMARK a move made due once every part has progressed to the move's
// resourceVersion; it reports false if the client is gone.
func (m *mergedWatch) dueBookmark() bool {
	if !m.bookmark {
		return true
	}
	low := uint64(0)
	for _, p := range m.parts {
		if p == nil {
			continue
		}
		if !p.known {
			return true
		}
		if low == 0 || p.progress < low {
			low = p.progress
		}
	}
	if low < m.moved || m.object == nil {
		return true
	}
	m.bookmark = false
	return m.write(bookmarkEvent(m.object, low))
}

// bookmarkEvent is a BOOKMARK at rv of objects of kind and apiVersion object (a JSON object of those).
func bookmarkEvent(object []byte, rv uint64) []byte {
	obj := append([]byte(nil), object[:len(object)-1]...)
	obj = fmt.Appendf(obj, `,"metadata":{"resourceVersion":%q}}`, strconv.FormatUint(rv, 10))
	return fmt.Appendf(nil, `{"type":"BOOKMARK","object":%s}`+"\n", obj)
}

// moveAll follows the Namespaces' current view: it moves every namespace whose groups differ from
// the watch's; it reports false if a move could not be served (the watch then ends with 410).
func (m *mergedWatch) moveAll() bool {
	cur := m.f.namespaces.current()
	m.view = cur
	m.follow()
	var names []string
	for ns := range m.upstream {
		names = append(names, ns)
	}
	names = append(names, cur.upstream...)
	slices.Sort(names)
	names = slices.Compact(names)
	for _, ns := range names {
		want := cur.mode(ns).mode.Upstream()
		if want == m.upstream[ns] {
			continue
		}
		if !m.switchable || m.initialAsked && m.initial.pending > 0 {
			return false
		}
		if err := m.move(ns, want, cur.moved); err != nil {
			klog.V(loglevel.Unusual).InfoS("A cluster-wide watch could not move a namespace between API groups: ending it with 410 Expired",
				"namespace", ns, "resource", m.req.Resource, "toUpstream", want, "err", err)
			return false
		}
	}
	return true
}

// errNoPosition: the owner part's resourceVersion is not known.
var errNoPosition = errors.New("the watch's position in the namespace's old groups is not known")

// move serves namespace's move to the upstream groups (toUpstream) or to the private ones, made at
// resourceVersion moved at the latest (see MOVE above).
func (m *mergedWatch) move(namespace string, toUpstream bool, moved uint64) error {
	from := m.ownerOf(namespace)
	var held []listedObject
	if from.part >= 0 {
		p := m.parts[from.part]
		if !p.known {
			return errNoPosition
		}
		var err error
		held, _, _, err = m.list(namespace, m.upstream[namespace], max(p.progress, from.after))
		if err != nil {
			return fmt.Errorf("listing what the client holds: %w", err)
		}
	}
	now, q, served, err := m.list(namespace, toUpstream, 0)
	if err != nil {
		return fmt.Errorf("listing the new groups: %w", err)
	}
	if events := diffEvents(held, now); len(events) > 0 && !m.write(events) {
		return errors.New("the client is gone")
	}
	next := owner{part: -1}
	switch {
	case !served:
	case !toUpstream && !m.excluded[namespace]:
		next = owner{part: 0, after: q}
	default:
		query := url.Values{"watch": {"true"}, "allowWatchBookmarks": {"true"}, "resourceVersion": {strconv.FormatUint(q, 10)}}
		for _, k := range []string{"labelSelector", "fieldSelector", "timeoutSeconds"} {
			if v := m.query.Get(k); v != "" {
				query.Set(k, v)
			}
		}
		p := m.start(m.listPath(namespace), query, toUpstream)
		i := len(m.parts) - 1
		if p.code != http.StatusOK {
			m.closePart(i)
			return fmt.Errorf("watching the new groups: %d %s", p.code, bytes.TrimSpace(p.body.Bytes()))
		}
		p.progress, p.known = q, true
		go p.lines(m.r.Context(), i, m.events)
		next = owner{part: i}
	}
	if from.part > 0 {
		m.closePart(from.part)
	}
	m.owners[namespace] = next
	m.upstream[namespace] = toUpstream
	m.moved = max(m.moved, moved, q)
	m.bookmark = m.bookmarks
	klog.V(loglevel.PerRequest).InfoS("A cluster-wide watch moved a namespace between API groups", "namespace", namespace,
		"resource", m.req.Resource, "toUpstream", toUpstream, "resourceVersion", q)
	return nil
}

// listPath is the path of the list of the watch's resource in namespace.
func (m *mergedWatch) listPath(namespace string) string {
	return "/apis/" + m.req.Group + "/" + m.req.Version + "/namespaces/" + namespace + "/" + m.req.Resource
}

// listedObject is one object of a move's list.
type listedObject struct {
	objectHead
	raw json.RawMessage
}

// list lists namespace's objects of the watch's resource and selectors from the upstream or private
// groups, at exactly resourceVersion at (0: the latest); it returns them sorted by name, the list's
// resourceVersion, and whether the groups serve the resource at all.
func (m *mergedWatch) list(namespace string, upstream bool, at uint64) ([]listedObject, uint64, bool, error) {
	query := url.Values{}
	for _, k := range []string{"labelSelector", "fieldSelector"} {
		if v := m.query.Get(k); v != "" {
			query.Set(k, v)
		}
	}
	if at > 0 {
		query.Set("resourceVersion", strconv.FormatUint(at, 10))
		query.Set("resourceVersionMatch", string(metav1.ResourceVersionMatchExact))
	}
	p := m.f.record(m.r, m.core, m.listPath(namespace), query, upstream)
	if p.unserved() {
		return nil, 0, false, nil
	}
	if p.code != http.StatusOK {
		return nil, 0, true, fmt.Errorf("%d %s", p.code, bytes.TrimSpace(p.body.Bytes()))
	}
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(p.body.Bytes(), &list); err != nil {
		return nil, 0, true, err
	}
	out := make([]listedObject, 0, len(list.Items))
	for _, raw := range list.Items {
		var o struct {
			Metadata objectHead `json:"metadata"`
		}
		if err := json.Unmarshal(raw, &o); err != nil {
			return nil, 0, true, err
		}
		out = append(out, listedObject{objectHead: o.Metadata, raw: raw})
	}
	slices.SortFunc(out, func(a, b listedObject) int { return strings.Compare(a.Name, b.Name) })
	return out, parseRV(list.Metadata.ResourceVersion), true, nil
}

// diffEvents returns the watch events that turn what a client holds (held) into now, both sorted by
// name (see MOVE above).
func diffEvents(held, now []listedObject) []byte {
	var out []byte
	add := func(typ string, o listedObject) {
		out = fmt.Appendf(out, `{"type":%q,"object":%s}`+"\n", typ, o.raw)
	}
	i, j := 0, 0
	for i < len(held) || j < len(now) {
		switch {
		case j == len(now) || i < len(held) && held[i].Name < now[j].Name:
			add("DELETED", held[i])
			i++
		case i == len(held) || now[j].Name < held[i].Name:
			add("ADDED", now[j])
			j++
		default:
			switch {
			case held[i].UID != now[j].UID:
				add("DELETED", held[i])
				add("ADDED", now[j])
			case held[i].ResourceVersion != now[j].ResourceVersion:
				add("MODIFIED", now[j])
			}
			i++
			j++
		}
	}
	return out
}

// watchLine is one event (a line) of a part of a merged watch, or the error that ended the part.
type watchLine struct {
	part int
	data []byte
	err  error
}

// watchPart is one running watch of a merged watch.
type watchPart struct {
	part
	// stream is the part's body as it is served (inprocess.Streamed.Body).
	stream io.ReadCloser
	cancel context.CancelFunc
	// progress is the resourceVersion up to which the part's events were handled (known: once the
	// watch's position is known, from a resourceVersion it began at or its initial-events-end bookmark).
	progress uint64
	known    bool
}

// startWatch starts one part in process (inprocess.Start) and waits for its response headers (or its
// whole answer if it failed).
func (f *Filter) startWatch(r *http.Request, core http.Handler, path string, query url.Values, upstream bool) *watchPart {
	sub, cancel := f.subRequest(r, path, query, upstream)
	st := inprocess.Start(f.partHandler(core, upstream), sub)
	p := &watchPart{part: part{code: st.Code, header: st.Header, body: &bytes.Buffer{}}, stream: st.Body, cancel: cancel}
	if p.code != http.StatusOK {
		// An error answer: read it whole.
		_, _ = io.Copy(p.body, st.Body)
	}
	return p
}

func (p *watchPart) close() {
	p.cancel()
	_ = p.stream.Close()
}

// lines sends the part's events to events until it ends.
func (p *watchPart) lines(ctx context.Context, i int, events chan<- watchLine) {
	br := bufio.NewReaderSize(p.stream, 64<<10)
	for {
		// Only whole events are passed on: a last line without its newline was cut off.
		line, err := br.ReadBytes('\n')
		if err == nil && len(bytes.TrimSpace(line)) > 0 {
			select {
			case events <- watchLine{part: i, data: line}:
			case <-ctx.Done():
				return
			}
		}
		if err != nil {
			select {
			case events <- watchLine{part: i, err: err}:
			case <-ctx.Done():
			}
			return
		}
	}
}

// initialEnds gathers the initial-events-end BOOKMARKs of the first parts of a merged watch.
type initialEnds struct {
	seen    []bool
	pending int
	// lowest is the event with the lowest resourceVersion seen so far.
	lowest   []byte
	lowestRV uint64
}

func newInitialEnds(parts int) *initialEnds {
	return &initialEnds{seen: make([]bool, parts), pending: parts}
}

// done counts part i as having sent its initial events (it has none).
func (e *initialEnds) done(i int) {
	if !e.seen[i] {
		e.seen[i] = true
		e.pending--
	}
}

// event takes the initial-events-end BOOKMARK data at rv of part i; it returns what to send (nil:
// nothing yet).
func (e *initialEnds) event(i int, rv uint64, data []byte) []byte {
	if i >= len(e.seen) || e.seen[i] {
		return nil
	}
	e.done(i)
	if e.lowest == nil || rv < e.lowestRV {
		e.lowest, e.lowestRV = data, rv
	}
	if e.pending > 0 {
		return nil
	}
	return e.lowest
}
