package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/cron"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/tasks"
	"github.com/hermes/hermes/profiles"
)

func cronCommand() *cli.Command {
	jobFlags := func(add bool) []cli.Flag {
		flags := []cli.Flag{
			&cli.StringFlag{Name: "schedule", Usage: `when: five cron fields ("30 9 * * mon-fri"), @hourly, @daily, @weekly, @monthly, @yearly, "every 10m" or "at 2026-12-24 18:00"`},
			&cli.StringFlag{Name: "prompt", Usage: "run an agent turn with this prompt (instead of -- CMD ARGS…)"},
			&cli.StringFlag{Name: "session", Usage: "prompt jobs: the session `MODE`, new (a session per run, the default) or continue (one session the job keeps)"},
			&cli.StringFlag{Name: "tz", Usage: "the IANA time zone the schedule is read in (default: the local zone)"},
			&cli.StringFlag{Name: "catch-up", Usage: "the occurrences missed while nothing ticked: none, once (the default: one run for all) or all"},
			&cli.StringFlag{Name: "tools", Usage: "prompt jobs: the tools offered, comma-separated (default agent.tools in config.yaml)"},
			&cli.StringFlag{Name: "cwd", Usage: "the working directory of the runs (default: the current one)"},
		}
		if !add {
			flags = append(flags, &cli.StringFlag{Name: "name", Usage: "a new name"})
		}
		return flags
	}
	return &cli.Command{
		Name:  "cron",
		Usage: "scheduled jobs, each occurrence run once on any number of hosts",
		Description: `A job runs a command or an agent turn (a prompt) on a schedule. Each run is a
background task (hermes tasks show/log). Something must tick: hermes cron tick from
crontab or a systemd timer, hermes cron daemon, or the gateway with gateway.cron: true.
Any number of tickers, on any number of hosts, run each occurrence once.`,
		Subcommands: []*cli.Command{
			{
				Name:      "add",
				Usage:     "add a job and print its id",
				ArgsUsage: "NAME --schedule S (--prompt P | -- CMD [ARGS…])",
				Flags:     jobFlags(true),
				Action:    withEnv(cronAdd),
			},
			{
				Name:      "list",
				Usage:     "every job: state, next run, last run, failure streak",
				ArgsUsage: " ",
				Action:    withEnv(cronList),
			},
			{
				Name:      "show",
				Usage:     "a job's document",
				ArgsUsage: "ID|NAME",
				Action:    withEnv(cronShow),
			},
			{
				Name:      "edit",
				Usage:     "change a job (what it runs with -- CMD [ARGS…])",
				ArgsUsage: "ID|NAME [flags] [-- CMD [ARGS…]]",
				Flags:     jobFlags(false),
				Action:    withEnv(cronEdit),
			},
			{
				Name:      "pause",
				Usage:     "stop a job's runs until resume",
				ArgsUsage: "ID|NAME",
				Flags:     []cli.Flag{&cli.StringFlag{Name: "reason", Usage: "why (shown by list and show)"}},
				Action:    withEnv(cronPause),
			},
			{
				Name:      "resume",
				Usage:     "let a paused job run again, from its next occurrence, with its failure streak cleared",
				ArgsUsage: "ID|NAME",
				Action:    withEnv(cronResume),
			},
			{
				Name:      "remove",
				Usage:     "remove a job (its runs stay in the runs log)",
				ArgsUsage: "ID|NAME",
				Flags:     []cli.Flag{&cli.BoolFlag{Name: "dry-run", Usage: "say what would be removed, remove nothing"}},
				Action:    withEnv(cronRemove),
			},
			{
				Name:      "run",
				Usage:     "run a job now, outside its schedule, and print the task id",
				ArgsUsage: "ID|NAME",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "key", Aliases: []string{"idempotency-key"}, Usage: "an idempotency key (as tasks run's): a run with a key that ran the job before claims and starts nothing and prints that run's task"},
				},
				Action: withEnv(cronRun),
			},
			{
				Name:      "runs",
				Usage:     "the runs of a job, or of every job, newest first",
				ArgsUsage: "[ID|NAME]",
				Flags:     []cli.Flag{&cli.IntFlag{Name: "limit", Value: 50, Usage: "at most this many (0: all)"}},
				Action:    withEnv(cronRuns),
			},
			{
				Name:      "next",
				Usage:     "a job's next occurrences",
				ArgsUsage: "ID|NAME",
				Flags:     []cli.Flag{&cli.IntFlag{Name: "count", Value: 5, Usage: "how many"}},
				Action:    withEnv(cronNext),
			},
			{
				Name:      "tick",
				Usage:     "run what is due, then exit (for crontab and systemd timers)",
				ArgsUsage: " ",
				Action:    withEnv(cronTick),
			},
			{
				Name:      "daemon",
				Usage:     "tick in the foreground until interrupted",
				ArgsUsage: " ",
				Flags:     []cli.Flag{&cli.StringFlag{Name: "every", Value: "1s", Usage: "how often to tick"}},
				Action:    withEnv(cronDaemon),
			},
			{
				Name:   "exec",
				Hidden: true,
				Usage:  "the command of a run's task: runs the job and records how it ended",
				Action: withEnv(cronExec),
			},
		},
	}
}

