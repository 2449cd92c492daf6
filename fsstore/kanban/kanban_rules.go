package kanban

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// The board's rules: each transition is one compare-and-swap (Update)
// under the task's lock, refused with ErrRefused when the task is not in a
// state that allows it.
//
//	claim             ready, unclaimed   → running, a new run, a claim lock and an expiry
//	                  (a waiting task whose parents are done, too; not before not_before)
//	block             todo/ready/running → blocked (a running run ends: blocked)
//	complete          any open           → done (a running run ends: completed)
//	heartbeat         running            → running, the claim extended
//	unblock           blocked            → ready (todo with parents)
//	ready             todo               → ready, its parents done
//	archive           not running        → archived
//	assign            open, not running  → the same, another assignee
//	register session  running            → the run records its session
//	fail run          running            → ready after a backoff (crashed, protocol_violation),
//	                                       blocked (spawn_failed, or gave_up at the limit)
//	reclaim           running            → as fail run (the run ends: reclaimed)
//	link, unlink      todo/ready         → todo while a parent is not done (deps.go)
//
// A worker acts for its own run: Block, Complete, Heartbeat and
// RegisterSession given a Worker refuse when its run or claim is no longer
// the task's current one, so a stale worker cannot change a task it lost.

// Worker is the identity a worker's environment gives it: the task, its
// run and the claim lock the claim made.
type Worker struct {
	Task, Run, Claim string
}

// DefaultClaimTTL is how long a claim lasts without a heartbeat when the
// task records none.
const DefaultClaimTTL = 15 * time.Minute

// ClaimTTL is how long the task's claim lasts without a heartbeat.
func (t *Task) ClaimTTL() time.Duration {
	if t.ClaimTTLMS > 0 {
		return time.Duration(t.ClaimTTLMS) * time.Millisecond
	}
	return DefaultClaimTTL
}

// holds refuses a worker whose run or claim is not the task's current one;
// a nil worker is a person, who may act on any task.
func (t *Task) holds(w *Worker) error {
	if w == nil {
		return nil
	}
	if t.Status != Running || t.CurrentRunID != w.Run || t.ClaimLock != w.Claim {
		cur := t.CurrentRunID
		if cur == "" {
			cur = "-"
		}
		return fsstore.Refusedf("run %s does not hold the claim on task %s (its current run is %s, status %s)", w.Run, t.ID, cur, t.Status)
	}
	return nil
}

func newClaimLock() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Claim makes a ready, unclaimed task running with a new run of profile, a
// claim lock and an expiry ttl away. Anything else is refused, so two
// claimers never both win. extra, when set, may fill the new run and
// returns events to record with the claim.
func (b *Board) Claim(id string, ttl time.Duration, profile string, extra func(*Task, *Run) []Event) (Task, error) {
	if err := b.CheckClock(); err != nil {
		return Task{}, err
	}
	t, err := b.Update(id, b.claim(ttl, profile, extra))
	if err == nil {
		b.sawClaim(t)
	}
	return t, err
}

// ClaimPending is Claim for a claimer that has yet to store the claim's
// outcome (the dispatcher: its worker started, or could not): the returned
// Pending holds the claimed task, and its Keep or Undo must follow.
func (b *Board) ClaimPending(id string, ttl time.Duration, profile string, extra func(*Task, *Run) []Event) (*Pending, error) {
	if err := b.CheckClock(); err != nil {
		return nil, err
	}
	_, p, err := b.update(id, b.claim(ttl, profile, extra), true)
	if err == nil {
		b.sawClaim(p.Task)
	}
	return p, err
}

func (b *Board) claim(ttl time.Duration, profile string, extra func(*Task, *Run) []Event) func(*Task, time.Time) ([]Event, error) {
	return func(t *Task, now time.Time) ([]Event, error) {
		readied, err := b.promoteWaiting(t)
		if err != nil {
			return nil, err
		}
		if t.Status != Ready || t.ClaimLock != "" {
			return nil, fsstore.Refusedf("task %s is %s and cannot be claimed", t.ID, t.Status)
		}
		if ok, why := b.Due(*t, now, false); !ok {
			return nil, fsstore.Refusedf("task %s cannot be claimed yet: %s", t.ID, why)
		}
		r := Run{ID: fsstore.NewID(now), Profile: profile, Host: b.Host, Status: RunRunning, StartedAt: fsstore.TimeOf(now)}
		t.Status, t.RetryBackoffMS = Running, 0
		t.ClaimLock, t.ClaimTTLMS = newClaimLock(), ttl.Milliseconds()
		t.ClaimExpires = fsstore.TimeOf(now.Add(ttl))
		t.BlockReason = ""
		events := append(readied, Event{Type: EventClaimed, RunID: r.ID})
		if extra != nil {
			events = append(events, extra(t, &r)...)
		}
		t.Runs = append(t.Runs, r)
		t.CurrentRunID = r.ID
		return events, nil
	}
}

