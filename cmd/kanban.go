package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/cmd/dispatch"
	"github.com/hermes/hermes/cmd/supervisor"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/kanban"
	"github.com/hermes/hermes/profiles"
)

// The environment a worker runs in (set by the dispatcher). Worker-side
// verbs (block, complete, heartbeat, register-session) given no ID act for
// the run it names, and refuse when that run or claim is no longer the
// task's current one.
const (
	envKanbanTask    = dispatch.EnvTask
	envKanbanRun     = dispatch.EnvRun
	envKanbanClaim   = dispatch.EnvClaim
	envKanbanProfile = dispatch.EnvProfile
)

func kanbanCommand() *cli.Command {
	return &cli.Command{
		Name:  "kanban",
		Usage: "a task board worked by agents, a respawned worker resuming its prior session",
		Subcommands: []*cli.Command{
			{
				Name:      "create",
				Usage:     "add a task (ready unless --status todo) and print its id",
				ArgsUsage: "TITLE",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "body", Usage: "what to do"},
					&cli.StringFlag{Name: "body-file", Usage: "read the body from a file (- for stdin)"},
					&cli.StringFlag{Name: "assignee", Usage: "the profile whose agent works it (default: this profile)"},
					&cli.IntFlag{Name: "priority", Usage: "higher is dispatched first"},
					&cli.StringFlag{Name: "resume-on-respawn", Usage: "true or false (default: kanban.resume_on_respawn in config.yaml, else true)"},
					&cli.StringFlag{Name: "status", Value: string(kanban.Ready), Usage: "todo or ready (a task with parents waits for them)"},
					&cli.StringSliceFlag{Name: "parent", Usage: "a task this one waits for (repeatable): it is ready once they are all done"},
					&cli.StringFlag{Name: "idempotency-key", Aliases: []string{"key"}, Usage: "a create with a key that made a task before prints that task, creating nothing"},
					&cli.StringFlag{Name: "at", Usage: "ready at this `TIME`: RFC 3339, or a duration from now (90m)"},
					&cli.IntFlag{Name: "max-retries", Usage: "retries after a failed run before the task is given up", DefaultText: "kanban.failure_limit in config.yaml, less one"},
				},
				Action: withEnv(kanbanCreate),
			},
			{
				Name:      "assign",
				Usage:     "give a task that is not running to PROFILE, whose agent works its next run",
				ArgsUsage: "ID PROFILE",
				Action:    withEnv(kanbanAssign),
			},
			{
				Name:      "link",
				Usage:     "make PARENT a parent of CHILD: CHILD waits until PARENT is done (a cycle is refused)",
				ArgsUsage: "CHILD PARENT",
				Action:    withEnv(kanbanLink((*kanban.Board).Link)),
			},
			{
				Name:      "unlink",
				Usage:     "remove PARENT from CHILD's parents",
				ArgsUsage: "CHILD PARENT",
				Action:    withEnv(kanbanLink((*kanban.Board).Unlink)),
			},
			{
				Name:      "list",
				Usage:     "tasks, oldest first (archived ones only with --status archived)",
				ArgsUsage: " ",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "status", Usage: "only this status"},
					&cli.StringFlag{Name: "assignee", Usage: "only this assignee"},
					&cli.BoolFlag{Name: "tree", Usage: "each task under its parents"},
				},
				Action: withEnv(kanbanList),
			},
			{Name: "show", Usage: "a task with its runs, comments and events", ArgsUsage: "ID", Action: withEnv(kanbanShow)},
			kanbanWatchCommand(),
			kanbanStatsCommand(),
			{
				Name:      "comment",
				Usage:     "comment on a task; a resumed worker gets the comments since the last block as its prompt",
				ArgsUsage: "ID TEXT",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "author", Value: firstSet(os.Getenv("USER"), "user"), Usage: "who says it"},
					&cli.StringFlag{Name: "key", Aliases: []string{"idempotency-key"}, Usage: "an idempotency key (as sessions append's): the comment is stored once for it, however often the command is run"},
				},
				Action: withEnv(kanbanComment),
			},
			{Name: "runs", Usage: "a task's runs", ArgsUsage: "ID", Action: withEnv(kanbanRuns)},
			{
				Name:      "block",
				Usage:     "block a task (a worker: its own, ending its run)",
				ArgsUsage: "[ID]",
				Flags:     []cli.Flag{&cli.StringFlag{Name: "reason", Usage: "why (required)"}},
				Action:    withEnv(kanbanBlock),
			},
			{Name: "unblock", Usage: "make a blocked task ready again", ArgsUsage: "ID", Action: withEnv(personVerb((*kanban.Board).Unblock))},
			{Name: "ready", Usage: "make a todo task ready for dispatch", ArgsUsage: "ID", Action: withEnv(personVerb((*kanban.Board).Ready))},
			{
				Name:      "complete",
				Usage:     "mark a task done (a worker: its own, ending its run)",
				ArgsUsage: "[ID]",
				Flags:     []cli.Flag{&cli.StringFlag{Name: "result", Usage: "what came of it"}},
				Action:    withEnv(kanbanComplete),
			},
			{Name: "heartbeat", Usage: "a worker extends its claim", ArgsUsage: "[ID]", Action: withEnv(kanbanHeartbeat)},
			{
				Name:      "claim",
				Usage:     "claim a ready task for a worker started by hand; prints the worker's environment",
				ArgsUsage: "ID",
				Flags:     []cli.Flag{&cli.StringFlag{Name: "ttl", Value: "15m", Usage: "how long the claim lasts without a heartbeat"}},
				Action:    withEnv(kanbanClaim),
			},
			{
				Name:      "register-session",
				Usage:     "a worker records its session on its run (hermes chat does it itself)",
				ArgsUsage: " ",
				Flags:     []cli.Flag{&cli.StringFlag{Name: "session", Usage: "the session id (default $HERMES_SESSION_ID)"}},
				Action:    withEnv(kanbanRegisterSession),
			},
			{Name: "archive", Usage: "archive a task that is not running", ArgsUsage: "ID", Action: withEnv(personVerb((*kanban.Board).Archive))},
			{
				Name:      "dispatch",
				Usage:     "reconcile running tasks, then claim ready ones and start their workers",
				ArgsUsage: " ",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "once", Usage: "one tick (the default)"},
					&cli.StringFlag{Name: "interval", Usage: "tick every D until interrupted, e.g. 30s"},
					&cli.IntFlag{Name: "max-workers", Value: 4, Usage: "at most this many running tasks"},
					&cli.StringFlag{Name: "claim-ttl", Value: "15m", Usage: "how long a claim lasts without a heartbeat"},
					&cli.BoolFlag{Name: "dry-run", Usage: "say what a tick would do, do nothing"},
				},
				Action: withEnv(kanbanDispatch),
			},
		},
	}
}

