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

// TestWrittenAfter: from a mark, the sessions written after it, whatever
// their lines' times; a catalog rebuilt since (the mark no longer holds)
// is read back by time instead.
func TestWrittenAfter(t *testing.T) {
	s, clock, _ := newTestStore(t)
	mustCreate(t, s, "a")
	mustCreate(t, s, "b")
	ids, mark, err := s.WrittenAfter(CatalogMark{}, clock.Now().Add(time.Hour))
	if err != nil || len(ids) != 0 || mark.Offset == 0 {
		t.Fatalf("WrittenAfter(zero) = %v, %+v, %v", ids, mark, err)
	}
	if _, err := s.Append("a", []Message{textMsg("user", "hi")}); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "c")
	// Far in the future: only the mark can find them.
	ids, next, err := s.WrittenAfter(mark, clock.Now().Add(time.Hour))
	if err != nil || !slices.Equal(ids, []string{"a", "c"}) || next.Offset <= mark.Offset {
		t.Errorf("WrittenAfter(mark) = %v, %+v, %v; want [a c]", ids, next, err)
	}
	if ids, again, err := s.WrittenAfter(next, clock.Now().Add(time.Hour)); err != nil || len(ids) != 0 || again != next {
		t.Errorf("WrittenAfter(end) = %v, %+v, %v; want nothing, the same mark", ids, again, err)
	}
	if err := s.RebuildCatalog(); err != nil {
		t.Fatal(err)
	}
	ids, _, err = s.WrittenAfter(next, clock.Now().Add(-time.Minute))
	if err != nil || len(ids) != 3 {
		t.Errorf("WrittenAfter(a mark the rebuild undid) = %v, %v; want all three, by time", ids, err)
	}
}
