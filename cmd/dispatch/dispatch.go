package dispatch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/google/shlex"

	"github.com/hermes/hermes/cmd/supervisor"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/kanban"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/tasks"
)

// DefaultWorkerCommand is the worker of a task unless kanban.worker_command
// says otherwise. The setting is split like a shell line (quotes group
// words), then the placeholders {profile}, {prompt}, {session_id},
// {task_id} and {run_id} are replaced inside each argument, in one pass, so
// a prompt with spaces stays one argument and a prompt that mentions a
// placeholder arrives verbatim. When a worker resumes and the template has
// no {session_id}, "--resume <session_id>" is added.
const DefaultWorkerCommand = "hermes -p {profile} chat -q {prompt}"

// The environment a worker runs in: the verbs and tools it uses act for the
// run it names.
const (
	EnvTask    = "HERMES_KANBAN_TASK"
	EnvRun     = "HERMES_KANBAN_RUN_ID"
	EnvClaim   = "HERMES_KANBAN_CLAIM_LOCK"
	EnvProfile = "HERMES_KANBAN_PROFILE" // the profile whose board the task is on
)

// WorkerFields splits kanban.worker_command (the default when unset) like
// a shell line: quotes group words, a backslash escapes. Blank or
// unparsable is bad input, found before anything is claimed.
func WorkerFields(setting string) ([]string, error) {
	if setting == "" {
		setting = DefaultWorkerCommand
	}
	fields, err := shlex.Split(setting)
	if err != nil {
		return nil, fsstore.Invalidf("kanban.worker_command %q: %v", setting, err)
	}
	if len(fields) == 0 {
		return nil, fsstore.Invalidf("kanban.worker_command %q names no command", setting)
	}
	return fields, nil
}

// Dispatcher runs ticks over one board. Its fields are set once; the
// function fields are the process's, replaced by tests.
type Dispatcher struct {
	Board *kanban.Board
	Tasks *tasks.Store
	// Profile is the board's profile: a task without an assignee runs
	// there, and workers are told it (EnvProfile).
	Profile string
	// Session reads session id of profile, to see whether a worker can
	// resume it.
	Session func(profile, id string) (sessions.Session, error)
	// Spawn starts a worker: argv as the background task id (which the
	// claim has recorded on its run), named name, with env added to the
	// environment. An error means the worker did not start, and left no
	// task record that says it runs.
	Spawn func(id, name string, argv, env []string) error
	// Out receives a line for each thing a tick does; Warn what it could
	// not do.
	Out  io.Writer
	Warn func(string)
	// Worker is the worker command's fields (WorkerFields), placeholders
	// unreplaced; ResumeOnRespawn the profile's kanban.resume_on_respawn.
	Worker          []string
	ResumeOnRespawn *bool
	MaxWorkers      int
	// MaxInProgress is kanban.assignees.<profile>.max_in_progress: at
	// most this many running tasks of each assignee named, counted over
	// the whole board (every host's runs), as MaxWorkers is.
	MaxInProgress map[string]int
	ClaimTTL      time.Duration
	DryRun        bool
	// Now, Kill and ReconcileTasks default to fsstore.Now, supervisor.Kill
	// and supervisor.Reconcile.
	Now            func() time.Time
	Kill           func(store *tasks.Store, id string, sig syscall.Signal, grace time.Duration) (tasks.Task, error)
	ReconcileTasks func(store *tasks.Store) (int, error)
}

func (d *Dispatcher) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return fsstore.Now()
}

func (d *Dispatcher) kill(store *tasks.Store, id string, sig syscall.Signal, grace time.Duration) (tasks.Task, error) {
	if d.Kill != nil {
		return d.Kill(store, id, sig, grace)
	}
	return supervisor.Kill(store, id, sig, grace)
}

func (d *Dispatcher) reconcileTasks(store *tasks.Store) (int, error) {
	if d.ReconcileTasks != nil {
		return d.ReconcileTasks(store)
	}
	return supervisor.Reconcile(store)
}

// say prints one line of what a tick did.
func (d *Dispatcher) say(format string, args ...any) {
	if d.DryRun {
		format = "would " + format
	}
	fmt.Fprintf(d.Out, format+"\n", args...)
}

