// Package memrelease returns memory to the operating system after a burst of watches: each open watch
// holds buffers (the backend's and the client's streams, the event being translated); once most of them
// have ended, the Go heap has room for all of them again but keeps it, and the runtime's background
// scavenger gives it back only slowly (and only after a garbage collection, which an idle proxy may not
// run for minutes). A sidecar's RSS must come back down: Watches calls its release function once, a
// short while after the number of open watches fell to half its peak. The proxy's (server.New) drops
// the watches' shared translations, collects and returns the free memory itself (Release), and with
// server.Options.PageOutExecutable returns the pages of its executable the burst touched too
// (pageout.Executable). It collects twice: what a sync.Pool holds (the reverse proxy's copy buffers,
// the HTTP/2 server's response writers and the HTTP/2 client's data buffers, several KB per watch)
// survives one collection in the pool's victim cache, and an idle proxy runs no second one.
package memrelease

import (
	"runtime"
	"runtime/debug"
	"sync"
	"time"
)

const (
	// releaseMinWatches is the peak below which a burst is too small to matter.
	releaseMinWatches = 64
	// releaseDelay lets the rest of a burst end before the memory is returned (one collection per burst).
	releaseDelay = 5 * time.Second
)

// Watches counts open watches and returns memory after a burst (see the package doc): a burst is a peak
// of at least 64 open watches, over once half of them have ended; release is called 5s after that, and a
// burst over before then moves the call, so that watches ending together get one. Its methods may be
// called from any goroutine.
type Watches struct {
	mu         sync.Mutex
	open, peak int
	timer      *time.Timer
	// release returns the memory (Release and what the caller holds).
	release func()
}

// New returns a Watches that calls release after a burst.
func New(release func()) *Watches { return &Watches{release: release} }

// Release collects twice and returns the free memory to the operating system. The watches' copy
// buffers and gzip writers go back to sync.Pools when they end; a pool keeps what a collection finds
// in it as a victim cache until the next one, so debug.FreeOSMemory's one collection would leave a
// burst's buffers live in an idle proxy, which may not collect again for minutes.
func Release() {
	runtime.GC()
	debug.FreeOSMemory()
}

// Started counts a watch that opened.
func (m *Watches) Started() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.open++
	m.peak = max(m.peak, m.open)
}

// Ended counts a watch that ended, and schedules the release at the end of a burst.
func (m *Watches) Ended() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.open--
	if m.peak < releaseMinWatches || m.open > m.peak/2 {
		return
	}
	m.peak = m.open
	if m.timer == nil {
		m.timer = time.AfterFunc(releaseDelay, m.release)
	} else {
		m.timer.Reset(releaseDelay)
	}
}
