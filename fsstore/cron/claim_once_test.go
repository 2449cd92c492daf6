package cron

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// TestClaimNowOnce: a key claims one run of one job: a retry claims
// nothing and finds the run, with its task once started; a key whose
// record was written by a call that died before its claim claims the
// occurrence it names; the key with another job is refused.
func TestClaimNowOnce(t *testing.T) {
	c := &clock{now: time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)}
	s := newTestStore(t, t.TempDir(), c, "h")
	j := add(t, s, "nightly", "@daily", CatchUpOnce)
	first, _, claimed, err := s.ClaimNowOnce("k", j.ID)
	if err != nil || !claimed || !first.Manual {
		t.Fatalf("first ClaimNowOnce = %+v, %v, %v; want a manual claim", first, claimed, err)
	}
	c.now = c.now.Add(time.Second)
	_, run, claimed, err := s.ClaimNowOnce("k", j.ID)
	if err != nil || claimed || run.Occurrence != first.Occurrence || run.TaskID != "" || run.Status != Claimed {
		t.Fatalf("retry before the start = %+v, %v, %v; want the claim, no task", run, claimed, err)
	}
	if _, err := s.Start(j.ID, first.Occurrence, "task-1", ""); err != nil {
		t.Fatal(err)
	}
	_, run, claimed, err = s.ClaimNowOnce("k", j.ID)
	if err != nil || claimed || run.TaskID != "task-1" {
		t.Fatalf("retry after the start = %+v, %v, %v; want task-1", run, claimed, err)
	}
	zero := 0
	if _, err := s.Finish(j.ID, first.Occurrence, Outcome{Status: Succeeded, ExitCode: &zero}); err != nil {
		t.Fatal(err)
	}
	_, run, claimed, err = s.ClaimNowOnce("k", j.ID)
	if err != nil || claimed || run.TaskID != "task-1" || run.Status != Succeeded {
		t.Fatalf("retry after the end = %+v, %v, %v; want task-1 succeeded", run, claimed, err)
	}

	other := add(t, s, "other", "@daily", CatchUpOnce)
	if _, _, _, err := s.ClaimNowOnce("k", other.ID); !errors.Is(err, fsstore.ErrInvalid) {
		t.Fatalf("the key with another job = %v; want ErrInvalid", err)
	}

	// A call that died after its key's record, before its claim.
	occ := fsstore.TimeOf(c.now.Add(-time.Minute))
	if err := fsstore.WriteDoc(filepath.Join(s.keysDir(), fsstore.KeyName("k2")+".json"), keyRecord{JobID: j.ID, Occurrence: occ}); err != nil {
		t.Fatal(err)
	}
	got, _, claimed, err := s.ClaimNowOnce("k2", j.ID)
	if err != nil || !claimed || got.Occurrence != occ {
		t.Fatalf("a key recorded and not claimed = %+v, %v, %v; want its occurrence %s claimed", got, claimed, err, occ)
	}
	if _, _, claimed, err := s.ClaimNowOnce("k2", j.ID); err != nil || claimed {
		t.Fatalf("its retry = %v, %v; want nothing claimed", claimed, err)
	}
}
