package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/cmd/supervisor"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/tasks"
	"github.com/hermes/hermes/profiles"
)

func tasksCommand() *cli.Command {
	yes := &cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do not ask for confirmation"}
	return &cli.Command{
		Name:  "tasks",
		Usage: "background tasks, whose output and exit code outlive restarts",
		Subcommands: []*cli.Command{
			{
				Name:  "run",
				Usage: "run a command under a supervisor and print the task id (with --wait: in the foreground, exiting with its code)",
				Description: `The command's stdout and stderr go to the task's log, written by the command
itself. Without --wait the supervisor runs in its own process session, so the task
outlives the caller and the terminal. With --wait the output also reaches stdout,
and hermes exits with the command's exit code (128 + N for signal N): a cron wrapper.
   */5 * * * * hermes tasks run --wait --name backup -- /usr/local/bin/backup.sh`,
				ArgsUsage: "-- CMD [ARGS…]",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "name", Usage: "a name to find the task by (history --name)"},
					&cli.StringFlag{Name: "session", Usage: "the session the task belongs to"},
					&cli.StringFlag{Name: "cwd", Usage: "working directory (default: the current one)"},
					&cli.StringSliceFlag{Name: "env", Usage: "K=V added to the command's environment (repeatable)"},
					&cli.BoolFlag{Name: "wait", Usage: "run in the foreground and exit with the command's exit code"},
					&cli.StringFlag{Name: "key", Aliases: []string{"idempotency-key"}, Usage: "an idempotency key (as sessions append's): a run with a key that made a task before starts nothing and prints that task (with --wait: waits for it and exits with its code)"},
				},
				Action: withEnv(tasksRun),
			},
			{
				Name:   "supervise",
				Hidden: true,
				Usage:  "the background supervisor of a task (started by tasks run)",
				Action: withEnv(tasksSupervise),
			},
			{
				Name:      "list",
				Usage:     "running tasks and those finished in the last 24 hours",
				ArgsUsage: " ",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "session", Usage: "only the tasks of this session and of the sessions started from it (chat --background)"},
				},
				Action: withEnv(tasksList),
			},
			{
				Name:      "show",
				Usage:     "a task's record",
				ArgsUsage: "ID",
				Action:    withEnv(tasksShow),
			},
			{
				Name:      "history",
				Usage:     "finished tasks, most recently finished first",
				ArgsUsage: " ",
				Flags: []cli.Flag{
					&cli.IntFlag{Name: "limit", Value: 50, Usage: "at most this many (0: all)"},
					&cli.StringFlag{Name: "name", Usage: "only tasks with this name"},
					&cli.StringFlag{Name: "status", Usage: "only succeeded, failed, killed or lost"},
					&cli.StringFlag{Name: "since", Usage: "only tasks finished within this duration, e.g. 7d"},
				},
				Action: withEnv(tasksHistory),
			},
			{
				Name:      "log",
				Usage:     "a task's output",
				ArgsUsage: "ID",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "stream the output until the task finishes"},
					&cli.IntFlag{Name: "tail", Value: -1, DefaultText: "all", Usage: "only the last N lines"},
				},
				Action: withEnv(tasksLog),
			},
			{
				Name:      "wait",
				Usage:     "block until a task finishes and exit with its exit code",
				ArgsUsage: "ID",
				Flags:     []cli.Flag{&cli.StringFlag{Name: "timeout", Usage: "give up after this long (exit 1), e.g. 30m"}},
				Action:    withEnv(tasksWait),
			},
			{
				Name:      "kill",
				Usage:     "signal a task's whole process group; SIGKILL after the grace period",
				ArgsUsage: "ID",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "signal", Value: "TERM", Usage: "the first signal"},
					&cli.StringFlag{Name: "grace", Value: "10s", Usage: "how long to wait before SIGKILL"},
				},
				Action: withEnv(tasksKill),
			},
			{
				Name:      "prune",
				Usage:     "remove finished tasks (record and log) older than a duration",
				ArgsUsage: " ",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "older-than", Usage: "finished longer ago than this, e.g. 30d (required)"},
					&cli.IntFlag{Name: "keep-last", Usage: "always keep the N most recently finished"},
					&cli.StringFlag{Name: "status", Usage: "only succeeded, failed, killed or lost"},
					&cli.BoolFlag{Name: "dry-run", Usage: "list what would be removed, remove nothing"},
					yes,
				},
				Action: withEnv(tasksPrune),
			},
		},
	}
}