// cron opens the profile's cron store, with cron.max_failures from
// config.yaml and the task store as the judge of started runs (opened,
// and recovered, only when a run needs it).
func (e *env) cron() (*cron.Store, error) {
	cfg, err := e.config()
	if err != nil {
		return nil, err
	}
	cs := cron.NewStore(e.profile.Dir(), e.lockTimeout, e.warn)
	switch {
	case cfg.Cron.MaxFailures < 0:
		return nil, fsstore.Invalidf("cron.max_failures must be a positive number of failed runs")
	case cfg.Cron.MaxFailures > 0:
		cs.MaxFailures = cfg.Cron.MaxFailures
	}
	taskStore := sync.OnceValues(e.tasks)
	cs.TaskOutcome = func(id string) (cron.Outcome, bool, error) {
		ts, err := taskStore()
		if err != nil {
			return cron.Outcome{}, false, err
		}
		t, err := ts.Get(id)
		if err != nil || !t.Finished() {
			return cron.Outcome{}, false, err
		}
		return cron.Outcome{Status: t.Status, ExitCode: t.ExitCode, DurationMS: t.DurationMS, Error: t.Error}, true, nil
	}
	return cs, nil
}

// jobArg opens the store and resolves the one ID|NAME argument.
func jobArg(e *env) (*cron.Store, string, error) {
	ref, err := oneArg(e.c, "job ID or name")
	if err != nil {
		return nil, "", err
	}
	cs, err := e.cron()
	if err != nil {
		return nil, "", err
	}
	id, err := cs.Resolve(ref)
	return cs, id, err
}

// commandArgs is what follows "--": a job's command.
func commandArgs(args []string) []string {
	for i, a := range args {
		if a == "--" {
			return args[i+1:]
		}
	}
	return nil
}

// localZone names the local zone as the job will keep it: $TZ, else the
// zone /etc/localtime links to, else "Local" (the ticking host's).
func localZone() string {
	if tz := strings.TrimPrefix(os.Getenv("TZ"), ":"); tz != "" {
		if _, err := time.LoadLocation(tz); err == nil {
			return tz
		}
	}
	if target, err := os.Readlink("/etc/localtime"); err == nil {
		if _, name, ok := strings.Cut(target, "zoneinfo/"); ok {
			if _, err := time.LoadLocation(name); err == nil {
				return name
			}
		}
	}
	return "Local"
}

// runDir is the absolute directory of --cwd, or the current one, checked.
func runDir(dir string) (string, error) {
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return "", err
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fsstore.Invalidf("--cwd %s is not a directory", dir)
	}
	return dir, nil
}

