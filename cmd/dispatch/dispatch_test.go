package dispatch

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/kanban"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/tasks"
)

var epoch = time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)

// rig is a dispatcher over a real board and task store in a temp profile,
// with a fake spawner, session lookup and kill.
type rig struct {
	t        *testing.T
	d        *Dispatcher
	out      *strings.Builder
	spawned  [][]string // argv of each spawn
	env      [][]string
	sessions map[string]sessions.Session // profile/id -> session
	killed   []string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "profiles", "default")
	warn := func(msg string) { t.Log("warning:", msg) }
	board := kanban.NewBoard(dir, 10*time.Second, warn)
	// Each write a second after the last, so events and comments order.
	tick := epoch
	board.Now = func() time.Time { tick = tick.Add(time.Second); return tick }
	taskStore := tasks.NewStore(dir, 10*time.Second, warn)
	worker, err := WorkerFields("")
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, out: &strings.Builder{}, sessions: map[string]sessions.Session{}}
	r.d = &Dispatcher{
		Board: board, Tasks: taskStore, Profile: "default", Out: r.out, Warn: warn,
		Worker: worker, MaxWorkers: 4, ClaimTTL: 15 * time.Minute,
		Now: func() time.Time { return epoch.Add(10 * time.Minute) },
		Session: func(profile, id string) (sessions.Session, error) {
			s, ok := r.sessions[profile+"/"+id]
			if !ok {
				return s, fsstore.NotFoundf("session %s not found", id)
			}
			return s, nil
		},
		Spawn: func(id, name string, argv, env []string) error {
			r.spawned, r.env = append(r.spawned, argv), append(r.env, env)
			_, err := taskStore.Create(tasks.Task{ID: id, Name: name, Command: argv})
			return err
		},
		Kill: func(store *tasks.Store, id string, sig syscall.Signal, _ time.Duration) (tasks.Task, error) {
			r.killed = append(r.killed, id)
			t, _, err := store.Finish(id, func(t *tasks.Task) { t.Status, t.Signal = tasks.Killed, "SIGTERM" })
			return t, err
		},
		ReconcileTasks: func(*tasks.Store) (int, error) { return 0, nil },
	}
	// This host's monotonic clock runs with the dispatcher's: what it
	// watches of leases and claims ages as the test moves d.Now.
	board.Seen.Clock = func() time.Duration { return r.d.now().Sub(epoch) }
	taskStore.Seen.Clock = board.Seen.Clock
	return r
}

func (r *rig) task(title string) string {
	r.t.Helper()
	task, err := r.d.Board.Create(kanban.Task{Title: title, Body: "the body", Assignee: "default"})
	if err != nil {
		r.t.Fatal(err)
	}
	return task.ID
}

func (r *rig) tick() {
	r.t.Helper()
	if err := r.d.Tick(); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) get(id string) kanban.Task {
	r.t.Helper()
	task, err := r.d.Board.Get(id)
	if err != nil {
		r.t.Fatal(err)
	}
	return task
}

// worker finishes the background task of id's current run with change.
func (r *rig) worker(id string, change func(*tasks.Task)) {
	r.t.Helper()
	task := r.get(id)
	if _, _, err := r.d.Tasks.Finish(task.CurrentRun().WorkerTaskID, change); err != nil {
		r.t.Fatal(err)
	}
}

func exit(code int) func(*tasks.Task) {
	return func(t *tasks.Task) { t.Status, t.ExitCode = tasks.Succeeded, &code }
}