// board opens the profile's board. A worker's verbs use the board named by
// its environment, which may be another profile's than its own.
func (e *env) board() (*kanban.Board, error) {
	dir := e.profile.Dir()
	if p := os.Getenv(envKanbanProfile); p != "" && !e.c.IsSet("profile") {
		if err := profiles.CheckName(p); err != nil {
			return nil, err
		}
		dir = profiles.Dir(e.profile.Root, p)
	}
	return kanban.NewBoard(dir, e.lockTimeout, e.warn), nil
}

func kanbanCreate(e *env) error {
	title, err := oneArg(e.c, "TITLE")
	if err != nil {
		return err
	}
	t := kanban.Task{Title: title, Priority: e.c.Int("priority"), Status: kanban.Status(e.c.String("status"))}
	if t.Status != kanban.Todo && t.Status != kanban.Ready {
		return usagef("--status must be todo or ready")
	}
	t.Body = e.c.String("body")
	if f := e.c.String("body-file"); f != "" {
		if t.Body != "" {
			return usagef("give --body or --body-file, not both")
		}
		var b []byte
		if f == "-" {
			b, err = readAllStdin(e)
		} else {
			b, err = os.ReadFile(f)
		}
		if err != nil {
			return err
		}
		if !utf8.Valid(b) {
			return usagef("--body-file %s is not valid UTF-8", f)
		}
		t.Body = string(b)
	}
	if t.Assignee = e.c.String("assignee"); t.Assignee == "" {
		t.Assignee = e.profile.Name
	}
	if err := profiles.CheckName(t.Assignee); err != nil {
		return err
	}
	t.Parents = e.c.StringSlice("parent")
	if len(t.Parents) > 0 && e.c.IsSet("status") {
		return usagef("a task with --parent waits for its parents (todo, then ready): give no --status")
	}
	if e.c.IsSet("max-retries") {
		n := e.c.Int("max-retries")
		if n < 0 {
			return usagef("--max-retries must be 0 or more")
		}
		t.MaxRetries = &n
	}
	if s := e.c.String("resume-on-respawn"); s != "" {
		v, err := strconv.ParseBool(s)
		if err != nil {
			return usagef("--resume-on-respawn must be true or false")
		}
		t.ResumeOnRespawn = &v
	}
	if at := e.c.String("at"); at != "" {
		if t.NotBefore, err = kanban.ParseAt(at, time.Now(), profiles.ParseDuration); err != nil {
			return err
		}
	}
	board, err := e.board()
	if err != nil {
		return err
	}
	if e.c.IsSet("idempotency-key") {
		t, err = board.CreateOnce(e.c.String("idempotency-key"), t)
	} else {
		t, err = board.Create(t)
	}
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.stdout, t)
	}
	fmt.Fprintln(e.stdout, t.ID)
	return nil
}

