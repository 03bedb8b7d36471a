package server

import (
	"runtime"
	"runtime/debug"
	"sync"
	"time"
)

// Returning memory to the operating system after a burst of watches: each open watch holds buffers
// (the backend's and the client's streams, the event being translated); once most of them have ended,
// the Go heap has room for all of them again but keeps it, and the runtime's background scavenger
// gives it back only slowly (and only after a garbage collection, which an idle proxy may not run for
// minutes). A sidecar's RSS must come back down: the proxy drops the watches' shared translations,
// collects and returns the free memory itself, once, a short while after the number of open watches
// fell to half its peak, and with Options.PageOutExecutable the pages of its executable the burst
// touched too (pageout.Executable). It collects
// twice: what a sync.Pool holds (the reverse proxy's copy buffers, the HTTP/2 server's response writers
// and the HTTP/2 client's data buffers, several KB per watch) survives one collection in the pool's
// victim cache, and an idle proxy runs no second one.
const (
	// releaseMinWatches is the peak below which a burst is too small to matter.
	releaseMinWatches = 64
	// releaseDelay lets the rest of a burst end before the memory is returned (one collection per burst).
	releaseDelay = 5 * time.Second
)

// watchMemory counts open watches and returns memory after a burst (see above).
type watchMemory struct {
	mu         sync.Mutex
	open, peak int
	timer      *time.Timer
	// release returns the memory: releaseMemory.
	release func()
}

// newWatchMemory returns a watchMemory that calls release after a burst.
func newWatchMemory(release func()) *watchMemory { return &watchMemory{release: release} }

// releaseMemory collects twice and returns the free memory to the operating system. The watches' copy
// buffers and gzip writers go back to sync.Pools when they end; a pool keeps what a collection finds
// in it as a victim cache until the next one, so debug.FreeOSMemory's one collection would leave a
// burst's buffers live in an idle proxy, which may not collect again for minutes.
func releaseMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

func (m *watchMemory) started() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.open++
	m.peak = max(m.peak, m.open)
}

func (m *watchMemory) ended() {
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
