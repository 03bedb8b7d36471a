package server

import "testing"

// TestWatchMemoryReleasesAfterBursts: memory is returned once per burst of at least releaseMinWatches
// watches, when half of them have ended, and not for small numbers of watches.
func TestWatchMemoryReleasesAfterBursts(t *testing.T) {
	released := make(chan struct{}, 10)
	m := newWatchMemory(func() { released <- struct{}{} })
	for range 10 {
		m.started()
	}
	for range 10 {
		m.ended()
	}
	if m.timer != nil {
		t.Fatal("a release was scheduled for 10 watches")
	}
	for range 100 {
		m.started()
	}
	for range 49 {
		m.ended()
	}
	if m.timer != nil {
		t.Fatal("a release was scheduled with 51 of 100 watches open")
	}
	m.ended()
	if m.timer == nil {
		t.Fatal("no release scheduled with 50 of 100 watches open")
	}
	m.timer.Stop()
	m.release() // what the timer calls
	<-released
}