func readAllStdin(e *env) ([]byte, error) {
	var b strings.Builder
	buf := make([]byte, 64<<10)
	for {
		n, err := e.stdin.Read(buf)
		b.Write(buf[:n])
		if err == io.EOF {
			return []byte(b.String()), nil
		}
		if err != nil {
			return nil, fmt.Errorf("read stdin: %w", err)
		}
	}
}

func kanbanList(e *env) error {
	if e.c.NArg() > 0 {
		return usagef("list takes no arguments")
	}
	status, assignee := kanban.Status(e.c.String("status")), e.c.String("assignee")
	if status != "" && !status.Valid() {
		return usagef("unknown --status %q (todo, ready, running, blocked, done, archived)", status)
	}
	board, err := e.board()
	if err != nil {
		return err
	}
	all, err := board.All()
	if err != nil {
		return err
	}
	all, err = board.ViewAll(all)
	if err != nil {
		return err
	}
	var list []kanban.Task
	for _, t := range all {
		if (status == "" && t.Status == kanban.Archived) || (status != "" && t.Status != status) || (assignee != "" && t.Assignee != assignee) {
			continue
		}
		list = append(list, t)
	}
	if e.c.Bool("tree") {
		return printTree(e, kanbanTree(list))
	}
	if e.json {
		for _, t := range list {
			printJSON(e.stdout, t)
		}
		return nil
	}
	tb := newTable(e.stdout, "ID", "STATUS", "PRI", "ASSIGNEE", "RUNS", "TITLE")
	for _, t := range list {
		tb.row(t.ID, t.Status, t.Priority, t.Assignee, len(t.Runs), t.Title)
	}
	return tb.flush()
}

// kanbanArgs reads the ID argument of a human verb and opens the board.
func kanbanArgs(e *env) (*kanban.Board, string, error) {
	id, err := kanbanTaskArg(e)
	if err != nil {
		return nil, "", err
	}
	board, err := e.board()
	return board, id, err
}

// kanbanTaskArg reads the ID argument of a human verb.
func kanbanTaskArg(e *env) (string, error) {
	id, err := oneArg(e.c, "task ID")
	if err != nil {
		return "", err
	}
	return id, fsstore.CheckID("task id", id)
}

