package sessions

import (
	"fmt"
	"path/filepath"
	"testing"
)

// turn does to session id what a gateway turn does: routing and the
// engine read its document (Get), then the client's message and the
// reply are appended, each under the session's lock.
func turn(t *testing.T, s *Store, id string, n int) {
	t.Helper()
	for range 2 {
		if _, err := s.Get(id); err != nil {
			t.Fatal(err)
		}
	}
	mustAppend(t, s, id, textMsg("user", fmt.Sprint("question ", n)))
	mustAppend(t, s, id, textMsg("assistant", fmt.Sprint("answer ", n)))
}

// TestTurnReadsDocumentOnce: a turn reads its session's document (read
// and decoded) at most once, not at each of its four uses: the store
// keeps it decoded, checked against the file's stat (docCache).
func TestTurnReadsDocumentOnce(t *testing.T) {
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "cached")
	// The first turns write the document's preview and let the
	// filesystem's clock pass its time.
	for n := range 10 {
		turn(t, s, id, n)
	}
	reads := countDocReads(t, s)
	const turns = 5
	for n := range turns {
		turn(t, s, id, 10+n)
	}
	if got := reads()[id]; got > turns {
		t.Fatalf("%d turns read the document %d times, want at most %d", turns, got, turns)
	}
}

// TestKeptDocumentRewrittenElsewhere: a document kept decoded and then
// rewritten by another process (another store on the same profile) is
// read again, by readers (a title of the same length) and by writers
// under the lock (an append's catalog line carries the state).
func TestKeptDocumentRewrittenElsewhere(t *testing.T) {
	s, _, _ := newTestStore(t)
	other := NewStore(filepath.Dir(s.Dir), "default", s.LockTimeout, func(string) {})
	id := mustCreate(t, s, "shared")
	for n := range 10 {
		turn(t, s, id, n)
	}
	for n, title := range []string{"aaaa", "bbbb", "cccc", "dddd"} {
		if _, err := other.Rename(id, title); err != nil {
			t.Fatal(err)
		}
		state, change := StateEnded, func() (Session, error) { return other.End(id, "test") }
		if n%2 == 1 {
			state, change = StateActive, func() (Session, error) { return other.Reopen(id) }
		}
		if _, err := change(); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Get(id); err != nil || got.Title != title || got.State != state {
			t.Fatalf("Get after another store's changes: title %q, state %q, %v; want %q, %q", got.Title, got.State, err, title, state)
		}
		turn(t, s, id, n)
		latest, err := s.catalogLatest()
		if err != nil {
			t.Fatal(err)
		}
		if got := latest[id].State; got != state {
			t.Fatalf("catalog line of an append after another store's change: state %q, want %q", got, state)
		}
	}
}