// toolList splits --tools.
func toolList(s string) []string {
	out := []string{}
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

func cronAdd(e *env) error {
	args := e.c.Args().Slice()
	argv := commandArgs(args)
	if len(args) == 0 || args[0] == "--" {
		return usagef("no name: hermes cron add NAME --schedule S (--prompt P | -- CMD [ARGS…])")
	}
	if len(args)-len(argv) > 2 || (argv == nil && len(args) > 1) {
		return usagef("cron add takes one NAME, then -- CMD [ARGS…]; %q is extra", args[1])
	}
	if e.c.String("schedule") == "" {
		return usagef("--schedule is required")
	}
	tz := e.c.String("tz")
	if tz == "" {
		tz = localZone()
	}
	cwd, err := runDir(e.c.String("cwd"))
	if err != nil {
		return err
	}
	cs, err := e.cron()
	if err != nil {
		return err
	}
	j, err := cs.Add(cron.Job{Name: args[0], Schedule: e.c.String("schedule"), TZ: tz, Command: argv,
		Prompt: e.c.String("prompt"), Session: e.c.String("session"), Tools: toolList(e.c.String("tools")),
		Cwd: cwd, CatchUp: e.c.String("catch-up")})
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.stdout, jobJSON(j))
	}
	fmt.Fprintln(e.stdout, j.ID)
	fmt.Fprintf(e.stderr, "hermes: job %s (%s) next runs at %s\n", j.ID, j.Name, localTime(j.NextDue, j.TZ))
	return nil
}

// localTime is ts in zone tz, as list, show and next print it.
func localTime(ts fsstore.Time, tz string) string {
	if ts == "" {
		return "-"
	}
	t, err := ts.Instant()
	loc, lerr := cron.Location(tz)
	if err != nil || lerr != nil {
		return string(ts)
	}
	return t.In(loc).Format("2006-01-02 15:04:05 MST")
}

// jobState is a job's state as list shows it.
func jobState(j cron.Job) string {
	switch {
	case j.Run != nil && j.Run.TaskID != "":
		return "running"
	case j.Run != nil:
		return "claimed"
	case j.Paused:
		return "paused"
	case j.NextDue == "":
		return "done"
	}
	return "scheduled"
}

func lastRunText(j cron.Job) string {
	if j.LastRun == nil {
		return "-"
	}
	s := j.LastRun.Status
	if j.LastRun.ExitCode != nil && *j.LastRun.ExitCode != 0 {
		s += fmt.Sprintf(" (%d)", *j.LastRun.ExitCode)
	}
	return s + " " + shortTime(j.LastRun.FinishedAt)
}

func cronList(e *env) error {
	if e.c.NArg() > 0 {
		return usagef("list takes no arguments")
	}
	cs, err := e.cron()
	if err != nil {
		return err
	}
	jobs, err := cs.List()
	if err != nil {
		return err
	}
	return printJobs(e, jobs)
}

// jobOut is a job as --json prints it: last_run and run are {} when there
// is none, never null (the job document on disk keeps null), in their
// places. Inside a JSON string every quote is escaped, so the two keys
// followed by null are found only as the fields themselves.
type jobOut struct{ cron.Job }

func jobJSON(j cron.Job) jobOut { return jobOut{j} }

func (j jobOut) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // as printJSON: a command's < and & as they are
	err := enc.Encode(j.Job)
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	b = bytes.Replace(b, []byte(`"last_run":null`), []byte(`"last_run":{}`), 1)
	return bytes.Replace(b, []byte(`"run":null`), []byte(`"run":{}`), 1), err
}

func printJobs(e *env, jobs []cron.Job) error {
	if e.json {
		w := bufferedOut(e.stdout)
		for _, j := range jobs {
			printJSON(w, jobJSON(j))
		}
		return w.Flush()
	}
	tb := newTable(e.stdout, "ID", "NAME", "STATE", "NEXT", "LAST", "STREAK", "SCHEDULE")
	for _, j := range jobs {
		next := localTime(j.NextDue, j.TZ)
		if j.Paused {
			next = "-"
		}
		tb.row(j.ID, j.Name, jobState(j), next, lastRunText(j), j.FailureStreak, j.Schedule)
	}
	return tb.flush()
}