// Tick reconciles the running tasks, then claims ready ones by priority,
// oldest first, up to the worker limit. It holds the board's dispatch
// lock, so concurrent dispatchers take turns; each claim is also a
// compare-and-swap under the task's own lock. Each task's step is stored
// whole or not at all; the tick goes on to the next task after a failure
// and returns the failures joined, so that a tick that could not store
// everything it did is an error (exit 1).
func (d *Dispatcher) Tick() error {
	if _, err := os.Stat(d.Board.Dir); errors.Is(err, os.ErrNotExist) {
		return nil // no task was ever created: nothing to do
	}
	// A dry run only reads: it takes no lock, so it creates no lock file.
	if !d.DryRun {
		unlock, err := fsstore.Lock(d.Board.DispatchLockPath(), d.Board.LockTimeout)
		if err != nil {
			return err
		}
		defer unlock()
	}
	if _, err := d.reconcileTasks(d.Tasks); err != nil {
		return err
	}
	open, err := d.Board.OpenTasks()
	if err != nil {
		return err
	}
	running := 0
	byAssignee := map[string]int{}
	var ready []kanban.Task
	var failed []error
	for _, t := range open {
		if t.Status == kanban.Running {
			still, err := d.reconcile(t)
			if err != nil {
				failed = append(failed, err)
			}
			if still {
				running++
				byAssignee[d.assignee(t)]++
			}
		}
	}
	now := d.now()
	for _, t := range d.claimable(open) {
		if ok, _ := d.Board.Due(t, now, d.DryRun); !ok {
			continue // a retry's backoff, or a task for later
		}
		ready = append(ready, t)
	}
	sort.SliceStable(ready, func(i, j int) bool {
		if ready[i].Priority != ready[j].Priority {
			return ready[i].Priority > ready[j].Priority
		}
		return ready[i].CreatedAt < ready[j].CreatedAt
	})
	if len(ready) > 0 && running < d.MaxWorkers && !d.DryRun {
		// A host whose clock is too far from the shared filesystem's
		// claims nothing, and says why (kanban lease.go).
		if err := d.Board.CheckClock(); err != nil {
			return errors.Join(append(failed, err)...)
		}
	}
	for _, t := range ready {
		if running >= d.MaxWorkers {
			break
		}
		who := d.assignee(t)
		if limit, ok := d.MaxInProgress[who]; ok && byAssignee[who] >= limit {
			continue
		}
		if d.DryRun {
			d.say("claim %s (%s)", t.ID, t.Title)
			running++
			byAssignee[who]++
			continue
		}
		started, err := d.claimAndSpawn(t)
		if err != nil {
			failed = append(failed, err)
		}
		if started {
			running++
			byAssignee[who]++
		}
	}
	return errors.Join(failed...)
}

// claimable returns the open tasks that are ready: those stored ready, and
// the waiting ones (todo, with parents) whose parents are all done. An
// open parent is not done, and is known without a read: only parents
// that are closed, or gone, are read.
func (d *Dispatcher) claimable(open []kanban.Task) []kanban.Task {
	byID := make(map[string]kanban.Task, len(open))
	for _, t := range open {
		byID[t.ID] = t
	}
	get := func(id string) (kanban.Task, error) {
		if t, ok := byID[id]; ok {
			return t, nil
		}
		return d.Board.Get(id)
	}
	var out []kanban.Task
	for _, t := range open {
		v, _, err := d.Board.View(t, get)
		if err != nil {
			d.Warn(err.Error())
			continue
		}
		if v.Status == kanban.Ready {
			out = append(out, v)
		}
	}
	return out
}

