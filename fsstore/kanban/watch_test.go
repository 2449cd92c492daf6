package kanban

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

func kbPoll(t *testing.T, w *Watcher) []string {
	t.Helper()
	evs, err := w.Poll()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		out = append(out, fmt.Sprintf("%s %s %s", ev.TaskID, ev.Type, ev.Detail))
	}
	return out
}

// TestWatchAfterCursor: every event is written in the same microsecond
// (the claim's change writes two), so a time cannot tell them apart; a
// watch resumed after each event's cursor reports exactly the events
// that follow it, each once.
func TestWatchAfterCursor(t *testing.T) {
	b, _, _ := kbBoard(t)
	b.Now = func() time.Time { return storetest.Epoch }
	a := kbCreate(t, b, Task{ID: "a", Title: "a"})
	kbCreate(t, b, Task{ID: "b", Title: "b", Parents: []string{a.ID}})
	if _, err := b.AddComment("a", "me", "note"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Complete("a", nil, "ok"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Claim("b", time.Minute, "default", nil); err != nil {
		t.Fatal(err)
	}
	w, err := b.Watch("", "2000-01-01T00:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	all, err := w.Poll()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, ev := range all {
		want = append(want, fmt.Sprintf("%s %s %s", ev.TaskID, ev.Type, ev.Detail))
	}
	if len(want) != 6 || want[len(want)-1] != "b claimed " {
		t.Fatalf("all events:\n%s", strings.Join(want, "\n"))
	}
	for i, ev := range all {
		c, err := ParseCursor(ev.Cursor.String())
		if err != nil || c != ev.Cursor {
			t.Fatalf("cursor %s read back as %v, %v", ev.Cursor, c, err)
		}
		w, err := b.WatchAfter("", c)
		if err != nil {
			t.Fatal(err)
		}
		if got := kbPoll(t, w); strings.Join(got, "\n") != strings.Join(want[i+1:], "\n") {
			t.Errorf("after %s (%s):\n%s\nwant:\n%s", c, want[i], strings.Join(got, "\n"), strings.Join(want[i+1:], "\n"))
		}
		if id := ev.TaskID; true {
			w, err := b.WatchAfter(id, c)
			if err != nil {
				t.Fatal(err)
			}
			var rest []string
			for _, s := range want[i+1:] {
				if strings.HasPrefix(s, id+" ") {
					rest = append(rest, s)
				}
			}
			if got := kbPoll(t, w); strings.Join(got, "\n") != strings.Join(rest, "\n") {
				t.Errorf("task %s after %s:\n%s\nwant:\n%s", id, c, strings.Join(got, "\n"), strings.Join(rest, "\n"))
			}
		}
	}
	// New events after a resumed watch's first poll come once.
	w, err = b.WatchAfter("", all[len(all)-1].Cursor)
	if err != nil {
		t.Fatal(err)
	}
	kbPoll(t, w)
	b.Now = time.Now
	if _, err := b.AddComment("b", "me", "later"); err != nil {
		t.Fatal(err)
	}
	if got := kbPoll(t, w); len(got) != 1 || got[0] != "b commented me" {
		t.Errorf("after a new comment: %q", got)
	}
}

// TestWatchAfterBadCursor: a cursor that is not text a watch printed,
// that is past its log's end, that does not end a line or names another
// event, or another task than the one watched, is bad input.
func TestWatchAfterBadCursor(t *testing.T) {
	b, _, _ := kbBoard(t)
	kbCreate(t, b, Task{ID: "a", Title: "a"})
	kbCreate(t, b, Task{ID: "b", Title: "b"})
	w, err := b.Watch("a", "2000-01-01T00:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := w.Poll()
	if err != nil || len(evs) != 1 {
		t.Fatalf("events of a: %v, %v", evs, err)
	}
	c := evs[0].Cursor
	for _, s := range []string{"", "x", c.String() + "/1", strings.Replace(c.String(), "/events/", "/other/", 1),
		strings.Replace(c.String(), "/a/", "/../", 1), strings.TrimSuffix(c.String(), fmt.Sprint(c.Offset)) + "0"} {
		if _, err := ParseCursor(s); !errors.Is(err, fsstore.ErrInvalid) {
			t.Errorf("ParseCursor(%q): %v", s, err)
		}
	}
	past, short, other := c, c, c
	past.Offset++
	short.Offset--
	other.TS = fsstore.TimeOf(storetest.Epoch.Add(-time.Hour))
	for _, bad := range []Cursor{past, short, other} {
		if _, err := b.WatchAfter("", bad); !errors.Is(err, fsstore.ErrInvalid) {
			t.Errorf("WatchAfter(%s): %v", bad, err)
		}
	}
	if _, err := b.WatchAfter("b", c); !errors.Is(err, fsstore.ErrInvalid) {
		t.Errorf("a's cursor in a watch of b: %v", err)
	}
	if err := os.Truncate(b.eventsPath("a"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := b.WatchAfter("", c); !errors.Is(err, fsstore.ErrInvalid) || !strings.Contains(err.Error(), "past the end") {
		t.Errorf("a cursor of a log cut shorter: %v", err)
	}
}

// TestWatchLateCommit: a change committed after the watch's first poll is
// reported, though its ts is earlier than the watch's start (its ts was
// taken before another change's, which committed first).
func TestWatchLateCommit(t *testing.T) {
	b, clock, _ := kbBoard(t)
	kbCreate(t, b, Task{ID: "a", Title: "a"})
	start := clock.Advance(time.Minute)
	w, err := b.Watch("", fsstore.TimeOf(start))
	if err != nil {
		t.Fatal(err)
	}
	if got := kbPoll(t, w); len(got) != 0 {
		t.Fatalf("first poll: %q", got)
	}
	b.Now = func() time.Time { return start.Add(-time.Second) }
	if _, err := b.Complete("a", nil, "ok"); err != nil {
		t.Fatal(err)
	}
	if got := kbPoll(t, w); len(got) != 1 || got[0] != "a completed ok" {
		t.Fatalf("a change committed late: %q", got)
	}
}