// Block blocks task id for worker w (its own task; its run ends) or a
// person (w nil). It returns the worker task of the run it ended, which a
// person's block should stop.
func (b *Board) Block(id string, w *Worker, reason string) (Task, string, error) {
	workerTask := ""
	t, err := b.Update(id, func(t *Task, now time.Time) ([]Event, error) {
		if err := t.holds(w); err != nil {
			return nil, err
		}
		if !t.Open() || t.Status == Blocked {
			return nil, fsstore.Refusedf("task %s is %s; only a todo, ready or running task can be blocked", t.ID, t.Status)
		}
		ev := Event{Type: EventBlocked, Detail: reason}
		if r := t.CurrentRun(); r != nil && r.Status == RunRunning {
			t.EndRun(r, OutcomeBlocked, now)
			ev.RunID, workerTask = r.ID, r.WorkerTaskID
		}
		t.Status, t.BlockReason, t.Failures = Blocked, reason, 0
		var linked []Event
		if w != nil {
			// A worker that blocks to wait for its subtasks (deps.go)
			// waits, todo, and is ready again once they are done: all
			// of them, linked or not yet (subtask.go).
			var err error
			if linked, err = b.adoptSubtasks(t); err != nil {
				return nil, err
			}
			if h, err := b.Hold(*t, nil); err != nil {
				return nil, err
			} else if h.Parent != "" {
				t.Status = Todo
				return append(linked, ev, Event{Type: EventWaiting, RunID: ev.RunID, Detail: h.Reason}), nil
			}
		}
		return append(linked, ev), nil
	})
	return t, workerTask, err
}

// Complete marks task id done for worker w (its own task; its run ends
// with result as its summary) or a person.
func (b *Board) Complete(id string, w *Worker, result string) (Task, error) {
	return b.Update(id, func(t *Task, now time.Time) ([]Event, error) {
		if err := t.holds(w); err != nil {
			return nil, err
		}
		if !t.Open() {
			return nil, fsstore.Refusedf("task %s is already %s", t.ID, t.Status)
		}
		ev := Event{Type: EventCompleted, Detail: result}
		if r := t.CurrentRun(); r != nil && r.Status == RunRunning {
			t.EndRun(r, OutcomeCompleted, now)
			r.Summary = result
			ev.RunID = r.ID
		}
		t.Status, t.Result, t.BlockReason, t.Failures = Done, result, "", 0
		t.CompletedAt = fsstore.TimeOf(now)
		return []Event{ev}, nil
	})
}

// Heartbeat extends worker w's claim on its task by the claim's TTL: its
// expiry changes, which every host that watches the claim sees
// (lease.go).
func (b *Board) Heartbeat(w Worker) (Task, error) {
	t, err := b.Update(w.Task, func(t *Task, now time.Time) ([]Event, error) {
		if err := t.holds(&w); err != nil {
			return nil, err
		}
		t.ClaimExpires = fsstore.TimeOf(now.Add(t.ClaimTTL()))
		return nil, nil
	})
	if err == nil {
		b.sawClaim(t)
	}
	return t, err
}

// Unblock makes a blocked task ready, or waiting (todo) when it has
// parents, and starts its count of failures in a row again.
func (b *Board) Unblock(id string) (Task, error) {
	return b.Update(id, func(t *Task, _ time.Time) ([]Event, error) {
		if t.Status != Blocked {
			return nil, fsstore.Refusedf("task %s is %s, not %s", t.ID, t.Status, Blocked)
		}
		t.Status, t.BlockReason, t.Failures, t.NotBefore, t.RetryBackoffMS = Ready, "", 0, "", 0
		if len(t.Parents) > 0 {
			t.Status = Todo
		}
		return []Event{{Type: EventUnblocked}}, nil
	})
}