// reconcile looks at a running task's worker. It reports whether the task
// still runs afterwards.
func (d *Dispatcher) reconcile(t kanban.Task) (bool, error) {
	r := t.CurrentRun()
	if r == nil {
		return true, nil
	}
	// A run with no worker task is a claim made by hand (kanban claim), or
	// one whose dispatcher died before recording its worker: it has no
	// exit to look at, but its claim expires like any other.
	var w tasks.Task
	// unseen: the worker of a run of another host has no record here
	// (yet: another host's files may show late), which is no sign of its
	// end; its claim decides, and nothing here can stop it.
	unseen := false
	if r.WorkerTaskID != "" {
		var err error
		w, err = d.Tasks.Get(r.WorkerTaskID)
		switch {
		case errors.Is(err, fsstore.ErrNotFound) && r.Host != "" && r.Host != d.Board.Host:
			unseen = true
		case errors.Is(err, fsstore.ErrNotFound):
			// Its record is gone (pruned by hand): nothing will ever
			// report this worker's end.
			w = tasks.Task{ID: r.WorkerTaskID, Status: tasks.Lost, Error: "the worker's task record " + r.WorkerTaskID + " is gone"}
		case err != nil:
			return true, err
		}
	}
	if r.WorkerTaskID != "" && !unseen && w.Finished() {
		outcome, reason := kanban.OutcomeCrashed, ""
		switch {
		case w.ExitCode != nil && *w.ExitCode == 0:
			outcome, reason = kanban.OutcomeProtocolViolation, "the worker exited without completing or blocking the task"
		case w.ExitCode != nil:
			reason = fmt.Sprintf("the worker exited with status %d", *w.ExitCode)
		case w.Signal != "":
			reason = "the worker was killed by " + w.Signal
		default:
			reason = "the worker was lost: " + w.Error
		}
		if d.DryRun {
			d.say("end the run of %s: %s (%s)", t.ID, outcome, reason)
			return false, nil
		}
		if err := d.Board.FailRun(t.ID, r.ID, outcome, reason, w.ExitCode, w.Signal); err != nil {
			return false, err
		}
		d.sayFailed(t.ID, r.ID, outcome, outcome+" ("+reason+")")
		return false, nil
	}
	// Its claim is judged by what this host has watched of it, never by
	// its expiry, which another host's clock stamped (kanban lease.go).
	if d.Board.ClaimWatched(t, d.DryRun) <= t.ClaimTTL() {
		return true, nil
	}
	if r.WorkerTaskID != "" && !unseen && !d.Tasks.Local(w) {
		// Its worker runs on another host and holds its lease there (the
		// reconcile of tasks has not found it lost): a dispatcher on that
		// host stops it and reclaims the task. Reclaimed from here, it
		// would run on, writing to the session its successor resumes.
		return true, nil
	}
	if d.DryRun {
		d.say("reclaim %s: its claim expired at %s", t.ID, t.ClaimExpires)
		return false, nil
	}
	// A heartbeat may have come since the tick read the task: look again
	// before killing anything.
	if now, err := d.Board.Get(t.ID); err != nil || now.CurrentRunID != r.ID || now.ClaimExpires != t.ClaimExpires {
		return true, err
	}
	if r.WorkerTaskID != "" && !unseen {
		killed, killErr := d.kill(d.Tasks, w.ID, syscall.SIGTERM, 5*time.Second)
		if !killed.Finished() {
			// Not stopped (its command not started yet, or not gone):
			// reclaimed now, the task could be claimed again while this
			// worker lives. The next tick tries again.
			if killErr == nil {
				killErr = fmt.Errorf("its worker task %s has not ended", w.ID)
			}
			d.Warn(fmt.Sprintf("task %s: its claim expired, but its worker is not stopped, so it is not reclaimed yet: %v", t.ID, killErr))
			return true, nil
		}
		w = killed
	}
	err := d.Board.Reclaim(t.ID, r.ID, w.ExitCode, w.Signal)
	if err != nil {
		return false, err
	}
	if unseen {
		d.sayFailed(t.ID, r.ID, kanban.OutcomeReclaimed, fmt.Sprintf("reclaimed (its claim expired; its worker task %s, of host %s, has no record here and is not stopped)", r.WorkerTaskID, r.Host))
	} else {
		d.sayFailed(t.ID, r.ID, kanban.OutcomeReclaimed, "reclaimed (its claim expired)")
	}
	return false, nil
}

// sayFailed says what became of task id after the tick ended its run
// runID with outcome (what): a retry, or the task given up (retry.go).
// A run that ended otherwise meanwhile (its worker completed the task
// between the tick's read and its FailRun, which then changed nothing) is
// not the tick's to report.
func (d *Dispatcher) sayFailed(id, runID, outcome, what string) {
	t, err := d.Board.Get(id)
	if err == nil {
		if r := t.RunByID(runID); r == nil || r.Outcome != outcome {
			return
		}
	}
	switch {
	case err != nil:
		d.say("%s %s", what, id)
	case t.Status == kanban.Blocked:
		d.say("blocked %s: %s", id, t.BlockReason)
	default:
		d.say("retry %s at %s: %s", id, t.NotBefore, what)
	}
}

// assignee is the profile whose agent works t: its assignee, else the
// board's.
func (d *Dispatcher) assignee(t kanban.Task) string {
	if t.Assignee != "" {
		return t.Assignee
	}
	return d.Profile
}

// resumeOn is the task's resume setting, else the profile's, else true.
func (d *Dispatcher) resumeOn(t kanban.Task) bool {
	if t.ResumeOnRespawn != nil {
		return *t.ResumeOnRespawn
	}
	if d.ResumeOnRespawn != nil {
		return *d.ResumeOnRespawn
	}
	return true
}

