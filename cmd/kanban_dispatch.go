package cmd

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hermes/hermes/cmd/dispatch"
	"github.com/hermes/hermes/fsstore/kanban"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/tasks"
	"github.com/hermes/hermes/profiles"
)

// kanbanDispatch runs the dispatcher (cmd/dispatch) once, or every
// --interval until interrupted. A bad worker command is found before
// anything is claimed.
func kanbanDispatch(e *env) error {
	if e.c.NArg() > 0 {
		return usagef("dispatch takes no arguments")
	}
	if e.c.Bool("once") && e.c.IsSet("interval") {
		return usagef("give --once or --interval, not both")
	}
	d := &dispatch.Dispatcher{
		Profile:    e.profile.Name,
		MaxWorkers: e.c.Int("max-workers"),
		DryRun:     e.c.Bool("dry-run"),
		Out:        e.stdout,
		Warn:       e.warn,
	}
	if d.MaxWorkers < 1 {
		return usagef("--max-workers must be at least 1")
	}
	var err error
	if d.ClaimTTL, err = durationFlag(e.c, "claim-ttl", profiles.ParsePeriod); err != nil {
		return err
	}
	var interval time.Duration
	if e.c.String("interval") != "" {
		if interval, err = durationFlag(e.c, "interval", profiles.ParsePeriod); err != nil {
			return err
		}
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	d.ResumeOnRespawn = cfg.Kanban.ResumeOnRespawn
	if d.Worker, err = dispatch.WorkerFields(cfg.Kanban.WorkerCommand); err != nil {
		return err
	}
	if d.Board, err = e.board(); err != nil {
		return err
	}
	if err := retryPolicy(d.Board, cfg); err != nil {
		return err
	}
	if err := inProgressLimits(d, cfg, e.c.IsSet("max-workers")); err != nil {
		return err
	}
	if d.Tasks, err = e.tasks(); err != nil {
		return err
	}
	d.Session = func(profile, id string) (sessions.Session, error) {
		return sessions.NewStore(profiles.Dir(e.profile.Root, profile), profile, e.lockTimeout, e.warn).Get(id)
	}
	d.Spawn = func(id, name string, argv, env []string) error {
		return spawnWorker(e, d.Tasks, id, name, argv, env)
	}
	if interval == 0 {
		return d.Tick()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for {
		if err := d.Tick(); err != nil {
			e.warn(err.Error())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// retryPolicy sets the board's retry policy from config.yaml
// (kanban.failure_limit, kanban.retry_backoff, which may be 0s: retry at
// the next tick); a bad value is exit 2.
func retryPolicy(b *kanban.Board, cfg profiles.Config) error {
	if n := cfg.Kanban.FailureLimit; n < 0 {
		return usagef("kanban.failure_limit must be at least 1 (0 or unset: %d)", kanban.DefaultFailureLimit)
	} else if n > 0 {
		b.FailureLimit = n
	}
	backoff, err := durationSetting("kanban.retry_backoff", cfg.Kanban.RetryBackoff, kanban.DefaultRetryBackoff, profiles.ParseDuration)
	if err != nil {
		return err
	}
	b.RetryBackoff = backoff
	return nil
}

// inProgressLimits applies kanban.max_in_progress (the board's running
// tasks: --max-workers when it is not given, else the smaller of the two)
// and kanban.assignees.<profile>.max_in_progress. A bad value is exit 2.
func inProgressLimits(d *dispatch.Dispatcher, cfg profiles.Config, flagSet bool) error {
	if n := cfg.Kanban.MaxInProgress; n < 0 {
		return usagef("kanban.max_in_progress must be at least 1")
	} else if n > 0 && (!flagSet || n < d.MaxWorkers) {
		d.MaxWorkers = n
	}
	for who, a := range cfg.Kanban.Assignees {
		if err := profiles.CheckName(who); err != nil {
			return fmt.Errorf("kanban.assignees: %w", err)
		}
		if a.MaxInProgress < 0 {
			return usagef("kanban.assignees.%s.max_in_progress must be at least 1", who)
		}
		if a.MaxInProgress > 0 {
			if d.MaxInProgress == nil {
				d.MaxInProgress = map[string]int{}
			}
			d.MaxInProgress[who] = a.MaxInProgress
		}
	}
	return nil
}

// spawnWorker starts a kanban worker as background task id under the
// tasks supervisor, in this directory, with this home; a command named
// hermes is this binary.
func spawnWorker(e *env, taskStore *tasks.Store, id, name string, argv, env []string) error {
	if argv[0] == "hermes" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		argv[0] = exe
	}
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	env = append(append(os.Environ(), env...), "HERMES_HOME="+e.profile.Root)
	_, err = spawnTask(e, taskStore, tasks.Task{ID: id, Name: name, Command: argv, Cwd: cwd}, env)
	return err
}