func cronShow(e *env) error {
	cs, id, err := jobArg(e)
	if err != nil {
		return err
	}
	j, err := cs.Get(id)
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.stdout, jobJSON(j))
	}
	tb := newTable(e.stdout)
	tb.row("id:", j.ID)
	tb.row("name:", j.Name)
	tb.row("schedule:", j.Schedule+" ("+j.TZ+")")
	if j.Prompt != "" {
		tb.row("prompt:", j.Prompt)
		tb.row("session:", j.Session+" "+j.SessionID)
		tb.row("tools:", dash(strings.Join(j.Tools, ",")))
	} else {
		tb.row("command:", strings.Join(j.Command, " "))
	}
	tb.row("cwd:", j.Cwd)
	tb.row("catch-up:", j.CatchUp)
	tb.row("state:", jobState(j))
	if j.Paused {
		tb.row("paused:", dash(j.PausedReason))
	}
	tb.row("next:", localTime(j.NextDue, j.TZ))
	tb.row("last run:", lastRunText(j))
	tb.row("streak:", j.FailureStreak)
	if j.Run != nil {
		tb.row("run:", fmt.Sprintf("occurrence %s claimed by %s (pid %d), task %s", j.Run.Occurrence, j.Run.Host, j.Run.PID, dash(j.Run.TaskID)))
	}
	return tb.flush()
}

func cronEdit(e *env) error {
	args := e.c.Args().Slice()
	argv := commandArgs(args)
	if len(args)-len(argv) > 2 || (argv == nil && len(args) != 1) || len(args) == 0 || args[0] == "--" {
		return usagef("edit takes one job ID or name, then flags and -- CMD [ARGS…]")
	}
	var cwd string
	if e.c.IsSet("cwd") {
		var err error
		if cwd, err = runDir(e.c.String("cwd")); err != nil {
			return err
		}
	}
	cs, err := e.cron()
	if err != nil {
		return err
	}
	id, err := cs.Resolve(args[0])
	if err != nil {
		return err
	}
	j, err := cs.Update(id, func(j *cron.Job) error {
		for flag, dst := range map[string]*string{"schedule": &j.Schedule, "tz": &j.TZ, "catch-up": &j.CatchUp,
			"session": &j.Session, "name": &j.Name} {
			if e.c.IsSet(flag) {
				*dst = e.c.String(flag)
			}
		}
		if e.c.IsSet("prompt") {
			j.Prompt, j.Command = e.c.String("prompt"), []string{}
		}
		if argv != nil {
			j.Command, j.Prompt, j.Session = argv, "", cron.SessionNew
		}
		if e.c.IsSet("tools") {
			j.Tools = toolList(e.c.String("tools"))
		}
		if cwd != "" {
			j.Cwd = cwd
		}
		return nil
	})
	if err != nil {
		return err
	}
	return printJob(e, j)
}

// printJob prints a job a verb changed: its document with --json, else
// its line of list.
func printJob(e *env, j cron.Job) error {
	return printJobs(e, []cron.Job{j})
}

func cronPause(e *env) error {
	cs, id, err := jobArg(e)
	if err != nil {
		return err
	}
	reason := e.c.String("reason")
	if reason == "" {
		reason = "paused by hand"
	}
	j, err := cs.Update(id, func(j *cron.Job) error {
		j.Paused, j.PausedReason = true, reason
		return nil
	})
	if err != nil {
		return err
	}
	return printJob(e, j)
}

func cronResume(e *env) error {
	cs, id, err := jobArg(e)
	if err != nil {
		return err
	}
	j, err := cs.Update(id, func(j *cron.Job) error {
		j.Paused, j.FailureStreak = false, 0
		return nil
	})
	if err != nil {
		return err
	}
	return printJob(e, j)
}