// Reconcile: how a running task's worker ended decides the task's fate.
func TestReconcile(t *testing.T) {
	for _, c := range []struct {
		name    string
		ended   func(*tasks.Task) // nil: the worker still runs
		gone    bool              // its task record was removed
		expired bool              // the claim has passed its expiry
		status  kanban.Status
		outcome string
		reason  string
		killed  bool
	}{
		{name: "exit 0 without completing", ended: exit(0), status: kanban.Blocked, outcome: kanban.OutcomeProtocolViolation, reason: "without completing or blocking"},
		{name: "exit 3", ended: func(t *tasks.Task) { c := 3; t.Status, t.ExitCode = tasks.Failed, &c }, status: kanban.Blocked, outcome: kanban.OutcomeCrashed, reason: "exited with status 3"},
		{name: "killed", ended: func(t *tasks.Task) { t.Status, t.Signal = tasks.Killed, "SIGKILL" }, status: kanban.Blocked, outcome: kanban.OutcomeCrashed, reason: "killed by SIGKILL"},
		{name: "lost", ended: func(t *tasks.Task) { t.Status, t.Error = tasks.Lost, "its supervisor died" }, status: kanban.Blocked, outcome: kanban.OutcomeCrashed, reason: "lost: its supervisor died"},
		{name: "record gone", gone: true, status: kanban.Blocked, outcome: kanban.OutcomeCrashed, reason: "is gone"},
		{name: "claim expired", expired: true, status: kanban.Blocked, outcome: kanban.OutcomeReclaimed, reason: "reclaimed: claim expired", killed: true},
		{name: "still working", status: kanban.Running},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t)
			// A failure gives up at once: what a failure is is tested
			// here, retries in TestRetries.
			r.d.Board.FailureLimit = 1
			id := r.task("work")
			r.tick()
			if len(r.spawned) != 1 {
				t.Fatalf("spawned %d", len(r.spawned))
			}
			switch {
			case c.ended != nil:
				r.worker(id, c.ended)
			case c.gone:
				task := r.get(id)
				run := task.CurrentRun()
				r.worker(id, exit(0))
				if _, err := r.d.Tasks.Prune(tasks.PruneOptions{Before: time.Now().Add(time.Hour)}); err != nil {
					t.Fatal(err)
				}
				if _, err := r.d.Tasks.Get(run.WorkerTaskID); !errors.Is(err, fsstore.ErrNotFound) {
					t.Fatalf("the record is still there: %v", err)
				}
			case c.expired:
				r.d.Now = func() time.Time { return epoch.Add(24 * time.Hour) }
			}
			r.d.MaxWorkers = 1 // a task still running holds the only slot
			r.task("next")
			r.tick()
			got := r.get(id)
			if got.Status != c.status || got.Runs[0].Outcome != c.outcome || !strings.Contains(got.BlockReason, c.reason) {
				t.Fatalf("status %s, outcome %q, reason %q; want %s, %q, %q\n%s", got.Status, got.Runs[0].Outcome, got.BlockReason, c.status, c.outcome, c.reason, r.out)
			}
			if (len(r.killed) == 1) != c.killed {
				t.Fatalf("killed %v", r.killed)
			}
			// A task still running keeps its worker slot: the next task waits.
			if wantSpawns := map[bool]int{true: 1, false: 2}[c.status == kanban.Running]; len(r.spawned) != wantSpawns {
				t.Fatalf("spawned %d, want %d\n%s", len(r.spawned), wantSpawns, r.out)
			}
		})
	}
}

// A dry run says what it would do and changes nothing.
func TestReconcileDryRun(t *testing.T) {
	r := newRig(t)
	id := r.task("work")
	r.tick()
	r.worker(id, exit(0))
	r.d.DryRun = true
	r.tick()
	if got := r.get(id); got.Status != kanban.Running {
		t.Fatalf("a dry run changed the task: %s", got.Status)
	}
	if !strings.Contains(r.out.String(), "would end the run of "+id+": protocol_violation") {
		t.Fatalf("said %q", r.out)
	}
}

// block ends the task's run as its worker would, after a comment or two.
func (r *rig) block(id string, comments ...string) {
	r.t.Helper()
	if _, _, err := r.d.Board.Block(id, nil, "review"); err != nil {
		r.t.Fatal(err)
	}
	for _, c := range comments {
		if _, err := r.d.Board.AddComment(id, "ann", c); err != nil {
			r.t.Fatal(err)
		}
	}
	if _, err := r.d.Board.Unblock(id); err != nil {
		r.t.Fatal(err)
	}
}

