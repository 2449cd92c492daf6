package sessions

import (
	"strings"
	"testing"
	"time"
)

// TestIdle: the active sessions of the source last active before the
// cutoff, and only those; a scan stops at the previous scan's cutoff; a
// session that became active again since is not ended.
func TestIdle(t *testing.T) {
	s, clock, _ := newTestStore(t)
	create := func(id, source string) {
		if _, _, err := s.Create(Session{ID: id, Source: source}); err != nil {
			t.Fatal(err)
		}
	}
	create("old", "gateway")
	create("oldchat", "chat")
	create("oldended", "gateway")
	if _, err := s.End("oldended", "user"); err != nil {
		t.Fatal(err)
	}
	first := clock.Advance(time.Hour)
	create("mid", "gateway")
	clock.Advance(time.Hour)
	create("new", "gateway")
	now := clock.Now()

	ids := func(list []Session) string {
		var out []string
		for _, sess := range list {
			out = append(out, sess.ID)
		}
		return strings.Join(out, " ")
	}
	got, err := s.Idle("gateway", now.Add(-30*time.Minute), time.Time{})
	if err != nil || ids(got) != "mid old" {
		t.Fatalf("Idle = %q, %v; want mid old", ids(got), err)
	}
	// A scan whose previous cutoff was after old's activity does not read
	// back to it.
	got, err = s.Idle("gateway", now.Add(-30*time.Minute), first.Add(-time.Minute))
	if err != nil || ids(got) != "mid" {
		t.Fatalf("Idle after the first hour = %q, %v; want mid", ids(got), err)
	}
	// mid has a turn before the end comes: it is left active.
	mustAppend(t, s, "mid", textMsg("user", "still here"))
	for id, want := range map[string]bool{"mid": false, "old": true, "oldchat": false, "new": false} {
		done, err := s.EndIdle(id, "gateway", now.Add(-30*time.Minute), "idle")
		if err != nil || done != want {
			t.Errorf("EndIdle(%s) = %v, %v; want %v", id, done, err, want)
		}
	}
	if sess, _ := s.Get("old"); sess.State != StateEnded || sess.EndReason != "idle" {
		t.Errorf("old is %s (%s)", sess.State, sess.EndReason)
	}
}