func cronRemove(e *env) error {
	cs, id, err := jobArg(e)
	if err != nil {
		return err
	}
	if e.c.Bool("dry-run") {
		j, err := cs.Get(id)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "would remove job %s (%s)\n", j.ID, j.Name)
		return nil
	}
	j, err := cs.Remove(id)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "removed job %s (%s)\n", j.ID, j.Name)
	return nil
}

func cronRun(e *env) error {
	cs, id, err := jobArg(e)
	if err != nil {
		return err
	}
	var c cron.Claim
	var taskID string
	if e.c.IsSet("key") {
		c, taskID, err = claimNowOnce(cs, e.c.String("key"), id)
	} else {
		c, err = cs.ClaimNow(id)
	}
	if err != nil {
		return err
	}
	if taskID == "" {
		if taskID, err = startRun(e, cs, c); err != nil {
			return err
		}
	}
	if e.json {
		return printJSON(e.stdout, map[string]string{"job_id": id, "occurrence": string(c.Occurrence), "task_id": taskID})
	}
	fmt.Fprintln(e.stdout, taskID)
	return nil
}

// claimNowOnce is cron run's claim with --key: the claim to start, or,
// when the key claimed a run before, that run as a claim with the task
// it started, which is not started again. A run of the key without a task
// (its start not recorded: lost, or not yet) is refused.
func claimNowOnce(cs *cron.Store, key, id string) (cron.Claim, string, error) {
	c, run, claimed, err := cs.ClaimNowOnce(key, id)
	switch {
	case err != nil || claimed:
		return c, "", err
	case run.TaskID == "":
		return cron.Claim{}, "", fsstore.Refusedf("key %q claimed the run of job %s at %s, whose task was never started (%s); it is not run again", key, id, run.Occurrence, run.Status)
	}
	return cron.Claim{Occurrence: run.Occurrence, Manual: true}, run.TaskID, nil
}

func cronRuns(e *env) error {
	if e.c.NArg() > 1 {
		return usagef("runs takes at most one job ID or name")
	}
	if e.c.Int("limit") < 0 {
		return usagef("--limit must be 0 or more")
	}
	cs, err := e.cron()
	if err != nil {
		return err
	}
	id := ""
	if e.c.NArg() == 1 {
		if id, err = cs.ResolveRuns(e.c.Args().First()); err != nil {
			return err
		}
	}
	runs, err := cs.Runs(id, e.c.Int("limit"))
	if err != nil {
		return err
	}
	used, err := cronRunsUsage(e, runs)
	if err != nil {
		return err
	}
	if e.json {
		w := bufferedOut(e.stdout)
		for i, r := range runs {
			if err := withUsage(w, r, used[i], "session", "session_id"); err != nil {
				return err
			}
		}
		return w.Flush()
	}
	tb := newTable(e.stdout, "JOB", "OCCURRENCE", "STATUS", "EXIT", "TASK", "MISSED", "DURATION", "TOKENS", "COST")
	for i, r := range runs {
		exit := "-"
		if r.ExitCode != nil {
			exit = fmt.Sprint(*r.ExitCode)
		}
		occ := shortTime(r.Occurrence)
		if r.Manual {
			occ += " (run)"
		}
		dur := "-"
		if r.FinishedAt != "" && r.TaskID != "" {
			dur = (time.Duration(r.DurationMS) * time.Millisecond).String()
		}
		tokens, cost := "-", "-"
		if u := used[i]; u.Calls > 0 {
			tokens, cost = thousands(u.Total), costText(u)
		}
		tb.row(r.JobID, occ, r.Status, exit, dash(r.TaskID), r.Missed, dur, tokens, cost)
	}
	return tb.flush()
}

