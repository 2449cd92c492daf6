package kanban

import (
	"errors"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// kbAt makes task t1 with status, claimed (a running run) when running.
func kbAt(t *testing.T, status Status) (*Board, Worker) {
	t.Helper()
	b, _, _ := kbBoard(t)
	kbCreate(t, b, Task{ID: "t1", Title: "task", Status: Ready})
	var w Worker
	if status == Running {
		task, err := b.Claim("t1", time.Minute, "default", nil)
		if err != nil {
			t.Fatal(err)
		}
		w = Worker{Task: "t1", Run: task.CurrentRunID, Claim: task.ClaimLock}
	} else if status != Ready {
		if _, err := b.Update("t1", kbSetStatus(status)); err != nil {
			t.Fatal(err)
		}
	}
	return b, w
}

// Every transition of the board, from every status, by a person and by the
// worker that holds the claim: what it allows, what it refuses, and the
// status it leaves.
func TestKanbanTransitions(t *testing.T) {
	type op func(b *Board, w *Worker) error
	ops := map[string]op{
		"claim":    func(b *Board, _ *Worker) error { _, err := b.Claim("t1", time.Minute, "p", nil); return err },
		"block":    func(b *Board, w *Worker) error { _, _, err := b.Block("t1", w, "why"); return err },
		"complete": func(b *Board, w *Worker) error { _, err := b.Complete("t1", w, "ok"); return err },
		"unblock":  func(b *Board, _ *Worker) error { _, err := b.Unblock("t1"); return err },
		"ready":    func(b *Board, _ *Worker) error { _, err := b.Ready("t1"); return err },
		"archive":  func(b *Board, _ *Worker) error { _, err := b.Archive("t1"); return err },
	}
	for _, c := range []struct {
		op     string
		from   Status
		worker bool   // act as the claim's worker
		want   Status // "" means refused
	}{
		{"claim", Ready, false, Running},
		{"claim", Todo, false, ""},
		{"claim", Running, false, ""},
		{"claim", Blocked, false, ""},
		{"claim", Done, false, ""},
		{"block", Todo, false, Blocked},
		{"block", Ready, false, Blocked},
		{"block", Running, false, Blocked},
		{"block", Running, true, Blocked},
		{"block", Blocked, false, ""},
		{"block", Done, false, ""},
		{"block", Archived, false, ""},
		{"complete", Running, true, Done},
		{"complete", Running, false, Done},
		{"complete", Blocked, false, Done},
		{"complete", Done, false, ""},
		{"complete", Archived, false, ""},
		{"unblock", Blocked, false, Ready},
		{"unblock", Ready, false, ""},
		{"unblock", Running, false, ""},
		{"unblock", Done, false, ""},
		{"ready", Todo, false, Ready},
		{"ready", Blocked, false, ""},
		{"ready", Ready, false, ""},
		{"archive", Done, false, Archived},
		{"archive", Blocked, false, Archived},
		{"archive", Archived, false, Archived},
		{"archive", Running, false, ""},
	} {
		name := c.op + " from " + string(c.from)
		if c.worker {
			name += " by its worker"
		}
		t.Run(name, func(t *testing.T) {
			b, w := kbAt(t, c.from)
			var who *Worker
			if c.worker {
				who = &w
			}
			err := ops[c.op](b, who)
			got, gerr := b.Get("t1")
			if gerr != nil {
				t.Fatal(gerr)
			}
			if c.want == "" {
				if !errors.Is(err, fsstore.ErrRefused) || got.Status != c.from {
					t.Fatalf("err %v, status %s: want refused, status left %s", err, got.Status, c.from)
				}
				return
			}
			if err != nil || got.Status != c.want {
				t.Fatalf("err %v, status %s; want %s", err, got.Status, c.want)
			}
			// A run that was running has ended, and released the claim.
			if c.from == Running && c.want != Running {
				if r := got.CurrentRun(); r == nil || r.Status != RunEnded || got.ClaimLock != "" {
					t.Fatalf("the run did not end: %+v", got)
				}
			}
		})
	}
}

// A worker whose run or claim is not the task's current one is refused
// (exit 4 at the command line), whatever it tries, and changes nothing.
func TestKanbanStaleWorkerRefused(t *testing.T) {
	b, w := kbAt(t, Running)
	for name, stale := range map[string]Worker{
		"stale run":        {Task: w.Task, Run: "an-old-run", Claim: w.Claim},
		"wrong claim lock": {Task: w.Task, Run: w.Run, Claim: "not-the-lock"},
		"no claim at all":  {Task: w.Task, Run: w.Run},
	} {
		t.Run(name, func(t *testing.T) {
			before, _ := b.Get("t1")
			_, _, err1 := b.Block("t1", &stale, "x")
			_, err2 := b.Complete("t1", &stale, "x")
			_, err3 := b.Heartbeat(stale)
			err4 := b.RegisterSession(stale, "s9")
			for i, err := range []error{err1, err2, err3, err4} {
				if !errors.Is(err, fsstore.ErrRefused) {
					t.Errorf("action %d: %v, want fsstore.ErrRefused", i, err)
				}
			}
			after, _ := b.Get("t1")
			if after.Status != before.Status || after.ClaimExpires != before.ClaimExpires || after.CurrentRun().SessionID != "" {
				t.Fatalf("a refused worker changed the task: %+v", after)
			}
		})
	}
	// The worker of an earlier run, after a reclaim and a new claim, is
	// stale too.
	if err := b.Reclaim("t1", w.Run, nil, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Claim("t1", time.Minute, "p", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Complete("t1", &w, "late"); !errors.Is(err, fsstore.ErrRefused) {
		t.Fatalf("the reclaimed worker completed the task: %v", err)
	}
}

func TestKanbanHeartbeatAndRegister(t *testing.T) {
	b, w := kbAt(t, Running)
	clock := storetest.NewClock()
	clock.Advance(time.Hour)
	b.Now = clock.Now
	task, err := b.Heartbeat(w)
	if err != nil || task.ClaimExpires != fsstore.TimeOf(clock.Now().Add(time.Minute)) {
		t.Fatalf("heartbeat: %v, expires %s", err, task.ClaimExpires)
	}
	if err := b.RegisterSession(w, "s1"); err != nil {
		t.Fatal(err)
	}
	if err := b.RegisterSession(w, "s1"); err != nil {
		t.Fatal(err)
	}
	task, _ = b.Get("t1")
	events, _ := b.Events("t1")
	n := 0
	for _, e := range events {
		if e.Type == EventSessionRegistered {
			n++
		}
	}
	if task.CurrentRun().SessionID != "s1" || n != 1 {
		t.Fatalf("session %q, %d events: registering twice records once", task.CurrentRun().SessionID, n)
	}
}

// The dispatcher's outcomes: FailRun of a crash and Reclaim retry, a
// failed spawn blocks, and each leaves a task that moved on meanwhile as
// it is.
func TestKanbanFailRunAndReclaim(t *testing.T) {
	b, w := kbAt(t, Running)
	code := 3
	if err := b.FailRun("t1", w.Run, OutcomeCrashed, "exit 3", &code, ""); err != nil {
		t.Fatal(err)
	}
	task, _ := b.Get("t1")
	if task.Status != Ready || task.Failures != 1 || *task.Runs[0].ExitCode != 3 || task.Runs[0].Outcome != OutcomeCrashed {
		t.Fatalf("after FailRun: %+v", task)
	}
	if err := b.FailRun("t1", w.Run, OutcomeCrashed, "again", nil, ""); err != nil {
		t.Fatal(err)
	}
	if again, _ := b.Get("t1"); again.UpdatedAt != task.UpdatedAt || again.Failures != 1 {
		t.Fatalf("a second FailRun of an ended run changed the task: %+v", again)
	}
	b1, w1 := kbAt(t, Running)
	if err := b1.FailRun("t1", w1.Run, OutcomeSpawnFailed, "no such file", nil, ""); err != nil {
		t.Fatal(err)
	}
	if task, _ := b1.Get("t1"); task.Status != Blocked || task.BlockReason != "spawn_failed: no such file" {
		t.Fatalf("after a failed spawn: %+v", task)
	}
	b2, w2 := kbAt(t, Running)
	if err := b2.Reclaim("t1", w2.Run, nil, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	task, _ = b2.Get("t1")
	if task.Status != Ready || task.ClaimLock != "" || task.Runs[0].Outcome != OutcomeReclaimed || task.Runs[0].Signal != "SIGTERM" {
		t.Fatalf("after Reclaim: %+v", task)
	}
}

func TestEventTypeBlocks(t *testing.T) {
	for _, e := range []EventType{EventBlocked, EventCrashed, EventProtocolViolation, EventReclaimed, EventSpawnFailed, EventGaveUp} {
		if !e.Blocks() {
			t.Errorf("%s does not block", e)
		}
	}
	for _, e := range []EventType{EventCreated, EventClaimed, EventCommented, EventUnblocked, EventCompleted, EventResumed} {
		if e.Blocks() {
			t.Errorf("%s blocks", e)
		}
	}
}

// A claim records the claimer's host on its run: the host its worker
// runs on.
func TestClaimRecordsHost(t *testing.T) {
	b, _, _ := kbBoard(t)
	b.Host = "host-a"
	kbCreate(t, b, Task{ID: "t1", Title: "task", Status: Ready})
	task, err := b.Claim("t1", time.Minute, "default", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := task.CurrentRun().Host; got != "host-a" {
		t.Fatalf("run host %q", got)
	}
	if stored, _ := b.Get("t1"); stored.CurrentRun().Host != "host-a" {
		t.Fatalf("stored run host %q", stored.CurrentRun().Host)
	}
}