// plan is how a claimed task's worker starts: fresh, or resuming a session.
type plan struct {
	sessionID string // resume this session ("" for a fresh one)
	prompt    string
	event     kanban.Event
}

// planRun decides between resuming and a fresh spawn. Resuming takes the
// most recent earlier run whose session still exists in the assignee's
// profile and holds at least one message; its prompt is the comments posted
// since the last block, oldest first, or a note that the task resumes plus
// the body.
func (d *Dispatcher) planRun(t kanban.Task) (plan, error) {
	task := strings.TrimSpace(t.Title + "\n\n" + t.Body)
	if len(t.Runs) == 0 {
		results, err := d.parentResults(t, "")
		if err != nil {
			return plan{}, err
		}
		return plan{prompt: task + results + "\n\n" + protocol(t)}, nil
	}
	// Subtasks done since the last run started: what the worker waited for.
	results, err := d.parentResults(t, t.Runs[len(t.Runs)-1].StartedAt)
	if err != nil {
		return plan{}, err
	}
	task += results
	// A fresh worker after earlier runs still gets what people said since
	// the last block, after the task itself.
	comments, err := d.commentsSinceBlock(t)
	if err != nil {
		return plan{}, err
	}
	if comments != "" {
		task += "\n\nComments since the task was last blocked:\n\n" + comments
	}
	fresh := plan{prompt: task + "\n\n" + protocol(t)}
	skip := func(reason string) (plan, error) {
		fresh.event = kanban.Event{Type: kanban.EventResumeSkipped, Detail: reason}
		return fresh, nil
	}
	if !d.resumeOn(t) {
		return skip("disabled")
	}
	missing := ""
	for i := len(t.Runs) - 1; i >= 0; i-- {
		r := t.Runs[i]
		if r.SessionID == "" {
			continue
		}
		sess, err := d.Session(r.Profile, r.SessionID)
		if errors.Is(err, fsstore.ErrNotFound) {
			if missing == "" {
				missing = r.SessionID
			}
			continue
		}
		if err != nil {
			return plan{}, err
		}
		if sess.MessageCount == 0 {
			continue // the run died before its first message
		}
		prompt, err := d.resumePrompt(t, results)
		if err != nil {
			return plan{}, err
		}
		return plan{sessionID: sess.ID, prompt: prompt, event: kanban.Event{Type: kanban.EventResumed, Detail: sess.ID}}, nil
	}
	if missing != "" {
		return skip("session " + missing + " missing")
	}
	return skip("no earlier session")
}

// parentResults is what a prompt says of the task's parents completed
// after after ("": all): each one's title and result, in the order they
// were linked, after a blank line; "" when there is none.
func (d *Dispatcher) parentResults(t kanban.Task, after fsstore.Time) (string, error) {
	var b strings.Builder
	for _, id := range t.Parents {
		p, err := d.Board.Get(id)
		if err != nil {
			return "", err
		}
		if !p.Done() || (after != "" && !after.Before(p.CompletedAt)) {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\n\nThe tasks this one waited for are done:")
		}
		fmt.Fprintf(&b, "\n\n%s (task %s): %s", p.Title, p.ID, firstNonEmpty(p.Result, "(no result given)"))
	}
	return b.String(), nil
}

func firstNonEmpty(s, otherwise string) string {
	if s != "" {
		return s
	}
	return otherwise
}

// resumePrompt is the prompt of a resumed worker: the results of the
// subtasks done since its last run (results), then the comments posted
// since the last block, oldest first; with neither, a note that the task
// resumes and its body.
func (d *Dispatcher) resumePrompt(t kanban.Task, results string) (string, error) {
	comments, err := d.commentsSinceBlock(t)
	if err != nil {
		return "", err
	}
	if results != "" {
		comments = strings.TrimSpace(strings.TrimSpace(results) + "\n\n" + comments)
	}
	if comments == "" {
		comments = strings.TrimSpace("The task resumes after an interruption. Continue where you left off.\n\n" + t.Title + "\n\n" + t.Body)
	}
	return comments + "\n\n" + protocol(t), nil
}

// protocol is what every worker prompt ends with: how a worker ends its
// run, through the agent's kanban tools.
func protocol(t kanban.Task) string {
	return "You are working kanban task " + t.ID + ". When the work is done, call the tool kanban_complete with its result; " +
		"if you cannot go on, call kanban_block with the reason. End every run with one of the two. " +
		"kanban_comment adds a note to the task, and kanban_heartbeat extends your claim during long work; " +
		"kanban_create with subtask true makes a subtask: block to wait for your subtasks, and you resume with their results."
}