// Resume planning: whether a claimed task's new worker resumes the last
// session, and with what prompt.
func TestPlanRun(t *testing.T) {
	off := false
	for _, c := range []struct {
		name       string
		session    *sessions.Session // the first run's session as the lookup finds it; nil: missing
		taskResume *bool
		cfgResume  *bool
		resumes    bool
		event      string // the event of the claim: resumed, or resume_skipped with its detail
	}{
		{name: "resumes", session: &sessions.Session{ID: "s1", MessageCount: 4}, resumes: true, event: "resumed s1"},
		{name: "off for the task", session: &sessions.Session{ID: "s1", MessageCount: 4}, taskResume: &off, event: "resume_skipped disabled"},
		{name: "off in config", session: &sessions.Session{ID: "s1", MessageCount: 4}, cfgResume: &off, event: "resume_skipped disabled"},
		{name: "session missing", event: "resume_skipped session s1 missing"},
		{name: "session empty", session: &sessions.Session{ID: "s1"}, event: "resume_skipped no earlier session"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t)
			r.d.ResumeOnRespawn = c.cfgResume
			task, err := r.d.Board.Create(kanban.Task{Title: "work", Body: "the body", Assignee: "default", ResumeOnRespawn: c.taskResume})
			if err != nil {
				t.Fatal(err)
			}
			id := task.ID
			r.tick()
			first := r.spawned[0]
			if !strings.Contains(last(first), "work\n\nthe body\n\nYou are working kanban task "+id) {
				t.Fatalf("first prompt %q", last(first))
			}
			claimed := r.get(id)
			if err := r.d.Board.RegisterSession(kanban.Worker{Task: id, Run: claimed.CurrentRunID, Claim: claimed.ClaimLock}, "s1"); err != nil {
				t.Fatal(err)
			}
			if _, err := r.d.Board.AddComment(id, "ann", "said before the block"); err != nil {
				t.Fatal(err)
			}
			r.worker(id, exit(0))
			r.block(id, "use approach X")
			if c.session != nil {
				r.sessions["default/s1"] = *c.session
			}
			r.tick()
			if len(r.spawned) != 2 {
				t.Fatalf("spawned %d\n%s", len(r.spawned), r.out)
			}
			argv, prompt := r.spawned[1], ""
			if c.resumes {
				if n := len(argv); n < 2 || argv[n-2] != "--resume" || argv[n-1] != "s1" {
					t.Fatalf("argv %q does not resume s1", argv)
				}
				prompt = argv[len(argv)-3]
				if !strings.HasPrefix(prompt, "ann: use approach X\n\nYou are working kanban task "+id) {
					t.Fatalf("resumed prompt %q", prompt)
				}
			} else {
				prompt = last(argv)
				if !strings.HasPrefix(prompt, "work\n\nthe body\n\nComments since the task was last blocked:\n\nann: use approach X\n\nYou are working") {
					t.Fatalf("fresh prompt %q", prompt)
				}
			}
			if strings.Contains(prompt, "said before the block") {
				t.Fatalf("a comment from before the block is in the prompt: %q", prompt)
			}
			got := r.get(id)
			if (got.CurrentRun().ResumedFromSession == "s1") != c.resumes {
				t.Fatalf("resumed_from_session %q", got.CurrentRun().ResumedFromSession)
			}
			events, _ := r.d.Board.Events(id)
			var seen []string
			for _, e := range events {
				if e.Type == kanban.EventResumed || e.Type == kanban.EventResumeSkipped {
					seen = append(seen, string(e.Type)+" "+e.Detail)
				}
			}
			if len(seen) != 1 || seen[0] != c.event {
				t.Fatalf("events %q, want %q", seen, c.event)
			}
		})
	}
}

func last(s []string) string { return s[len(s)-1] }

// The worker's environment names its task, run, claim and the board.
func TestSpawnEnvironment(t *testing.T) {
	r := newRig(t)
	id := r.task("work")
	r.tick()
	got := r.get(id)
	env := strings.Join(r.env[0], " ")
	for _, want := range []string{EnvTask + "=" + id, EnvRun + "=" + got.CurrentRunID, EnvClaim + "=" + got.ClaimLock, EnvProfile + "=default", "HERMES_PROFILE=default"} {
		if !strings.Contains(env, want) {
			t.Errorf("env %q lacks %q", env, want)
		}
	}
	if _, err := r.d.Tasks.Get(got.CurrentRun().WorkerTaskID); err != nil {
		t.Errorf("the worker task recorded on the run: %v", err)
	}
}

