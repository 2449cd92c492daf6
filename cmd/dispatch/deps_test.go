package dispatch

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/kanban"
	"github.com/hermes/hermes/fsstore/tasks"
)

// A tick claims a waiting child once its parents are done, and its first
// prompt holds their results; a child whose parent is open is left.
func TestWaitingChildClaimed(t *testing.T) {
	r := newRig(t)
	a := r.task("fetch the data")
	b := r.task("check the data")
	child, err := r.d.Board.Create(kanban.Task{Title: "write the report", Assignee: "default", Parents: []string{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	r.tick()
	if len(r.spawned) != 2 || r.get(child.ID).Status != kanban.Todo {
		t.Fatalf("spawned %d; child %s\n%s", len(r.spawned), r.get(child.ID).Status, r.out)
	}
	for i, id := range []string{a, b} {
		task := r.get(id)
		w := kanban.Worker{Task: id, Run: task.CurrentRunID, Claim: task.ClaimLock}
		if _, err := r.d.Board.Complete(id, &w, []string{"42 rows", "all valid"}[i]); err != nil {
			t.Fatal(err)
		}
		r.worker(id, exit(0))
		r.tick()
	}
	if len(r.spawned) != 3 || r.get(child.ID).Status != kanban.Running {
		t.Fatalf("spawned %d; child %s\n%s", len(r.spawned), r.get(child.ID).Status, r.out)
	}
	want := "write the report\n\nThe tasks this one waited for are done:\n\nfetch the data (task " + a + "): 42 rows\n\ncheck the data (task " + b + "): all valid\n\nYou are working"
	if p := last(r.spawned[2]); !strings.HasPrefix(p, want) {
		t.Fatalf("child's prompt %q, want it to start %q", p, want)
	}
}

// A worker that exits 3 twice is retried after each backoff and then
// completes; one that always crashes is given up after the limit.
func TestRetries(t *testing.T) {
	r := newRig(t)
	now := epoch.Add(10 * time.Minute)
	r.d.Now = func() time.Time { return now }
	r.d.Board.Now = r.d.Now
	r.d.Board.RetryBackoff = time.Minute
	id := r.task("flaky")
	crash := func(t *tasks.Task) { c := 3; t.Status, t.ExitCode = tasks.Failed, &c }
	for i := range 2 {
		r.tick()
		r.worker(id, crash)
		now = now.Add(time.Second)
		r.tick()
		if got := r.get(id); got.Status != kanban.Ready || got.Failures != i+1 {
			t.Fatalf("after crash %d: %s, %d failures\n%s", i+1, got.Status, got.Failures, r.out)
		}
		if len(r.spawned) != i+1 {
			t.Fatalf("claimed during the backoff: %d spawns\n%s", len(r.spawned), r.out)
		}
		now = now.Add(time.Duration(i+1) * time.Minute)
	}
	r.tick()
	task := r.get(id)
	w := kanban.Worker{Task: id, Run: task.CurrentRunID, Claim: task.ClaimLock}
	if _, err := r.d.Board.Complete(id, &w, "done at last"); err != nil {
		t.Fatal(err)
	}
	if got := r.get(id); len(got.Runs) != 3 || got.Failures != 0 {
		t.Fatalf("runs %d, failures %d", len(got.Runs), got.Failures)
	}

	doomed := r.task("doomed")
	for range 3 {
		now = now.Add(time.Hour)
		r.tick()
		r.worker(doomed, crash)
		now = now.Add(time.Second)
		r.tick()
	}
	got := r.get(doomed)
	if got.Status != kanban.Blocked || !strings.HasPrefix(got.BlockReason, "gave_up: 3 failed runs in a row ("+got.Runs[0].ID+", "+got.Runs[1].ID+", "+got.Runs[2].ID+")") {
		t.Fatalf("always crashing: %s %q\n%s", got.Status, got.BlockReason, r.out)
	}
	if !strings.Contains(r.out.String(), "blocked "+doomed+": gave_up: 3 failed runs") {
		t.Fatalf("output:\n%s", r.out)
	}
}

// An expired claim whose worker could not be stopped (its command not
// started yet) is not reclaimed: claimed again, the task would have two
// live workers.
func TestReclaimOnlyAStoppedWorker(t *testing.T) {
	r := newRig(t)
	id := r.task("slow to start")
	r.tick()
	r.d.Now = func() time.Time { return epoch.Add(24 * time.Hour) }
	r.d.Kill = func(store *tasks.Store, wid string, _ syscall.Signal, _ time.Duration) (tasks.Task, error) {
		r.killed = append(r.killed, wid)
		w, _ := store.Get(wid)
		return w, errors.New("task " + wid + ": its command is not running (yet)")
	}
	r.tick()
	if got := r.get(id); got.Status != kanban.Running || len(got.Runs) != 1 || len(r.spawned) != 1 {
		t.Fatalf("a worker not stopped: task %s, %d runs, %d spawns\n%s", got.Status, len(got.Runs), len(r.spawned), r.out)
	}
}