func cronNext(e *env) error {
	cs, id, err := jobArg(e)
	if err != nil {
		return err
	}
	n := e.c.Int("count")
	if n < 1 {
		return usagef("--count must be 1 or more")
	}
	j, err := cs.Get(id)
	if err != nil {
		return err
	}
	times, err := cron.NextOccurrences(j, n)
	if err != nil {
		return err
	}
	for _, t := range times {
		if e.json {
			printJSON(e.stdout, map[string]string{"job_id": j.ID, "occurrence": string(fsstore.TimeOf(t))})
			continue
		}
		fmt.Fprintln(e.stdout, localTime(fsstore.TimeOf(t), j.TZ))
	}
	return nil
}

func cronTick(e *env) error {
	if e.c.NArg() > 0 {
		return usagef("tick takes no arguments")
	}
	cs, err := e.cron()
	if err != nil {
		return err
	}
	return tick(e, cs)
}

// tick claims and starts every occurrence due. A job's failure is said
// and the others still run; the tick then fails (exit 1) with the last.
func tick(e *env, cs *cron.Store) error {
	ids, err := cs.Due(cs.Now())
	if err != nil {
		return err
	}
	if len(ids) > 0 {
		// A host whose clock is too far from the filesystem's claims
		// nothing, and says so once.
		if err := cs.CheckClock(); err != nil {
			return err
		}
	}
	var failed error
	for _, id := range ids {
		for {
			c, ok, err := cs.Claim(id)
			if err == nil && ok {
				_, err = startRun(e, cs, c)
			}
			if err != nil {
				failed = fmt.Errorf("job %s: %w", id, err)
				e.warn(failed.Error())
				break
			}
			if !ok {
				break
			}
		}
	}
	if err := cs.RefreshIndex(ids); err != nil {
		return err
	}
	return failed
}

// startRun starts the claimed occurrence c as a background task running
// hermes cron exec, in a session of its own or the job's (prompt jobs). The
// start is recorded (cron.Store.Start) before the session and the task are
// made, so a start refused leaves neither; a session or task that cannot be
// made is recorded as a failed run.
func startRun(e *env, cs *cron.Store, c cron.Claim) (string, error) {
	j := c.Job
	now := time.Now()
	sessionID := ""
	if j.Prompt != "" {
		sessionID = j.SessionID
		if j.Session == cron.SessionNew || sessionID == "" {
			sessionID = fsstore.NewID(now)
		}
	}
	taskID := fsstore.NewID(now)
	if _, err := cs.Start(j.ID, c.Occurrence, taskID, sessionID); err != nil {
		return "", err
	}
	err := func() error {
		if sessionID != "" {
			// Create returns a session that exists as it is: a continue
			// job's first session is made here even if the run that named
			// it failed before making it.
			if _, _, err := e.sessions().Create(sessions.Session{ID: sessionID, Title: "cron " + j.Name + " " + shortTime(c.Occurrence), Source: "cron", Cwd: j.Cwd}); err != nil {
				return err
			}
		}
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		argv := []string{exe, "--home", e.profile.Root, "--profile", e.profile.Name, "--lock-timeout", e.lockTimeout.String(),
			"cron", "exec", j.ID, string(c.Occurrence)}
		store := tasks.NewStore(e.profile.Dir(), e.lockTimeout, e.warn)
		_, err = spawnTask(e, store, tasks.Task{ID: taskID, Name: "cron " + j.Name, Command: argv, Cwd: j.Cwd, SessionID: sessionID}, os.Environ())
		return err
	}()
	if err != nil {
		if _, ferr := cs.Finish(j.ID, c.Occurrence, cron.Outcome{Status: cron.Failed, Error: errorText(err)}); ferr != nil {
			return "", errors.Join(err, ferr)
		}
		return "", err
	}
	return taskID, nil
}

