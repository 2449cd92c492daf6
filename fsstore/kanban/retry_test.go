package kanban

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// A crash, a protocol violation and a reclaim each retry the task after
// a doubling backoff, which a claim respects; the third failure in a row
// gives it up, naming its three runs. An unblock starts the count again.
func TestRetriesGiveUp(t *testing.T) {
	b, clock, _ := kbBoard(t)
	b.RetryBackoff = 10 * time.Second
	kbCreate(t, b, Task{ID: "t", Title: "t"})
	var runs []string
	fail := func(how string) Task {
		t.Helper()
		task, err := b.Claim("t", time.Minute, "p", nil)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, task.CurrentRunID)
		clock.Advance(time.Second)
		switch how {
		case OutcomeReclaimed:
			err = b.Reclaim("t", task.CurrentRunID, nil, "SIGTERM")
		default:
			err = b.FailRun("t", task.CurrentRunID, how, "it failed", nil, "")
		}
		if err != nil {
			t.Fatal(err)
		}
		task, _ = b.Get("t")
		return task
	}
	task := fail(OutcomeCrashed)
	if task.Status != Ready || task.Failures != 1 || task.NotBefore != fsstore.TimeOf(clock.Now().Add(10*time.Second)) {
		t.Fatalf("after one crash: %+v", task)
	}
	if _, err := b.Claim("t", time.Minute, "p", nil); !errors.Is(err, fsstore.ErrRefused) {
		t.Fatalf("claim during the backoff: %v", err)
	}
	clock.Advance(10 * time.Second)
	task = fail(OutcomeProtocolViolation)
	if task.Status != Ready || task.NotBefore != fsstore.TimeOf(clock.Now().Add(20*time.Second)) {
		t.Fatalf("after two failures: %+v", task)
	}
	clock.Advance(20 * time.Second)
	task = fail(OutcomeReclaimed)
	want := "gave_up: 3 failed runs in a row (" + strings.Join(runs, ", ") + "); the last: reclaimed: "
	if task.Status != Blocked || !strings.HasPrefix(task.BlockReason, want) {
		t.Fatalf("after three failures: %s %q, want blocked %q…", task.Status, task.BlockReason, want)
	}
	events, _ := b.Events("t")
	if last := events[len(events)-1]; last.Type != EventGaveUp || last.Detail != task.BlockReason {
		t.Fatalf("last event %+v", last)
	}
	if task, _ = b.Unblock("t"); task.Failures != 0 || task.Status != Ready {
		t.Fatalf("after unblock: %+v", task)
	}
}

// A run that completes or blocks ends the row; the task's max_retries
// overrides the board's limit.
func TestRetriesInARow(t *testing.T) {
	b, clock, _ := kbBoard(t)
	zero := 0
	kbCreate(t, b, Task{ID: "once", Title: "once", MaxRetries: &zero})
	task, _ := b.Claim("once", time.Minute, "p", nil)
	clock.Advance(time.Second)
	b.FailRun("once", task.CurrentRunID, OutcomeCrashed, "exit 1", nil, "")
	if task, _ = b.Get("once"); task.Status != Blocked || !strings.HasPrefix(task.BlockReason, "gave_up: 1 failed run in a row") {
		t.Fatalf("max_retries 0 after a crash: %+v", task)
	}

	kbCreate(t, b, Task{ID: "t", Title: "t"})
	for i := range 5 {
		task, err := b.Claim("t", time.Minute, "p", nil)
		if err != nil {
			t.Fatalf("claim %d: %v", i, err)
		}
		w := Worker{Task: "t", Run: task.CurrentRunID, Claim: task.ClaimLock}
		clock.Advance(time.Second)
		if i == 1 {
			b.Block("t", &w, "a question")
			b.Unblock("t")
			continue
		}
		b.FailRun("t", task.CurrentRunID, OutcomeCrashed, "exit 1", nil, "")
	}
	if task, _ := b.Get("t"); task.Status != Blocked || task.Failures != 3 {
		t.Fatalf("after crash, block, crash, crash, crash: %+v", task)
	}
}