// A spawn that fails blocks the task (spawn_failed), and a full worker
// count leaves ready tasks ready.
func TestSpawnFailedAndMaxWorkers(t *testing.T) {
	r := newRig(t)
	id := r.task("work")
	r.d.Spawn = func(string, string, []string, []string) error { return errors.New("no such program") }
	r.tick()
	got := r.get(id)
	if got.Status != kanban.Blocked || got.Runs[0].Outcome != kanban.OutcomeSpawnFailed || !strings.Contains(got.BlockReason, "no such program") {
		t.Fatalf("after a failed spawn: %+v", got)
	}
	r2 := newRig(t)
	r2.d.MaxWorkers = 2
	for range 3 {
		r2.task("t")
	}
	r2.tick()
	if len(r2.spawned) != 2 {
		t.Fatalf("spawned %d with --max-workers 2", len(r2.spawned))
	}
}

func TestWorkerFields(t *testing.T) {
	for in, want := range map[string]string{
		"":                              "hermes|-p|{profile}|chat|-q|{prompt}",
		`sh -c 'echo "$1"' sh {prompt}`: `sh|-c|echo "$1"|sh|{prompt}`,
		`run "two words" {task_id}`:     "run|two words|{task_id}",
		`escaped\ space {run_id}`:       "escaped space|{run_id}",
	} {
		got, err := WorkerFields(in)
		if err != nil || strings.Join(got, "|") != want {
			t.Errorf("WorkerFields(%q) = %q, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"   ", `sh -c 'unterminated`, `"`} {
		if _, err := WorkerFields(bad); !errors.Is(err, fsstore.ErrInvalid) || !strings.Contains(err.Error(), "kanban.worker_command") {
			t.Errorf("WorkerFields(%q): %v, want ErrInvalid naming the setting", bad, err)
		}
	}
}

// The placeholders are replaced in one pass: a prompt that mentions them
// arrives as written.
func TestArgvOnePass(t *testing.T) {
	r := newRig(t)
	task, err := r.d.Board.Create(kanban.Task{Title: "explain", Body: "the {task_id}, {run_id}, {profile} and {prompt} placeholders", Assignee: "default"})
	if err != nil {
		t.Fatal(err)
	}
	r.tick()
	if p := last(r.spawned[0]); !strings.HasPrefix(p, "explain\n\nthe {task_id}, {run_id}, {profile} and {prompt} placeholders\n\nYou are working kanban task "+task.ID) {
		t.Fatalf("prompt %q", p)
	}
}

// A run its worker completed between the tick's read and the tick's
// FailRun (a no-op then) is not reported as retried or blocked: only the
// run the tick itself ended is.
func TestSayFailedOnlyForTheRunItEnded(t *testing.T) {
	r := newRig(t)
	id := r.task("work")
	r.tick()
	task := r.get(id)
	run := task.CurrentRun().ID
	if _, err := r.d.Board.Complete(id, nil, "done"); err != nil {
		t.Fatal(err)
	}
	r.out.Reset()
	r.d.sayFailed(id, run, kanban.OutcomeProtocolViolation, "protocol_violation (the worker exited without completing or blocking the task)")
	if r.out.Len() != 0 {
		t.Fatalf("said %q for a task its worker completed", r.out)
	}

	id = r.task("fails")
	r.tick()
	task = r.get(id)
	run = task.CurrentRun().ID
	if err := r.d.Board.FailRun(id, run, kanban.OutcomeCrashed, "the worker exited with status 3", nil, ""); err != nil {
		t.Fatal(err)
	}
	r.out.Reset()
	r.d.sayFailed(id, run, kanban.OutcomeCrashed, "crashed (the worker exited with status 3)")
	if !strings.HasPrefix(r.out.String(), "retry "+id+" at ") {
		t.Fatalf("said %q, want a retry", r.out)
	}
}