func kanbanShow(e *env) error {
	board, id, err := kanbanArgs(e)
	if err != nil {
		return err
	}
	shown, err := board.Show(id)
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.stdout, shown)
	}
	t, hold, comments := shown.Task, shown.Hold, shown.Comments
	tb := newTable(e.stdout)
	tb.row("id:", t.ID)
	tb.row("title:", t.Title)
	tb.row("status:", t.Status)
	if hold != nil {
		tb.row("waiting:", hold.Reason)
	}
	if t.BlockReason != "" {
		tb.row("blocked:", t.BlockReason)
	}
	if len(t.Parents) > 0 {
		tb.row("parents:", strings.Join(t.Parents, " "))
	}
	if t.SubtaskOf != "" {
		tb.row("subtask of:", t.SubtaskOf)
	}
	if t.NotBefore != "" && t.Status == kanban.Ready {
		tb.row("not before:", t.NotBefore)
	}
	tb.row("assignee:", t.Assignee)
	tb.row("priority:", t.Priority)
	tb.row("created:", t.CreatedAt)
	if t.Result != "" {
		tb.row("result:", t.Result)
	}
	if err := showRunsUsage(e, tb, t.Runs); err != nil {
		return err
	}
	tb.flush()
	if t.Body != "" {
		fmt.Fprintf(e.stdout, "\n%s\n", strings.TrimRight(t.Body, "\n"))
	}
	if len(t.Runs) > 0 {
		fmt.Fprintln(e.stdout, "\nruns:")
		printRuns(e, t.Runs)
	}
	if len(comments) > 0 {
		fmt.Fprintln(e.stdout, "\ncomments:")
		for _, c := range comments {
			fmt.Fprintf(e.stdout, "  %s  %s: %s\n", shortTime(c.TS), dash(c.Author), c.Text)
		}
	}
	return nil
}

func printRuns(e *env, runs []kanban.Run) {
	tb := newTable(e.stdout, "  RUN", "STATUS", "OUTCOME", "EXIT", "SESSION", "RESUMED FROM", "STARTED")
	for _, r := range runs {
		exit := "-"
		if r.ExitCode != nil {
			exit = strconv.Itoa(*r.ExitCode)
		} else if r.Signal != "" {
			exit = r.Signal
		}
		tb.row("  "+r.ID, r.Status, dash(r.Outcome), exit, dash(r.SessionID), dash(r.ResumedFromSession), shortTime(r.StartedAt))
	}
	tb.flush()
}

func kanbanRuns(e *env) error {
	board, id, err := kanbanArgs(e)
	if err != nil {
		return err
	}
	t, err := board.Get(id)
	if err != nil {
		return err
	}
	if e.json {
		for _, r := range t.Runs {
			printJSON(e.stdout, r)
		}
		return nil
	}
	printRuns(e, t.Runs)
	return nil
}

func kanbanComment(e *env) error {
	if e.c.NArg() != 2 {
		return usagef("comment takes ID and TEXT")
	}
	id := e.c.Args().Get(0)
	if err := fsstore.CheckID("task id", id); err != nil {
		return err
	}
	board, err := e.board()
	if err != nil {
		return err
	}
	var c kanban.Comment
	if e.c.IsSet("key") {
		c, _, err = board.AddCommentOnce(e.c.String("key"), id, e.c.String("author"), e.c.Args().Get(1))
	} else {
		c, err = board.AddComment(id, e.c.String("author"), e.c.Args().Get(1))
	}
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.stdout, c)
	}
	fmt.Fprintln(e.stdout, c.ID)
	return nil
}

func workerFromEnv() (kanban.Worker, bool) {
	w := kanban.Worker{Task: os.Getenv(envKanbanTask), Run: os.Getenv(envKanbanRun), Claim: os.Getenv(envKanbanClaim)}
	return w, w.Run != ""
}

