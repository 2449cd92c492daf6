package sessions

import (
	"slices"
	"testing"
	"time"
)

// TestWrittenSince: the sessions made, appended to or removed at or after
// a time, each once, latest first; those written only before it are not.
func TestWrittenSince(t *testing.T) {
	s, clock, _ := newTestStore(t)
	mustCreate(t, s, "old")
	mustCreate(t, s, "gone")
	mustCreate(t, s, "grown")
	clock.Advance(time.Minute)
	since := clock.Now()
	clock.Advance(time.Second)
	if _, err := s.Append("grown", []Message{textMsg("user", "hi")}); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "new")
	if _, err := s.End("gone", "user"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete("gone", false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append("grown", []Message{textMsg("user", "again")}); err != nil {
		t.Fatal(err)
	}
	got, err := s.WrittenSince(since)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"grown", "gone", "new"}; !slices.Equal(got, want) {
		t.Errorf("WrittenSince = %v, want %v", got, want)
	}
	if s.Exists("gone") || !s.Exists("old") || s.Exists("../old") {
		t.Errorf("Exists: gone %v, old %v, ../old %v", s.Exists("gone"), s.Exists("old"), s.Exists("../old"))
	}
}