// tasks opens the profile's task store and recovers tasks whose supervisor
// died, so that every command that reads tasks sees the truth. On a
// profile it may not write (a read-only copy), the recovery cannot be
// recorded: it says so, and readers show the records as they are.
func (e *env) tasks() (*tasks.Store, error) {
	store := tasks.NewStore(e.profile.Dir(), e.lockTimeout, e.warn)
	_, err := supervisor.Reconcile(store)
	if fsstore.IsReadOnly(err) {
		e.warn(fmt.Sprintf("cannot record the end of tasks whose processes are gone: %v", err))
		err = nil
	}
	return store, err
}

func tasksRun(e *env) error {
	argv := e.c.Args().Slice()
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return usagef("no command: hermes tasks run [flags] -- CMD [ARGS…]")
	}
	name := e.c.String("name")
	if name != "" {
		if err := fsstore.CheckTitle(name); err != nil {
			return err
		}
	}
	env := os.Environ()
	for _, kv := range e.c.StringSlice("env") {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return usagef("--env %q is not K=V", kv)
		}
		env = append(env, kv)
	}
	cwd := e.c.String("cwd")
	if cwd == "" {
		var err error
		if cwd, err = os.Getwd(); err != nil {
			return err
		}
	}
	cwd, err := filepath.Abs(cwd)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return fsstore.Invalidf("--cwd %s is not a directory", cwd)
	}
	sessionID := ""
	if ref := e.c.String("session"); ref != "" {
		if sessionID, err = e.resolveSession(ref); err != nil {
			return err
		}
	}
	store := tasks.NewStore(e.profile.Dir(), e.lockTimeout, e.warn)
	self := os.Getpid()
	// Until the supervisor writes its own pid, the caller's stands in: it
	// lives until the supervisor says the command runs.
	t := tasks.Task{
		Name: name, Command: argv, Cwd: cwd, SessionID: sessionID,
		SupervisorPID: self, SupervisorStart: supervisor.ProcStart(self),
	}
	made := true
	if e.c.IsSet("key") {
		t, made, err = store.CreateOnce(e.c.String("key"), t)
	} else {
		t, err = store.Create(t)
	}
	if err != nil {
		return err
	}
	if !made {
		// The key's task was made by an earlier run: nothing is started.
		switch {
		case e.c.Bool("wait"):
			return waitTask(e, store, t.ID, time.Time{})
		case e.json:
			return printJSON(e.stdout, t)
		}
		fmt.Fprintln(e.stdout, t.ID)
		return nil
	}
	if e.c.Bool("wait") {
		final, err := supervisor.Supervise(supervisor.Spec{Store: store, ID: t.ID, Env: env, Output: e.stdout})
		if final.ID == "" || !final.Finished() {
			// No record came back (the supervisor could not write it,
			// e.g. on a full disk): the error says why.
			return err
		}
		if err != nil {
			// The command could not start: say why, exit as a shell would.
			fmt.Fprintf(e.stderr, "hermes: %v\n", err)
		}
		if e.json {
			printJSON(e.stderr, final)
		}
		return taskExit(final)
	}
	if err := startSupervisor(e, t.ID, env); err != nil {
		return err
	}
	if e.json {
		t, err = store.Get(t.ID)
		if err != nil {
			return err
		}
		return printJSON(e.stdout, t)
	}
	fmt.Fprintln(e.stdout, t.ID)
	return nil
}

// taskExit is the exit of `run --wait` and `wait`: the command's own code,
// 128 + N for a signal, 1 for a lost task.
func taskExit(t tasks.Task) error {
	switch {
	case t.ExitCode != nil && *t.ExitCode == 0:
		return nil
	case t.ExitCode != nil:
		return silentExit{*t.ExitCode}
	case t.Signal != "":
		if sig, err := supervisor.ParseSignal(t.Signal); err == nil {
			return silentExit{128 + int(sig)}
		}
	}
	return fmt.Errorf("task %s is %s: %s", t.ID, t.Status, dash(t.Error))
}

