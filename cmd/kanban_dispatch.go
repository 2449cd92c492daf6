package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/google/shlex"

	"github.com/hermes/hermes/cmd/supervisor"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/profiles"
)

// defaultWorkerCommand is the worker of a task unless kanban.worker_command
// says otherwise. The setting is split like a shell line (quotes group
// words), then the placeholders {profile}, {prompt}, {session_id},
// {task_id} and {run_id} are replaced inside each argument, in one pass, so
// a prompt with spaces stays one argument and a prompt that mentions a
// placeholder arrives verbatim. When a worker resumes and the template has
// no {session_id}, "--resume <session_id>" is added.
const defaultWorkerCommand = "hermes -p {profile} chat -q {prompt}"

// workerFields splits kanban.worker_command (the default when unset) like
// a shell line: quotes group words, a backslash escapes. Blank or
// unparsable is bad input, found before anything is claimed.
func workerFields(setting string) ([]string, error) {
	if setting == "" {
		setting = defaultWorkerCommand
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

// dispatcher runs ticks over one board.
type dispatcher struct {
	e          *env
	board      *fsstore.Board
	tasks      *fsstore.TaskStore
	cfg        profiles.Config
	worker     []string // the worker command's fields, placeholders unreplaced
	maxWorkers int
	ttl        time.Duration
	dryRun     bool
}

func kanbanDispatch(e *env) error {
	if e.c.NArg() > 0 {
		return usagef("dispatch takes no arguments")
	}
	if e.c.Bool("once") && e.c.IsSet("interval") {
		return usagef("give --once or --interval, not both")
	}
	d := &dispatcher{e: e, maxWorkers: e.c.Int("max-workers"), dryRun: e.c.Bool("dry-run")}
	if d.maxWorkers < 1 {
		return usagef("--max-workers must be at least 1")
	}
	var err error
	if d.ttl, err = profiles.ParseDuration(e.c.String("claim-ttl")); err != nil {
		return err
	}
	var interval time.Duration
	if s := e.c.String("interval"); s != "" {
		if interval, err = profiles.ParseDuration(s); err != nil {
			return err
		}
	}
	if d.cfg, err = e.config(); err != nil {
		return err
	}
	if d.worker, err = workerFields(d.cfg.Kanban.WorkerCommand); err != nil {
		return err
	}
	if d.board, err = e.board(); err != nil {
		return err
	}
	if d.tasks, err = e.tasks(); err != nil {
		return err
	}
	if interval == 0 {
		return d.tick()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for {
		if err := d.tick(); err != nil {
			e.warn(err.Error())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// say prints one line of what a tick did.
func (d *dispatcher) say(format string, args ...any) {
	if d.dryRun {
		format = "would " + format
	}
	fmt.Fprintf(d.e.stdout, format+"\n", args...)
}

// tick reconciles the running tasks, then claims ready ones by priority,
// oldest first, up to the worker limit. It holds the board's dispatch
// lock, so concurrent dispatchers take turns; each claim is also a
// compare-and-swap under the task's own lock.
func (d *dispatcher) tick() error {
	if _, err := os.Stat(d.board.Dir); errors.Is(err, os.ErrNotExist) {
		return nil // no task was ever created: nothing to do
	}
	// A dry run only reads: it takes no lock, so it creates no lock file.
	if !d.dryRun {
		unlock, err := fsstore.Lock(d.board.DispatchLockPath(), d.e.lockTimeout)
		if err != nil {
			return err
		}
		defer unlock()
	}
	if _, err := supervisor.Reconcile(d.tasks); err != nil {
		return err
	}
	open, err := d.board.OpenTasks()
	if err != nil {
		return err
	}
	running := 0
	var ready []fsstore.KanbanTask
	for _, t := range open {
		switch t.Status {
		case fsstore.KanbanRunning:
			still, err := d.reconcile(t)
			if err != nil {
				d.e.warn(err.Error())
			}
			if still {
				running++
			}
		case fsstore.KanbanReady:
			ready = append(ready, t)
		}
	}
	sort.SliceStable(ready, func(i, j int) bool {
		if ready[i].Priority != ready[j].Priority {
			return ready[i].Priority > ready[j].Priority
		}
		return ready[i].CreatedAt < ready[j].CreatedAt
	})
	for _, t := range ready {
		if running >= d.maxWorkers {
			break
		}
		if d.dryRun {
			d.say("claim %s (%s)", t.ID, t.Title)
			running++
			continue
		}
		if err := d.claimAndSpawn(t); err != nil {
			if errors.Is(err, fsstore.ErrRefused) {
				continue // claimed by someone else since we read it
			}
			d.e.warn(err.Error())
			continue
		}
		running++
	}
	return nil
}

// reconcile looks at a running task's worker. It reports whether the task
// still runs afterwards.
func (d *dispatcher) reconcile(t fsstore.KanbanTask) (bool, error) {
	r := t.CurrentRun()
	if r == nil {
		return true, nil
	}
	// A run with no worker task is a claim made by hand (kanban claim), or
	// one whose dispatcher died before recording its worker: it has no
	// exit to look at, but its claim expires like any other.
	var w fsstore.Task
	if r.WorkerTaskID != "" {
		var err error
		w, err = d.tasks.Get(r.WorkerTaskID)
		if errors.Is(err, fsstore.ErrNotFound) {
			// Its record is gone (pruned by hand): nothing will ever
			// report this worker's end.
			w = fsstore.Task{ID: r.WorkerTaskID, Status: fsstore.TaskLost, Error: "the worker's task record " + r.WorkerTaskID + " is gone"}
		} else if err != nil {
			return true, err
		}
	}
	if r.WorkerTaskID != "" && w.Finished() {
		outcome, reason := fsstore.OutcomeCrashed, ""
		switch {
		case w.ExitCode != nil && *w.ExitCode == 0:
			outcome, reason = fsstore.OutcomeProtocolViolation, "the worker exited without completing or blocking the task"
		case w.ExitCode != nil:
			reason = fmt.Sprintf("the worker exited with status %d", *w.ExitCode)
		case w.Signal != "":
			reason = "the worker was killed by " + w.Signal
		default:
			reason = "the worker was lost: " + w.Error
		}
		if d.dryRun {
			d.say("block %s: %s (%s)", t.ID, outcome, reason)
			return false, nil
		}
		err := d.board.FailRun(t.ID, r.ID, outcome, reason, w.ExitCode, w.Signal)
		if err == nil {
			d.say("blocked %s: %s (%s)", t.ID, outcome, reason)
		}
		return false, err
	}
	expires, err := time.Parse(time.RFC3339Nano, t.ClaimExpires)
	if err != nil || time.Now().Before(expires) {
		return true, nil
	}
	if d.dryRun {
		d.say("reclaim %s: its claim expired at %s", t.ID, t.ClaimExpires)
		return false, nil
	}
	// A heartbeat may have come since the tick read the task: look again
	// before killing anything.
	if now, err := d.board.Get(t.ID); err != nil || now.CurrentRunID != r.ID || now.ClaimExpires != t.ClaimExpires {
		return true, err
	}
	if r.WorkerTaskID != "" {
		killed, killErr := supervisor.Kill(d.tasks, w.ID, syscall.SIGTERM, 5*time.Second)
		if killErr != nil && !errors.Is(killErr, fsstore.ErrRefused) {
			d.e.warn(killErr.Error())
		}
		w = killed
	}
	err = d.board.Reclaim(t.ID, r.ID, w.ExitCode, w.Signal)
	if err == nil {
		d.say("reclaimed %s: its claim expired", t.ID)
	}
	return false, err
}

// resumeOn is the task's resume setting, else the profile's, else true.
func (d *dispatcher) resumeOn(t fsstore.KanbanTask) bool {
	if t.ResumeOnRespawn != nil {
		return *t.ResumeOnRespawn
	}
	if d.cfg.Kanban.ResumeOnRespawn != nil {
		return *d.cfg.Kanban.ResumeOnRespawn
	}
	return true
}

// plan is how a claimed task's worker starts: fresh, or resuming a session.
type plan struct {
	sessionID string // resume this session ("" for a fresh one)
	prompt    string
	event     fsstore.Event
}

// planRun decides between resuming and a fresh spawn. Resuming takes the
// most recent earlier run whose session still exists in the assignee's
// profile and holds at least one message; its prompt is the comments posted
// since the last block, oldest first, or a note that the task resumes plus
// the body.
func (d *dispatcher) planRun(t fsstore.KanbanTask) (plan, error) {
	task := strings.TrimSpace(t.Title + "\n\n" + t.Body)
	if len(t.Runs) == 0 {
		return plan{prompt: task + "\n\n" + protocol(t)}, nil
	}
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
		fresh.event = fsstore.Event{Type: fsstore.EventResumeSkipped, Detail: reason}
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
		store := fsstore.NewSessionStore(profiles.Dir(d.e.profile.Root, r.Profile), r.Profile, d.e.lockTimeout, d.e.warn)
		sess, err := store.Get(r.SessionID)
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
		prompt, err := d.resumePrompt(t)
		if err != nil {
			return plan{}, err
		}
		return plan{sessionID: sess.ID, prompt: prompt, event: fsstore.Event{Type: fsstore.EventResumed, Detail: sess.ID}}, nil
	}
	if missing != "" {
		return skip("session " + missing + " missing")
	}
	return skip("no earlier session")
}

// resumePrompt is the prompt of a resumed worker: the comments posted
// since the last block, oldest first, or a note that the task resumes and
// its body.
func (d *dispatcher) resumePrompt(t fsstore.KanbanTask) (string, error) {
	comments, err := d.commentsSinceBlock(t)
	if err != nil {
		return "", err
	}
	if comments == "" {
		comments = strings.TrimSpace("The task resumes after an interruption. Continue where you left off.\n\n" + t.Title + "\n\n" + t.Body)
	}
	return comments + "\n\n" + protocol(t), nil
}

// protocol is what every worker prompt ends with: how a worker ends its
// run, through the agent's kanban tools.
func protocol(t fsstore.KanbanTask) string {
	return "You are working kanban task " + t.ID + ". When the work is done, call the tool kanban_complete with its result; " +
		"if you cannot go on, call kanban_block with the reason. End every run with one of the two. " +
		"kanban_comment adds a note to the task, and kanban_heartbeat extends your claim during long work."
}

// commentsSinceBlock joins the comments posted since the task was last
// blocked (by a worker, a person, a crash or a reclaim), oldest first.
func (d *dispatcher) commentsSinceBlock(t fsstore.KanbanTask) (string, error) {
	events, err := d.board.Events(t.ID)
	if err != nil {
		return "", err
	}
	lastBlock := ""
	for _, ev := range events {
		if ev.Type.Blocks() {
			lastBlock = ev.TS
		}
	}
	comments, err := d.board.Comments(t.ID)
	if err != nil {
		return "", err
	}
	var parts []string
	for _, c := range comments {
		if c.TS > lastBlock {
			if c.Author != "" {
				parts = append(parts, c.Author+": "+c.Text)
			} else {
				parts = append(parts, c.Text)
			}
		}
	}
	return strings.Join(parts, "\n\n"), nil
}

// claimAndSpawn claims t and starts its worker under the tasks supervisor.
func (d *dispatcher) claimAndSpawn(t fsstore.KanbanTask) error {
	p, err := d.planRun(t)
	if err != nil {
		return err
	}
	profile := firstSet(t.Assignee, d.e.profile.Name)
	claimed, err := d.board.Claim(t.ID, d.ttl, profile, func(_ *fsstore.KanbanTask, r *fsstore.Run) []fsstore.Event {
		r.ResumedFromSession = p.sessionID
		if p.event.Type == "" {
			return nil
		}
		ev := p.event
		ev.RunID = r.ID
		return []fsstore.Event{ev}
	})
	if err != nil {
		return err
	}
	run := claimed.CurrentRun()
	workerID, err := d.spawn(claimed, run, p)
	if err != nil {
		uerr := d.board.FailRun(t.ID, run.ID, fsstore.OutcomeSpawnFailed, err.Error(), nil, "")
		d.say("blocked %s: spawn_failed (%v)", t.ID, err)
		return uerr
	}
	err = d.board.SetWorkerTask(t.ID, run.ID, workerID)
	how := "fresh"
	if p.sessionID != "" {
		how = "resuming session " + p.sessionID
	}
	d.say("claimed %s: run %s, worker task %s (%s)", t.ID, run.ID, workerID, how)
	return err
}

// spawn starts the worker of run as a background task and returns the
// task's id.
func (d *dispatcher) spawn(t fsstore.KanbanTask, run *fsstore.Run, p plan) (string, error) {
	// One pass over each field: text a placeholder brings in (a prompt
	// that mentions {task_id}) is never replaced again.
	vars := strings.NewReplacer(
		"{profile}", run.Profile, "{prompt}", p.prompt, "{session_id}", p.sessionID,
		"{task_id}", t.ID, "{run_id}", run.ID,
	)
	argv := make([]string, len(d.worker))
	resumes := false
	for i, field := range d.worker {
		argv[i] = vars.Replace(field)
		resumes = resumes || strings.Contains(field, "{session_id}")
	}
	if p.sessionID != "" && !resumes {
		argv = append(argv, "--resume", p.sessionID)
	}
	if argv[0] == "hermes" {
		exe, err := os.Executable()
		if err != nil {
			return "", err
		}
		argv[0] = exe
	}
	env := append(os.Environ(),
		envKanbanTask+"="+t.ID,
		envKanbanRun+"="+run.ID,
		envKanbanClaim+"="+t.ClaimLock,
		envKanbanProfile+"="+d.e.profile.Name,
		"HERMES_PROFILE="+run.Profile,
		"HERMES_HOME="+d.e.profile.Root,
	)
	cwd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	self := os.Getpid()
	w, err := d.tasks.Create(fsstore.Task{
		Name: "kanban:" + t.ID, Command: argv, Cwd: cwd,
		SupervisorPID: self, SupervisorStart: supervisor.ProcStart(self),
	})
	if err != nil {
		return "", err
	}
	return w.ID, startSupervisor(d.e, w.ID, env)
}
