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
	if m.pending {
		t.Fatal("a release was scheduled for 10 watches")
	}
	for range 100 {
		m.Started()
	}
	m.timer.Stop() // the release after the burst of opens (TestReleasesAfterBurstsOfOpens)
	m.pending = false
	for range 49 {
		m.Ended()
	}
	if m.pending {
		t.Fatal("a release was scheduled with 51 of 100 watches open")
	}
	m.Ended()
	if !m.pending {
		t.Fatal("no release scheduled with 50 of 100 watches open")
	}
	m.timer.Stop()
	m.fire() // what the timer calls
	<-released
}

// TestReleasesAfterBurstsOfOpens: memory is returned after the open watches reach releaseMinWatches,
// then each time they grow by a quarter of those open at the last release (and by at least
// releaseMinWatches), and not while they stay below.
func TestReleasesAfterBurstsOfOpens(t *testing.T) {
	released := make(chan struct{}, 10)
	m := New(func() { released <- struct{}{} })
	fire := func() {
		t.Helper()
		m.timer.Stop()
		m.fire() // what the timer calls
		<-released
	}
	for range releaseMinWatches - 1 {
		m.Started()
	}
	if m.pending {
		t.Fatalf("a release was scheduled for %d watches", releaseMinWatches-1)
	}
	m.Started()
	if !m.pending || m.due.IsZero() {
		t.Fatalf("no release scheduled when %d watches opened", releaseMinWatches)
	}
	due := m.due
	m.Started() // the burst goes on: the release moves, not its deadline
	if !m.pending || !m.due.Equal(due) {
		t.Fatalf("a release pending until %v is now pending=%t until %v", due, m.pending, m.due)
	}
	fire()
	if m.pending || m.released != releaseMinWatches+1 {
		t.Fatalf("after the release: pending=%t, released=%d, want false, %d", m.pending, m.released, releaseMinWatches+1)
	}
	// openTo opens watches up to one short of open, where no release may be pending yet, and then one
	// more, which must schedule it.
	openTo := func(open int) {
		t.Helper()
		for m.open < open-1 {
			m.Started()
		}
		if m.pending {
			t.Fatalf("a release was scheduled with %d watches open after a release at %d", m.open, m.released)
		}
		m.Started()
		if !m.pending {
			t.Fatalf("no release scheduled with %d watches open after a release at %d", m.open, m.released)
		}
		fire()
	}
	openTo(m.open + releaseMinWatches) // steps of releaseMinWatches while they are more than a quarter
	m.released = 1000                  // then steps of a quarter
	m.open = 1000
	openTo(1250)

	// A burst of ends' release, pending, is kept as it is by opens.
	for m.open > m.peak/2 {
		m.Ended()
	}
	if !m.pending || !m.due.IsZero() {
		t.Fatalf("after a burst of ends: pending=%t, due=%v, want true and none", m.pending, m.due)
	}
	m.released = 0
	m.Started()
	if !m.due.IsZero() {
		t.Fatal("an open moved the release of a burst of ends")
	}
	fire()
}