// target decides whom a verb acts for: the worker of the environment
// (checked against the task's current run and claim), or a person naming
// the task.
func target(e *env) (id string, w *kanban.Worker, err error) {
	if e.c.NArg() > 1 {
		return "", nil, usagef("expected at most one task ID")
	}
	id = e.c.Args().First()
	if env, ok := workerFromEnv(); ok && (id == "" || id == env.Task) {
		return env.Task, &env, fsstore.CheckID("task id", env.Task)
	}
	if id == "" {
		return "", nil, usagef("missing task ID (or run inside a worker, with %s set)", envKanbanRun)
	}
	return id, nil, fsstore.CheckID("task id", id)
}

// printKanbanTask prints a task a verb changed, as readers see it.
func printKanbanTask(e *env, board *kanban.Board, t kanban.Task) error {
	if v, _, err := board.View(t, nil); err == nil {
		t = v
	}
	if e.json {
		return printJSON(e.stdout, t)
	}
	fmt.Fprintf(e.stdout, "%s %s\n", t.ID, t.Status)
	return nil
}

func kanbanBlock(e *env) error {
	reason := e.c.String("reason")
	if strings.TrimSpace(reason) == "" {
		return usagef("block needs --reason")
	}
	id, w, err := target(e)
	if err != nil {
		return err
	}
	board, err := e.board()
	if err != nil {
		return err
	}
	t, worker, err := board.Block(id, w, reason)
	if err != nil {
		return err
	}
	// A person blocking a running task stops its worker, so that no
	// stale worker writes to the session a later run resumes. A worker
	// blocking its own task is about to exit by itself.
	if w == nil && worker != "" {
		tasks, err := e.tasks()
		if err != nil {
			return err
		}
		// A worker on another host cannot be signalled from here.
		if wt, err := tasks.Get(worker); err == nil && !wt.Finished() && !tasks.Local(wt) {
			e.warn(fmt.Sprintf("task %s is blocked, but its worker %s runs on host %s: stop it there (hermes tasks kill %s)", t.ID, worker, wt.Host, worker))
		} else if _, err := supervisor.Kill(tasks, worker, syscall.SIGTERM, 10*time.Second); err != nil && !errors.Is(err, fsstore.ErrRefused) && !errors.Is(err, fsstore.ErrNotFound) {
			e.warn(fmt.Sprintf("task %s is blocked, but its worker %s: %v", t.ID, worker, err))
		}
	}
	return printKanbanTask(e, board, t)
}

// personVerb is a verb a person runs on the task ID names: one board
// method, then the task printed.
func personVerb(move func(*kanban.Board, string) (kanban.Task, error)) func(*env) error {
	return func(e *env) error {
		board, id, err := kanbanArgs(e)
		if err != nil {
			return err
		}
		t, err := move(board, id)
		if err != nil {
			return err
		}
		return printKanbanTask(e, board, t)
	}
}

func kanbanComplete(e *env) error {
	id, w, err := target(e)
	if err != nil {
		return err
	}
	board, err := e.board()
	if err != nil {
		return err
	}
	t, err := board.Complete(id, w, e.c.String("result"))
	if err != nil {
		return err
	}
	return printKanbanTask(e, board, t)
}

func kanbanHeartbeat(e *env) error {
	_, w, err := target(e)
	if err != nil {
		return err
	}
	if w == nil {
		return usagef("heartbeat is for a worker: run it with %s and %s set", envKanbanRun, envKanbanClaim)
	}
	board, err := e.board()
	if err != nil {
		return err
	}
	t, err := board.Heartbeat(*w)
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.stdout, t)
	}
	fmt.Fprintln(e.stdout, t.ClaimExpires)
	return nil
}

// kanbanWorker is a worker's own task as the agent's kanban tools see it,
// with the CLI verbs' rules: a run or claim no longer current is refused.
type kanbanWorker struct {
	board  *kanban.Board
	w      kanban.Worker
	author string
}