// commentsSinceBlock joins the comments posted since the task was last
// blocked (by a worker, a person, a crash or a reclaim), oldest first.
func (d *Dispatcher) commentsSinceBlock(t kanban.Task) (string, error) {
	events, err := d.Board.Events(t.ID)
	if err != nil {
		return "", err
	}
	var lastBlock fsstore.Time
	for _, ev := range events {
		if ev.Type.Blocks() {
			lastBlock = ev.TS
		}
	}
	comments, err := d.Board.Comments(t.ID)
	if err != nil {
		return "", err
	}
	var parts []string
	for _, c := range comments {
		if lastBlock.Before(c.TS) {
			if c.Author != "" {
				parts = append(parts, c.Author+": "+c.Text)
			} else {
				parts = append(parts, c.Text)
			}
		}
	}
	return strings.Join(parts, "\n\n"), nil
}

// claimAndSpawn claims t and starts its worker under the tasks
// supervisor, and reports whether the worker runs. The claim records the
// worker's task id before the worker starts, so that a crash in between
// leaves a run whose worker has no record, which the next tick sees as
// lost. The claim's outcome is then stored: the claim stands, or the
// task is blocked (spawn_failed). When not even that can be stored (a
// full disk), the claim is undone: the task is ready again, as it was,
// and the error says so.
func (d *Dispatcher) claimAndSpawn(t kanban.Task) (bool, error) {
	p, err := d.planRun(t)
	if err != nil {
		return false, err
	}
	profile := d.assignee(t)
	workerID := fsstore.NewID(d.now())
	pending, err := d.Board.ClaimPending(t.ID, d.ClaimTTL, profile, func(_ *kanban.Task, r *kanban.Run) []kanban.Event {
		r.ResumedFromSession = p.sessionID
		r.WorkerTaskID = workerID
		if p.event.Type == "" {
			return nil
		}
		ev := p.event
		ev.RunID = r.ID
		return []kanban.Event{ev}
	})
	if errors.Is(err, fsstore.ErrRefused) {
		return false, nil // claimed by someone else since we read it
	}
	if err != nil {
		return false, err
	}
	claimed := pending.Task
	run := claimed.CurrentRun()
	spawnErr := d.spawn(workerID, claimed, run, p)
	if spawnErr == nil {
		pending.Keep()
		how := "fresh"
		if p.sessionID != "" {
			how = "resuming session " + p.sessionID
		}
		d.say("claimed %s: run %s, worker task %s (%s)", t.ID, run.ID, workerID, how)
		return true, nil
	}
	failErr := d.Board.FailRun(t.ID, run.ID, kanban.OutcomeSpawnFailed, spawnErr.Error(), nil, "")
	if failErr == nil {
		pending.Keep()
		d.say("blocked %s: spawn_failed (%v)", t.ID, spawnErr)
		return false, nil
	}
	err = fmt.Errorf("task %s: its worker could not start (%w), and that could not be stored (%w)", t.ID, spawnErr, failErr)
	if undoErr := pending.Undo(); undoErr != nil {
		return false, fmt.Errorf("%w; undoing the claim failed too, so the task stays running until the next tick finds its worker lost: %w", err, undoErr)
	}
	return false, fmt.Errorf("%w; the claim is undone, the task is ready", err)
}

// spawn starts the worker of run as background task id.
func (d *Dispatcher) spawn(id string, t kanban.Task, run *kanban.Run, p plan) error {
	return d.Spawn(id, "kanban:"+t.ID, d.argv(t, run, p), []string{
		EnvTask + "=" + t.ID,
		EnvRun + "=" + run.ID,
		EnvClaim + "=" + t.ClaimLock,
		EnvProfile + "=" + d.Profile,
		"HERMES_PROFILE=" + run.Profile,
	})
}

// argv is the worker command of run. One pass over each field: text a
// placeholder brings in (a prompt that mentions {task_id}) is never
// replaced again.
func (d *Dispatcher) argv(t kanban.Task, run *kanban.Run, p plan) []string {
	vars := strings.NewReplacer(
		"{profile}", run.Profile, "{prompt}", p.prompt, "{session_id}", p.sessionID,
		"{task_id}", t.ID, "{run_id}", run.ID,
	)
	argv := make([]string, len(d.Worker))
	resumes := false
	for i, field := range d.Worker {
		argv[i] = vars.Replace(field)
		resumes = resumes || strings.Contains(field, "{session_id}")
	}
	if p.sessionID != "" && !resumes {
		argv = append(argv, "--resume", p.sessionID)
	}
	return argv
}