// startSupervisor re-executes hermes as the task's supervisor, in its own
// process session, and waits until it reports that the command runs.
func startSupervisor(e *env, id string, env []string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := exec.Command(exe, "--home", e.profile.Root, "--profile", e.profile.Name,
		"--lock-timeout", e.lockTimeout.String(), "tasks", "supervise", id)
	cmd.Env = env
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return fmt.Errorf("start supervisor: %w", err)
	}
	w.Close()
	cmd.Process.Release()
	line, _ := bufio.NewReader(r).ReadString('\n')
	switch {
	case line == "ok\n":
		return nil
	case strings.HasPrefix(line, "error: "):
		// The supervisor's message names the task, and says whether its
		// record keeps why (for history and show) or could not be kept.
		return errors.New(strings.TrimSpace(strings.TrimPrefix(line, "error: ")))
	}
	return fmt.Errorf("the supervisor of task %s exited before starting the command", id)
}

// readyPipe is the descriptor on which the supervisor tells its caller
// that the command runs: the first of ExtraFiles.
const readyPipe = 3

func tasksSupervise(e *env) error {
	id, err := oneArg(e.c, "task ID")
	if err != nil {
		return err
	}
	ready := os.NewFile(readyPipe, "ready")
	store := tasks.NewStore(e.profile.Dir(), e.lockTimeout, e.warn)
	signal.Ignore(syscall.SIGPIPE)
	_, err = supervisor.Supervise(supervisor.Spec{
		Store: store, ID: id, Env: os.Environ(),
		Started: func(err error) {
			if ready == nil {
				return
			}
			if err != nil {
				fmt.Fprintf(ready, "error: %s\n", errorText(err))
			} else {
				fmt.Fprintln(ready, "ok")
			}
			ready.Close()
		},
	})
	return err
}

func tasksList(e *env) error {
	if e.c.NArg() > 0 {
		return usagef("list takes no arguments")
	}
	store, err := e.tasks()
	if err != nil {
		return err
	}
	var list []tasks.Task
	running, err := store.Running()
	if err != nil {
		return err
	}
	for i := len(running) - 1; i >= 0; i-- {
		t, err := store.Get(running[i])
		if err == nil && !t.Finished() {
			list = append(list, t)
		}
	}
	recent, err := store.History(tasks.HistoryOptions{Since: time.Now().Add(-24 * time.Hour)})
	if err != nil {
		return err
	}
	// A task that finished between the two reads is in both: it is listed
	// once, finished.
	finished := map[string]bool{}
	for _, t := range recent {
		finished[t.ID] = true
	}
	list = slices.DeleteFunc(list, func(t tasks.Task) bool { return finished[t.ID] })
	list = append(list, recent...)
	if ref := e.c.String("session"); ref != "" {
		id, err := e.resolveSession(ref)
		if err != nil {
			return err
		}
		list = ofSession(e.sessions(), list, id)
	}
	return printTasks(e, list)
}

// ofSession keeps the tasks of session id and of its child sessions.
func ofSession(sessions *sessions.Store, list []tasks.Task, id string) []tasks.Task {
	parents := map[string]string{}
	var out []tasks.Task
	for _, t := range list {
		if t.SessionID == "" {
			continue
		}
		parent, seen := parents[t.SessionID]
		if !seen {
			if s, err := sessions.Get(t.SessionID); err == nil {
				parent = s.ParentSessionID
			}
			parents[t.SessionID] = parent
		}
		if t.SessionID == id || parent == id {
			out = append(out, t)
		}
	}
	return out
}

func printTasks(e *env, list []tasks.Task) error {
	if e.json {
		w := bufferedOut(e.stdout)
		for _, t := range list {
			printJSON(w, t)
		}
		return w.Flush()
	}
	tb := newTable(e.stdout, "ID", "NAME", "STATUS", "EXIT", "STARTED", "DURATION", "COMMAND")
	for _, t := range list {
		tb.row(t.ID, dash(t.Name), t.Status, exitText(t), shortTime(t.StartedAt), durationText(t), commandText(t.Command))
	}
	return tb.flush()
}

func exitText(t tasks.Task) string {
	switch {
	case t.ExitCode != nil:
		return fmt.Sprint(*t.ExitCode)
	case t.Signal != "":
		return t.Signal
	}
	return "-"
}

func durationText(t tasks.Task) string {
	if !t.Finished() {
		if start, err := t.StartedAt.Instant(); err == nil {
			return time.Since(start).Round(time.Second).String() + "…"
		}
		return "-"
	}
	return (time.Duration(t.DurationMS) * time.Millisecond).String()
}

