package dispatch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/cmd/supervisor"
	"github.com/hermes/hermes/fsstore/kanban"
	"github.com/hermes/hermes/fsstore/tasks"
)

// onHost makes the rig's dispatcher run on host, with the task store's
// clock at now, and the supervisor's reconcile of background tasks. The
// host watches leases and claims with sightings of its own, on a
// monotonic clock that runs with now.
func (r *rig) onHost(host string, now *time.Time) {
	r.d.Board.Host, r.d.Tasks.Host = host, host
	r.d.Tasks.Now = func() time.Time { return *now }
	r.d.Now = func() time.Time { return *now }
	r.d.ReconcileTasks = nil
	seen := *r.d.Board.Seen
	seen.Host, seen.Clock = host, func() time.Duration { return now.Sub(epoch) }
	r.d.Board.Seen, r.d.Tasks.Seen = &seen, &seen
}

// A run whose worker runs on another host is not judged by pids looked
// up here: the fake spawner's worker has none, and stays running while
// its lease is fresh; a heartbeat renews the lease; once this host has
// watched the heartbeat unchanged for a lease the worker is lost and the
// task blocked (crashed).
func TestForeignRunByLease(t *testing.T) {
	r := newRig(t)
	r.d.Board.FailureLimit = 1
	r.d.Board.FailureLimit = 1
	now := epoch.Add(10 * time.Minute)
	r.onHost("host-a", &now)
	id := r.task("far away")
	r.tick()
	claimed := r.get(id)
	run := claimed.CurrentRun()
	if run == nil || run.Host != "host-a" {
		t.Fatalf("run %+v", run)
	}

	r.onHost("host-b", &now)
	r.tick()
	if got := r.get(id); got.Status != kanban.Running {
		t.Fatalf("a run of another host with a fresh lease: %s (%s)", got.Status, got.BlockReason)
	}
	now = now.Add(tasks.Lease - time.Second)
	if err := r.d.Tasks.Heartbeat(run.WorkerTaskID); err != nil {
		t.Fatal(err)
	}
	now = now.Add(tasks.Lease)
	r.tick()
	if got := r.get(id); got.Status != kanban.Running {
		t.Fatalf("a run of another host after a heartbeat: %s (%s)", got.Status, got.BlockReason)
	}
	// The lease runs from when host-b saw the heartbeat.
	now = now.Add(tasks.Lease)
	r.tick()
	if got := r.get(id); got.Status != kanban.Running {
		t.Fatalf("a run of another host a lease after host-b saw its heartbeat: %s (%s)", got.Status, got.BlockReason)
	}
	now = now.Add(time.Millisecond)
	r.tick()
	got := r.get(id)
	if got.Status != kanban.Blocked || got.Runs[0].Outcome != kanban.OutcomeCrashed || !strings.Contains(got.BlockReason, "heartbeat") {
		t.Fatalf("after the lease: %s, %s (%s)", got.Status, got.Runs[0].Outcome, got.BlockReason)
	}
	if len(r.killed) != 0 {
		t.Fatalf("killed %v", r.killed)
	}
}

// A run of another host whose claim expires while its worker holds its
// lease is left to that host, which can stop the worker before it
// reclaims the task; one whose worker has no record here (yet) is judged
// by its claim alone, and reclaimed when it expires, with nothing killed.
func TestForeignRunClaimExpires(t *testing.T) {
	r := newRig(t)
	now := epoch.Add(10 * time.Minute)
	r.onHost("host-a", &now)
	id := r.task("far away")
	gone := r.task("record not seen")
	r.tick()
	unseen := r.get(gone)
	if err := r.d.Tasks.Discard(unseen.CurrentRun().WorkerTaskID); err != nil {
		t.Fatal(err)
	}

	r.onHost("host-b", &now)
	r.tick()
	if got := r.get(gone); got.Status != kanban.Running {
		t.Fatalf("a run of another host whose worker has no record here: %s (%s)", got.Status, got.BlockReason)
	}
	claimed := r.get(id)
	worker := claimed.CurrentRun().WorkerTaskID
	// host-b has watched the claims since its first tick.
	for watched := time.Duration(0); watched <= claimed.ClaimTTL(); watched += tasks.Lease / 2 {
		// Heartbeats from host-a keep the worker's lease while the claim
		// runs out.
		now = now.Add(tasks.Lease / 2)
		if err := r.d.Tasks.Heartbeat(worker); err != nil {
			t.Fatal(err)
		}
	}
	r.tick()
	if got := r.get(id); got.Status != kanban.Running {
		t.Fatalf("an expired claim of another host's live worker: %s (%s)", got.Status, got.BlockReason)
	}
	if got := r.get(gone); got.Status != kanban.Ready || got.Runs[0].Outcome != kanban.OutcomeReclaimed {
		t.Fatalf("a run whose worker has no record, after its claim: %s, %s", got.Status, got.Runs[0].Outcome)
	}
	if len(r.killed) != 0 || !strings.Contains(r.out.String(), "of host host-a, has no record here") {
		t.Fatalf("killed %v; output:\n%s", r.killed, r.out)
	}

	// On host-a, the worker's own host, where its supervisor (this
	// process, here) lives, it is stopped and reclaimed.
	r.onHost("host-a", &now)
	self := os.Getpid()
	if _, err := r.d.Tasks.Update(worker, func(t *tasks.Task) {
		t.SupervisorPID, t.SupervisorStart = self, supervisor.ProcStart(self)
	}); err != nil {
		t.Fatal(err)
	}
	r.tick()
	if got := r.get(id); got.Runs[0].Outcome != kanban.OutcomeReclaimed || len(r.killed) != 1 || r.killed[0] != worker {
		t.Fatalf("on its own host: %s, %s; killed %v", got.Status, got.Runs[0].Outcome, r.killed)
	}
}

// Two dispatchers on two hosts share a board on a filesystem whose client
// caches can show a task's document as it was before another host's claim,
// even under the task's lock. The second dispatcher reads the task as
// ready; its claim finds the first claim's event later than that
// document, re-reads it until the claim shows, and is refused: the task
// is skipped as claimed by someone else, without an error, nothing is
// spawned, and the first claim stands.
func TestClaimOnStaleRead(t *testing.T) {
	r := newRig(t)
	id := r.task("contended")
	doc := filepath.Join(r.d.Board.Dir, "tasks", id+".json")
	ready := mustRead(t, doc)
	hostA := *r.d.Board
	hostA.Host = "host-a"
	claimed, err := hostA.Claim(id, time.Minute, "default", nil)
	if err != nil {
		t.Fatal(err)
	}
	fresh := mustRead(t, doc)

	r.d.Board.Host = "host-b"
	mustWrite(t, doc, ready)
	r.d.Board.Sleep = func(time.Duration) { mustWrite(t, doc, fresh) }
	r.d.Board.Shared = func() bool { return true }
	r.tick()
	if len(r.spawned) != 0 || strings.Contains(r.out.String(), "claimed") {
		t.Fatalf("spawned %d after a stale read; output %q", len(r.spawned), r.out.String())
	}
	got := r.get(id)
	if got.Status != kanban.Running || len(got.Runs) != 1 || got.CurrentRunID != claimed.CurrentRunID || got.Runs[0].Host != "host-a" {
		t.Fatalf("after the stale read: %+v", got)
	}
	events, err := r.d.Board.Events(id)
	if err != nil || len(events) != 2 || events[1].Type != kanban.EventClaimed || events[1].RunID != claimed.CurrentRunID {
		t.Fatalf("events %+v, %v", events, err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustWrite(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