// Ready makes a todo task ready; one whose parents are not all done is
// refused, naming the parent that holds it.
func (b *Board) Ready(id string) (Task, error) {
	return b.Update(id, func(t *Task, _ time.Time) ([]Event, error) {
		if t.Status != Todo {
			return nil, fsstore.Refusedf("task %s is %s, not %s", t.ID, t.Status, Todo)
		}
		h, err := b.Hold(*t, nil)
		if err != nil {
			return nil, err
		}
		if h.Parent != "" {
			return nil, fsstore.Refusedf("task %s cannot be ready: %s", t.ID, h.Reason)
		}
		t.Status, t.BlockReason = Ready, ""
		return []Event{{Type: EventReadied}}, nil
	})
}

// Archive archives a task that is not running; archiving an archived task
// changes nothing.
func (b *Board) Archive(id string) (Task, error) {
	return b.Update(id, func(t *Task, _ time.Time) ([]Event, error) {
		switch t.Status {
		case Running:
			return nil, fsstore.Refusedf("task %s is running; block or complete it first", t.ID)
		case Archived:
			return nil, nil
		}
		t.Status = Archived
		return []Event{{Type: EventArchived}}, nil
	})
}

// RegisterSession records session sid on worker w's run, so that a later
// run can resume it.
func (b *Board) RegisterSession(w Worker, sid string) error {
	_, err := b.Update(w.Task, func(t *Task, _ time.Time) ([]Event, error) {
		if err := t.holds(&w); err != nil {
			return nil, err
		}
		r := t.CurrentRun()
		if r.SessionID == sid {
			return nil, nil
		}
		r.SessionID = sid
		return []Event{{Type: EventSessionRegistered, RunID: r.ID, Detail: sid}}, nil
	})
	return err
}

// FailRun ends run runID with outcome (crashed, protocol_violation or
// spawn_failed), when that run is still the task's current, running one;
// otherwise the task has moved on and nothing changes. A crashed run or a
// protocol violation is retried (retry.go); a failed spawn blocks the
// task with the reason. exitCode and signal record how the worker ended.
func (b *Board) FailRun(id, runID, outcome, reason string, exitCode *int, signal string) error {
	t, err := b.Update(id, func(t *Task, now time.Time) ([]Event, error) {
		cur := t.CurrentRun()
		if t.Status != Running || cur == nil || cur.ID != runID {
			return nil, nil
		}
		t.EndRun(cur, outcome, now)
		cur.ExitCode, cur.Signal = exitCode, signal
		ev := Event{Type: EventType(outcome), RunID: cur.ID, Detail: reason}
		if outcome == OutcomeSpawnFailed {
			t.Status, t.BlockReason = Blocked, outcome+": "+reason
			return []Event{ev}, nil
		}
		return b.retryOrGiveUp(t, ev, now), nil
	})
	if err == nil {
		b.sawRetry(t)
	}
	return err
}

// Reclaim ends run runID (reclaimed: its claim expired with no heartbeat),
// when that run is still current, and retries the task (retry.go). The
// caller has stopped the run's worker.
func (b *Board) Reclaim(id, runID string, exitCode *int, signal string) error {
	t, err := b.Update(id, func(t *Task, now time.Time) ([]Event, error) {
		cur := t.CurrentRun()
		if t.Status != Running || cur == nil || cur.ID != runID {
			return nil, nil
		}
		expired := t.ClaimExpires // EndRun clears it
		t.EndRun(cur, OutcomeReclaimed, now)
		cur.ExitCode, cur.Signal = exitCode, signal
		ev := Event{Type: EventReclaimed, RunID: cur.ID, Detail: fmt.Sprintf("claim expired at %s with no heartbeat", expired)}
		return b.retryOrGiveUp(t, ev, now), nil
	})
	if err == nil {
		b.sawRetry(t)
	}
	return err
}

// Assign gives task id to profile: its next run runs there. A running
// task is refused (its worker runs as its assignee), as is a closed one.
func (b *Board) Assign(id, profile string) (Task, error) {
	return b.Update(id, func(t *Task, _ time.Time) ([]Event, error) {
		if t.Status == Running || !t.Open() {
			return nil, fsstore.Refusedf("task %s is %s; only a task that is open and not running can be assigned", t.ID, t.Status)
		}
		if t.Assignee == profile {
			return nil, nil
		}
		t.Assignee = profile
		return []Event{{Type: EventAssigned, Detail: profile}}, nil
	})
}