func cronDaemon(e *env) error {
	if e.c.NArg() > 0 {
		return usagef("daemon takes no arguments")
	}
	every, err := durationFlag(e.c, "every", profiles.ParsePeriod)
	if err != nil {
		return err
	}
	cs, err := e.cron()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(e.stderr, "hermes: cron daemon: ticking every %s (pid %d)\n", every, os.Getpid())
	runTicker(ctx, every, func() error { return tick(e, cs) }, e.warn)
	return nil
}

// runTicker calls tick every period until ctx ends, never cutting one
// short; a failed tick is said, and the next one tries again.
func runTicker(ctx context.Context, every time.Duration, tick func() error, warn func(string)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := tick(); err != nil {
			warn("cron tick: " + errorText(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// cronExec is the command of a run's task: it runs the job's command, or
// its prompt through hermes chat, with its output in the task's log, and
// records how the run ended; it exits with the run's exit code. Signals
// reach the whole process group (the supervisor sends them there), so
// it outlives them long enough to record the end.
func cronExec(e *env) error {
	if e.c.NArg() != 2 {
		return usagef("exec takes a job ID and an occurrence")
	}
	id, occ := e.c.Args().Get(0), fsstore.Time(e.c.Args().Get(1))
	cs, err := e.cron()
	if err != nil {
		return err
	}
	j, err := cs.Get(id)
	if err != nil {
		return err
	}
	if j.Run == nil || j.Run.Occurrence != occ {
		return fsstore.Refusedf("job %s: occurrence %s is not the run in progress", id, occ)
	}
	argv := j.Command
	if j.Prompt != "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		argv = []string{exe, "--home", e.profile.Root, "--profile", e.profile.Name, "--lock-timeout", e.lockTimeout.String(),
			"chat", "--resume", j.Run.SessionID, "-q", j.Prompt, "--cwd", j.Cwd}
		if len(j.Tools) > 0 {
			argv = append(argv, "--tools", strings.Join(j.Tools, ","))
		}
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	start := time.Now()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = j.Cwd
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	runErr := cmd.Run()
	out := cron.Outcome{Status: cron.Succeeded, DurationMS: time.Since(start).Milliseconds()}
	code := 0
	var exitErr *exec.ExitError
	switch {
	case errors.As(runErr, &exitErr) && exitErr.ExitCode() >= 0:
		code = exitErr.ExitCode()
		out.Status = cron.Failed
		out.ExitCode = &code
	case errors.As(runErr, &exitErr):
		out.Status, out.Error = cron.Killed, exitErr.Error()
		code = 1
	case runErr != nil:
		out.Status, out.Error = cron.Failed, runErr.Error()
		code = 127
	default:
		out.ExitCode = &code
	}
	if _, err := cs.Finish(id, occ, out); err != nil {
		return err
	}
	if runErr != nil && out.ExitCode == nil {
		fmt.Fprintf(e.stderr, "hermes: %v\n", runErr)
	}
	if code != 0 {
		return silentExit{code}
	}
	return nil
}

// cronCmd is /cron in line mode: the jobs, as cron list prints them.
func (ch *chatter) cronCmd(string) (bool, error) {
	cs, err := ch.e.cron()
	if err != nil {
		return false, err
	}
	jobs, err := cs.List()
	if err != nil {
		return false, err
	}
	return false, printJobs(ch.e, jobs)
}

// startGatewayCron starts the gateway's ticker when gateway.cron is on,
// and returns what stops it.
func startGatewayCron(e *env, on bool) (stop func(), err error) {
	if !on {
		return func() {}, nil
	}
	cs, err := e.cron()
	if err != nil {
		return nil, err
	}
	return startTicker(time.Second, func() error { return tick(e, cs) }, e.warn), nil
}

// startTicker runs runTicker in the background. The stop it returns waits
// for the tick in flight: a process that exits mid-tick would leave an
// occurrence claimed and not started, which no ticker may run again and
// the next one records lost only after cron.ClaimLease.
func startTicker(every time.Duration, tick func() error, warn func(string)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		runTicker(ctx, every, tick, warn)
	}()
	return func() {
		cancel()
		<-done
	}
}
