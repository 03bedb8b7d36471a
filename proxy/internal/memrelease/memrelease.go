// Package memrelease returns memory to the operating system after a burst of watches: each open watch
// holds buffers (the backend's and the client's streams, the event being translated); once most of them
// have ended, the Go heap has room for all of them again but keeps it, and the runtime's background
// scavenger gives it back only slowly (and only after a garbage collection, which an idle proxy may not
// run for minutes). A sidecar's RSS must come back down: Watches calls its release function once, a
// short while after the number of open watches fell to half its peak. Opening watches leaves garbage
// too, which the heap keeps until its next collection (up to as much again as the watches hold, GOGC):
// Watches calls the release function a second after a burst of opens as well, once the open watches
// have grown by a quarter since the last release. The proxy's (server.New) drops
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
	// openedDelay lets the rest of a burst of opens come before the memory is returned; openedMaxDelay
	// bounds how long watches that keep opening put it off.
	openedDelay    = time.Second
	openedMaxDelay = 10 * time.Second
)

// Watches counts open watches and returns memory after bursts (see the package doc). A burst of ends
// is a peak of at least 64 open watches, over once half of them have ended; release is called 5s after
// that, and a burst over before then moves the call, so that watches ending together get one. A burst of
// opens is the open watches growing by a quarter, and at least 64, since the last release: opening a
// watch leaves garbage (its request's headers and context, the handler chain's state, the first
// event's translation), so that 1,000 watches opened together grow the Go heap to about twice what
// they hold (GOGC) until the next collection, which an idle proxy may not run for minutes; release is
// called 1s after the last open of the burst, at most 10s after the burst began. Its methods may be
// called from any goroutine.
type Watches struct {
	mu         sync.Mutex
	open, peak int
	// released is the number of watches open at the last release (0 before the first).
	released int
	timer    *time.Timer
	// pending says a release is scheduled; due, for a burst of opens, is when it runs at the latest.
	pending bool
	due     time.Time
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

// Started counts a watch that opened, and schedules the release at the end of a burst of opens.
func (m *Watches) Started() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.open++
	m.peak = max(m.peak, m.open)
	if m.open-m.released < max(releaseMinWatches, m.released/4) {
		return
	}
	now := time.Now()
	switch {
	case !m.pending:
		m.due = now.Add(openedMaxDelay)
	case m.due.IsZero():
		return // a burst of ends' release is pending, which comes sooner or later anyway
	}
	m.schedule(min(openedDelay, m.due.Sub(now)))
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
	m.due = time.Time{}
	m.schedule(releaseDelay)
}

// schedule makes the release run after d, instead of when it was scheduled for. m.mu is held.
func (m *Watches) schedule(d time.Duration) {
	m.pending = true
	if m.timer == nil {
		m.timer = time.AfterFunc(d, m.fire)
	} else {
		m.timer.Reset(d)
	}
}

// fire notes the watches open and releases the memory.
func (m *Watches) fire() {
	m.mu.Lock()
	m.released = m.open
	m.pending, m.due = false, time.Time{}
	m.mu.Unlock()
	m.release()
}