// boardFor is the board for one call under ctx, whose lock waits end when
// ctx does. A Board is plain values (a directory, a timeout, functions),
// so its copy is the same board.
func (k *kanbanWorker) boardFor(ctx context.Context) *kanban.Board {
	b := *k.board
	b.Cancel = ctx.Done()
	return &b
}

func (k *kanbanWorker) Complete(ctx context.Context, result string) error {
	_, err := k.boardFor(ctx).Complete(k.w.Task, &k.w, result)
	return err
}

func (k *kanbanWorker) Block(ctx context.Context, reason string) (bool, error) {
	t, _, err := k.boardFor(ctx).Block(k.w.Task, &k.w, reason)
	return err == nil && t.Status == kanban.Todo, err
}

func (k *kanbanWorker) Comment(ctx context.Context, text string) error {
	_, err := k.boardFor(ctx).AddComment(k.w.Task, k.author, text)
	return err
}

// Create makes a task on the worker's board, assigned to assignee or the
// worker's profile; a subtask, one the worker's task waits for, in one
// commit (kanban.Board.CreateSubtask).
func (k *kanbanWorker) Create(ctx context.Context, title, body, assignee string, subtask bool) (string, error) {
	if assignee == "" {
		assignee = k.author
	}
	if err := profiles.CheckName(assignee); err != nil {
		return "", err
	}
	b := k.boardFor(ctx)
	t := kanban.Task{Title: title, Body: body, Assignee: assignee}
	var err error
	if subtask {
		t, err = b.CreateSubtask(k.w, t)
	} else {
		t, err = b.Create(t)
	}
	return t.ID, err
}

func (k *kanbanWorker) Heartbeat(ctx context.Context) error {
	_, err := k.boardFor(ctx).Heartbeat(k.w)
	return err
}

func kanbanClaim(e *env) error {
	id, err := kanbanTaskArg(e)
	if err != nil {
		return err
	}
	ttl, err := durationFlag(e.c, "ttl", profiles.ParsePeriod)
	if err != nil {
		return err
	}
	board, err := e.board()
	if err != nil {
		return err
	}
	t, err := board.Get(id)
	if err != nil {
		return err
	}
	t, err = board.Claim(id, ttl, t.Assignee, nil)
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.stdout, map[string]string{
			"task_id": t.ID, "run_id": t.CurrentRunID, "claim_lock": t.ClaimLock, "claim_expires": string(t.ClaimExpires),
		})
	}
	fmt.Fprintf(e.stdout, "%s=%s\n%s=%s\n%s=%s\n%s=%s\n", envKanbanTask, t.ID, envKanbanRun, t.CurrentRunID,
		envKanbanClaim, t.ClaimLock, envKanbanProfile, e.profile.Name)
	return nil
}

func kanbanRegisterSession(e *env) error {
	if e.c.NArg() > 0 {
		return usagef("register-session takes no arguments")
	}
	w, ok := workerFromEnv()
	if !ok {
		return usagef("register-session is for a worker: run it with %s and %s set", envKanbanRun, envKanbanClaim)
	}
	sid := firstSet(e.c.String("session"), os.Getenv("HERMES_SESSION_ID"))
	if sid == "" {
		return usagef("register-session needs --session (or $HERMES_SESSION_ID)")
	}
	if err := fsstore.CheckID("session id", sid); err != nil {
		return err
	}
	board, err := e.board()
	if err != nil {
		return err
	}
	return board.RegisterSession(w, sid)
}

func kanbanAssign(e *env) error {
	if e.c.NArg() != 2 {
		return usagef("assign takes ID and PROFILE")
	}
	id, profile := e.c.Args().Get(0), e.c.Args().Get(1)
	if err := fsstore.CheckID("task id", id); err != nil {
		return err
	}
	if err := profiles.CheckName(profile); err != nil {
		return err
	}
	board, err := e.board()
	if err != nil {
		return err
	}
	t, err := board.Assign(id, profile)
	if err != nil {
		return err
	}
	return printKanbanTask(e, board, t)
}
