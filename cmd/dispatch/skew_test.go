package dispatch

import (
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/kanban"
	"github.com/hermes/hermes/fsstore/tasks"
)

// Two hosts whose clocks are 5 minutes apart share a board. host-b claims
// two tasks and starts their workers; the record of one worker is not
// visible on host-a (yet). While host-b's workers heartbeat (their
// background task's lease and their claim), host-a, whose clock is ahead,
// neither takes a worker for lost nor reclaims a claim: each task has one
// run and one worker, however old host-b's stamps read by host-a's clock.
// Once the heartbeats stop, host-a judges by what it has watched: the
// worker lost after a lease of its own clock, the unseen worker's claim
// reclaimed after the claim's TTL.
func TestSkewedHostsNoOverlap(t *testing.T) {
	r := newRig(t)
	r.d.ClaimTTL = 2 * time.Minute
	nowB := epoch.Add(10 * time.Minute)
	nowA := nowB.Add(5 * time.Minute)
	onB := func() {
		r.onHost("host-b", &nowB)
		r.d.Board.Now = func() time.Time { return nowB }
	}
	onA := func() {
		r.onHost("host-a", &nowA)
		r.d.Board.Now = func() time.Time { return nowA }
	}
	onB()
	seen := r.task("worker seen on a")
	unseen := r.task("worker not seen on a")
	r.tick()
	u := r.get(unseen)
	if err := r.d.Tasks.Discard(u.CurrentRun().WorkerTaskID); err != nil {
		t.Fatal(err)
	}
	if len(r.spawned) != 2 {
		t.Fatalf("spawned %d", len(r.spawned))
	}
	step := func(d time.Duration) {
		nowA, nowB = nowA.Add(d), nowB.Add(d)
	}
	// Ten minutes of heartbeats, every 10 s, host-a ticking between them.
	for range 60 {
		onB()
		for _, id := range []string{seen, unseen} {
			task := r.get(id)
			if _, err := r.d.Board.Heartbeat(kanban.Worker{Task: id, Run: task.CurrentRunID, Claim: task.ClaimLock}); err != nil {
				t.Fatal(err)
			}
		}
		s := r.get(seen)
		if err := r.d.Tasks.Heartbeat(s.CurrentRun().WorkerTaskID); err != nil {
			t.Fatal(err)
		}
		onA()
		r.tick()
		for _, id := range []string{seen, unseen} {
			if got := r.get(id); got.Status != kanban.Running || len(got.Runs) != 1 {
				t.Fatalf("host-a, 5 minutes ahead, changed a task whose worker heartbeats on host-b: %s, %d runs (%s)\n%s",
					got.Status, len(got.Runs), got.BlockReason, r.out)
			}
		}
		if len(r.spawned) != 2 {
			t.Fatalf("two live workers of one task: spawned %d\n%s", len(r.spawned), r.out)
		}
		step(tasks.HeartbeatEvery)
	}

	// The heartbeats stop: a lease of host-a's watch later the seen worker
	// is lost; a claim's TTL later the unseen one's claim is reclaimed.
	r.d.Board.FailureLimit = 1
	onA()
	step(tasks.Lease - tasks.HeartbeatEvery)
	r.tick()
	if got := r.get(seen); got.Status != kanban.Running {
		t.Fatalf("lost before host-a watched a whole lease: %s (%s)", got.Status, got.BlockReason)
	}
	step(time.Second)
	r.tick()
	if got := r.get(seen); got.Status != kanban.Blocked || got.Runs[0].Outcome != kanban.OutcomeCrashed {
		t.Fatalf("after a lease without a heartbeat: %s, %s (%s)", got.Status, got.Runs[0].Outcome, got.BlockReason)
	}
	if got := r.get(unseen); got.Status != kanban.Running {
		t.Fatalf("reclaimed before host-a watched its claim for its TTL: %s (%s)", got.Status, got.BlockReason)
	}
	step(r.d.ClaimTTL)
	r.tick()
	if got := r.get(unseen); got.Status != kanban.Blocked || got.Runs[0].Outcome != kanban.OutcomeReclaimed {
		t.Fatalf("after its claim's TTL without a heartbeat: %s, %s (%s)", got.Status, got.Runs[0].Outcome, got.BlockReason)
	}
}