func commandText(argv []string) string {
	s := strings.Join(argv, " ")
	if r := []rune(s); len(r) > 60 {
		return string(r[:59]) + "…"
	}
	return s
}

// taskArg opens the task store and resolves the ID argument: an exact
// task id or a unique prefix.
func taskArg(e *env) (*tasks.Store, string, error) {
	store, err := e.tasks()
	if err != nil {
		return nil, "", err
	}
	ref, err := oneArg(e.c, "task ID")
	if err != nil {
		return nil, "", err
	}
	id, err := store.Resolve(ref)
	return store, id, err
}

func tasksShow(e *env) error {
	store, id, err := taskArg(e)
	if err != nil {
		return err
	}
	t, err := store.Get(id)
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.stdout, t)
	}
	tb := newTable(e.stdout)
	tb.row("id:", t.ID)
	tb.row("name:", dash(t.Name))
	tb.row("command:", strings.Join(t.Command, " "))
	tb.row("cwd:", t.Cwd)
	if t.SessionID != "" {
		tb.row("session:", t.SessionID)
	}
	tb.row("status:", t.Status)
	tb.row("exit:", exitText(t))
	if store.Local(t) {
		tb.row("pid:", t.PID)
	} else {
		tb.row("pid:", fmt.Sprintf("%d on host %s", t.PID, t.Host))
	}
	tb.row("started:", t.StartedAt)
	tb.row("finished:", dash(string(t.FinishedAt)))
	tb.row("duration:", durationText(t))
	tb.row("log:", fmt.Sprintf("%s (%d bytes)", store.LogPath(t.ID), t.LogBytes))
	if t.Error != "" {
		tb.row("error:", t.Error)
	}
	return tb.flush()
}

func tasksHistory(e *env) error {
	if e.c.NArg() > 0 {
		return usagef("history takes no arguments")
	}
	opts := tasks.HistoryOptions{Limit: e.c.Int("limit"), Name: e.c.String("name"), Status: e.c.String("status")}
	if opts.Limit < 0 {
		return usagef("--limit must be 0 or more")
	}
	if opts.Status != "" && !finishedStatus(opts.Status) {
		return usagef("unknown --status %q (succeeded, failed, killed, lost)", opts.Status)
	}
	if e.c.String("since") != "" {
		d, err := durationFlag(e.c, "since", profiles.ParseDuration)
		if err != nil {
			return err
		}
		opts.Since = time.Now().Add(-d)
	}
	store, err := e.tasks()
	if err != nil {
		return err
	}
	list, err := store.History(opts)
	if err != nil {
		return err
	}
	return printTasks(e, list)
}

func finishedStatus(s string) bool {
	switch s {
	case tasks.Succeeded, tasks.Failed, tasks.Killed, tasks.Lost:
		return true
	}
	return false
}

