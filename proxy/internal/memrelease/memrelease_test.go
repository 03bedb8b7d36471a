package memrelease

import "testing"

// TestReleasesAfterBursts: memory is returned once per burst of at least releaseMinWatches
// watches, when half of them have ended, and not for small numbers of watches.
func TestReleasesAfterBursts(t *testing.T) {
	released := make(chan struct{}, 10)
	m := New(func() { released <- struct{}{} })
	for range 10 {
		m.Started()
	}
	for range 10 {
		m.Ended()
	}
	if m.timer != nil {
		t.Fatal("a release was scheduled for 10 watches")
	}
	for range 100 {
		m.Started()
	}
	for range 49 {
		m.Ended()
	}
	if m.timer != nil {
		t.Fatal("a release was scheduled with 51 of 100 watches open")
	}
	m.Ended()
	if m.timer == nil {
		t.Fatal("no release scheduled with 50 of 100 watches open")
	}
	m.timer.Stop()
	m.release() // what the timer calls
	<-released
}
