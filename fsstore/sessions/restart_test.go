package sessions

import (
	"fmt"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
)

func TestMarkInterruptedAndClear(t *testing.T) {
	s, clock, _ := newTestStore(t)
	sess, _, err := s.Create(Session{ID: "g1", Source: "gateway"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		at := clock.Advance(time.Minute)
		got, err := s.MarkInterrupted(sess.ID, "restart_interrupted", 3)
		if err != nil || got.State != StateResumePending || got.InterruptCount != i || got.ResumePendingAt != fsstore.TimeOf(at) {
			t.Fatalf("mark %d: %+v %v", i, got, err)
		}
	}
	got, _ := s.MarkInterrupted(sess.ID, "restart_interrupted", 3)
	if got.State != StateSuspended || got.InterruptCount != 3 {
		t.Fatalf("third: %+v", got)
	}
	// Suspended and ended sessions are not marked again.
	if got, _ := s.MarkInterrupted(sess.ID, "restart_timeout", 3); got.InterruptCount != 3 || got.State != StateSuspended {
		t.Fatalf("suspended, marked again: %+v", got)
	}
	got, err = s.SetState(sess.ID, StateActive, "")
	if err != nil || got.InterruptCount != 0 || got.ResumePendingAt != "" || got.ResumeReason != "" {
		t.Fatalf("a successful turn does not clear: %+v %v", got, err)
	}
	got, _ = s.SetState(sess.ID, StateResumePending, "restart_timeout")
	if got.ResumePendingAt != fsstore.TimeOf(clock.Now()) {
		t.Fatalf("SetState resume_pending without a time: %+v", got)
	}
	s.End(sess.ID, "done")
	if got, _ := s.MarkInterrupted(sess.ID, "restart_interrupted", 3); got.State != StateEnded {
		t.Fatalf("ended, marked: %+v", got)
	}
}

func TestActiveSince(t *testing.T) {
	s, clock, _ := newTestStore(t)
	mk := func(id string) {
		if _, _, err := s.Create(Session{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	mk("old")
	clock.Advance(10 * time.Minute)
	mk("recent")
	cutoff := clock.Advance(time.Minute)
	clock.Advance(time.Minute)
	if _, err := s.Append("old", []Message{textMsg("user", "back again")}); err != nil {
		t.Fatal(err)
	}
	mk("newest")
	got, err := s.ActiveSince(cutoff)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, sess := range got {
		ids = append(ids, sess.ID)
	}
	if fmt.Sprint(ids) != "[newest old]" {
		t.Fatalf("active since the cutoff: %v", ids)
	}
}