func tasksLog(e *env) error {
	store, id, err := taskArg(e)
	if err != nil {
		return err
	}
	if _, err := store.Get(id); err != nil {
		return err
	}
	tail := e.c.Int("tail")
	var printed int64
	if tail >= 0 {
		if printed, err = printTail(store.LogPath(id), tail, e.stdout); err != nil {
			return err
		}
	}
	if e.c.Bool("follow") {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		w := e.stdout
		if tail >= 0 {
			// The tail is printed; follow what comes after it, from
			// where the tail ended (the log may have grown since).
			w = skipWriter(e.stdout, printed)
		}
		err := supervisor.Follow(ctx, store, id, w)
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	if tail >= 0 {
		return nil
	}
	f, err := os.Open(store.LogPath(id))
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(e.stdout, f)
	return err
}

// skipWriter drops the first n bytes written to it.
func skipWriter(w io.Writer, n int64) io.Writer { return &skipper{w: w, n: n} }

type skipper struct {
	w io.Writer
	n int64
}

func (s *skipper) Write(p []byte) (int, error) {
	total := len(p)
	if s.n > 0 {
		k := min(int64(len(p)), s.n)
		s.n -= k
		p = p[k:]
	}
	if len(p) == 0 {
		return total, nil
	}
	_, err := s.w.Write(p)
	return total, err
}

// printTail writes the last n lines of the file at path, and returns the
// offset it wrote up to: the file's size when it began, whatever was
// appended while it wrote.
func printTail(path string, n int, w io.Writer) (int64, error) {
	f, err := os.Open(path)
	if n == 0 && errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	if n == 0 {
		return size, nil
	}
	start := size
	lines := 0
	buf := make([]byte, 64<<10)
	// Walk back to the start of the n-th line from the end; a last line
	// without a newline counts as a line.
	for start > 0 {
		k := min(int64(len(buf)), start)
		if _, err := f.ReadAt(buf[:k], start-k); err != nil {
			return 0, err
		}
		for i := k - 1; i >= 0; i-- {
			if buf[i] == '\n' && start-k+i != size-1 {
				lines++
				if lines == n {
					start = start - k + i + 1
					goto copy
				}
			}
		}
		start -= k
	}
copy:
	_, err = io.Copy(w, io.NewSectionReader(f, start, size-start))
	return size, err
}

func tasksWait(e *env) error {
	// Bad input is bad input whether or not the task exists: check the
	// flags before looking the task up.
	var timeout time.Duration
	if e.c.String("timeout") != "" {
		d, err := durationFlag(e.c, "timeout", profiles.ParsePeriod)
		if err != nil {
			return err
		}
		timeout = d
	}
	store, id, err := taskArg(e)
	if err != nil {
		return err
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	return waitTask(e, store, id, deadline)
}

// waitTask waits until task id is finished, or deadline (zero: no
// deadline) has passed, and exits as the task did (taskExit), printing
// its record with --json.
func waitTask(e *env, store *tasks.Store, id string, deadline time.Time) error {
	for {
		t, err := store.Get(id)
		if err != nil {
			return err
		}
		if t.Finished() {
			if e.json {
				printJSON(e.stdout, t)
			}
			return taskExit(t)
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return fmt.Errorf("task %s still running after %s", id, e.c.String("timeout"))
		}
		time.Sleep(50 * time.Millisecond)
		if _, err := supervisor.Reconcile(store); err != nil {
			return err
		}
	}
}

func tasksKill(e *env) error {
	sig, err := supervisor.ParseSignal(e.c.String("signal"))
	if err != nil {
		return usageError{err}
	}
	grace, err := durationFlag(e.c, "grace", profiles.ParsePeriod)
	if err != nil {
		return err
	}
	store, id, err := taskArg(e)
	if err != nil {
		return err
	}
	t, err := supervisor.Kill(store, id, sig, grace)
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.stdout, t)
	}
	fmt.Fprintf(e.stdout, "%s %s %s\n", t.ID, t.Status, exitText(t))
	return nil
}

func tasksPrune(e *env) error {
	if e.c.NArg() > 0 {
		return usagef("prune takes no arguments")
	}
	olderThan := e.c.String("older-than")
	if olderThan == "" {
		return usagef("prune needs --older-than, e.g. 30d")
	}
	d, err := durationFlag(e.c, "older-than", profiles.ParseDuration)
	if err != nil {
		return err
	}
	opts := tasks.PruneOptions{Before: time.Now().Add(-d), KeepLast: e.c.Int("keep-last"), Status: e.c.String("status"), DryRun: true}
	if opts.KeepLast < 0 {
		return usagef("--keep-last must be 0 or more")
	}
	if opts.Status != "" && !finishedStatus(opts.Status) {
		return usagef("unknown --status %q (succeeded, failed, killed, lost)", opts.Status)
	}
	store, err := e.tasks()
	if err != nil {
		return err
	}
	dry := e.c.Bool("dry-run")
	if !dry && !e.c.Bool("yes") {
		candidates, err := store.Prune(opts)
		if err != nil {
			return err
		}
		if len(candidates) == 0 {
			return nil
		}
		if err := e.confirm(false, fmt.Sprintf("remove %d finished tasks older than %s", len(candidates), olderThan)); err != nil {
			return err
		}
	}
	opts.DryRun = dry
	removed, err := store.Prune(opts)
	verb := "removed"
	if dry {
		verb = "would remove"
	}
	// One write for many lines: a prune may list 100,000 tasks.
	out := bufio.NewWriter(e.stdout)
	for _, r := range removed {
		if e.json {
			printJSON(out, r)
			continue
		}
		fmt.Fprintf(out, "%s %s  %s  %s  %s  (%d bytes)\n", verb, r.TaskID, dash(r.Name), r.Status, shortTime(r.FinishedAt), r.Bytes)
	}
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	return err
}
