package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/hermes/hermes/cmd/supervisor"
)

// terminalTool runs a shell command in the session's working directory.
type terminalTool struct{}

func (terminalTool) Name() string { return "terminal" }

func (terminalTool) Schema() json.RawMessage {
	return schema("terminal",
		"Run a shell command (sh -c) in the session's working directory and get its exit code, stdout and stderr. "+
			"Long output keeps its head and tail. Set background to start a long command as a background task and get its id at once; follow it with the process tool.",
		map[string]any{
			"command":    prop("string", "the command line, run with sh -c"),
			"timeout":    prop("number", "seconds before the command and everything it started are killed (default 120)"),
			"background": prop("boolean", "start the command as a background task and return its task id at once"),
		}, "command")
}

func (terminalTool) NeedsApproval(json.RawMessage) bool { return true }

// waitAfterKill bounds the wait for a command's output pipes once its
// process group is dead: a process that left the group (setsid) and kept
// them open must not hold the call.
const waitAfterKill = 2 * time.Second

func (terminalTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (string, error) {
	var args struct {
		Command    string   `json:"command"`
		Timeout    *float64 `json:"timeout"`
		Background bool     `json:"background"`
	}
	if err := decodeArgs("terminal", raw, &args); err != nil {
		return "", err
	}
	if strings.TrimSpace(args.Command) == "" {
		return "", errors.New("terminal: command is required")
	}
	if args.Background {
		if env.StartTask == nil {
			return "", errors.New("terminal: background tasks are not available here")
		}
		t, err := env.StartTask(ctx, "agent", []string{"sh", "-c", args.Command}, env.Cwd, env.SessionID)
		if err != nil {
			return "", fmt.Errorf("terminal: starting the background task: %w", err)
		}
		return fmt.Sprintf("started background task %s (pid %d)\nfollow it with the process tool: action status, log or wait, task_id %s", t.ID, t.PID, t.ID), nil
	}
	timeout := env.TerminalTimeout
	if args.Timeout != nil {
		if *args.Timeout <= 0 || math.IsInf(*args.Timeout, 0) || math.IsNaN(*args.Timeout) {
			return "", errors.New("terminal: timeout must be a positive number of seconds")
		}
		timeout = time.Duration(min(*args.Timeout, 1e6) * float64(time.Second))
	}
	if timeout <= 0 {
		timeout = DefaultTerminalTimeout
	}
	snap, note, err := env.snapshotShell(ctx)
	if err != nil {
		return "", fmt.Errorf("terminal: %w", err)
	}
	out, err := runCommand(ctx, env, args.Command, timeout)
	if snap != nil {
		// What the command changed is recorded even when it failed or was
		// cancelled: it may have changed files first.
		note = env.settleShell(context.WithoutCancel(ctx), snap)
	}
	if err != nil {
		return "", err
	}
	return out + note, nil
}

// runCommand runs command with sh -c in env.Cwd, in a process group of
// its own that is killed after timeout or when ctx ends, and returns its
// status and output.
func runCommand(ctx context.Context, env *Env, command string, timeout time.Duration) (string, error) {
	limit := max(env.MaxOutput, 256)
	stdout, stderr := &headTail{limit: limit}, &headTail{limit: limit}
	cmd := exec.Command("sh", "-c", command)
	cmd.Dir = env.Cwd
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Its own process group, so that a timeout or a cancel kills what the
	// command started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = waitAfterKill
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("terminal: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var waitErr error
	timedOut := false
	select {
	case waitErr = <-done:
		// The command is done; what it left running in its group goes too.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	case <-timer.C:
		timedOut = true
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		waitErr = <-done
	case <-ctx.Done():
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return "", fmt.Errorf("terminal: %w", context.Cause(ctx))
	}
	var status string
	var exitErr *exec.ExitError
	switch {
	case timedOut:
		status = fmt.Sprintf("timed out after %v: the command and its process group were killed", timeout)
	case waitErr == nil || errors.Is(waitErr, exec.ErrWaitDelay):
		status = "exit code: 0"
	case errors.As(waitErr, &exitErr):
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			status = fmt.Sprintf("killed by signal %d (%s)", int(ws.Signal()), supervisor.SignalName(ws.Signal()))
		} else {
			status = fmt.Sprintf("exit code: %d", exitErr.ExitCode())
		}
	default:
		return "", fmt.Errorf("terminal: %w", waitErr)
	}
	return status + streams(stdout, stderr, limit-len(status)-len("\nstdout:\n\nstderr:\n")), nil
}

// streams renders stdout and stderr within budget bytes: a stream that
// fits in half keeps all of itself, and the other gets the rest.
func streams(stdout, stderr *headTail, budget int) string {
	budget = max(budget, 64)
	outBudget, errBudget := budget/2, budget-budget/2
	switch {
	case stdout.total <= int64(outBudget):
		errBudget = budget - int(stdout.total)
	case stderr.total <= int64(errBudget):
		outBudget = budget - int(stderr.total)
	}
	var b strings.Builder
	if stdout.total > 0 {
		b.WriteString("\nstdout:\n" + stdout.text(outBudget))
	}
	if stderr.total > 0 {
		b.WriteString("\nstderr:\n" + stderr.text(errBudget))
	}
	return b.String()
}
