package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/hermes/hermes/cmd/supervisor"
	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/tasks"
)

// processTool looks after the session's own background tasks.
type processTool struct{}

func (processTool) Name() string { return "process" }

func (processTool) Schema() json.RawMessage {
	return schema("process",
		"Look after a background task this session started (terminal with background): status, the end of its log, "+
			"wait until it finishes (up to timeout seconds), or kill it with its process group.",
		map[string]any{
			"action":  map[string]any{"type": "string", "enum": []string{"status", "log", "wait", "kill"}, "description": "what to do"},
			"task_id": prop("string", "the task id terminal returned"),
			"timeout": prop("number", "wait: seconds to wait at most (default 120)"),
		}, "action", "task_id")
}

func (processTool) NeedsApproval(raw json.RawMessage) bool {
	var args struct {
		Action string `json:"action"`
	}
	// Arguments that do not decode fail in Run without running anything.
	json.Unmarshal(raw, &args)
	return args.Action == "kill"
}

// killGrace is how long a killed task has between SIGTERM and SIGKILL.
const killGrace = 10 * time.Second

func (processTool) Run(ctx context.Context, env *Env, raw json.RawMessage) (string, error) {
	var args struct {
		Action  string   `json:"action"`
		TaskID  string   `json:"task_id"`
		Timeout *float64 `json:"timeout"`
	}
	if err := decodeArgs("process", raw, &args); err != nil {
		return "", err
	}
	switch args.Action {
	case "status", "log", "wait", "kill":
	default:
		return "", fmt.Errorf("process: action %q is not status, log, wait or kill", args.Action)
	}
	if env.Tasks == nil {
		return "", errors.New("process: background tasks are not available here")
	}
	t, err := ownTask(env, args.TaskID)
	if err != nil {
		return "", err
	}
	switch args.Action {
	case "status":
		return taskStatus(t), nil
	case "log":
		return taskLog(env, t.ID)
	case "kill":
		t, err := supervisor.Kill(env.Tasks, t.ID, syscall.SIGTERM, killGrace)
		if err != nil {
			return "", fmt.Errorf("process: %w", err)
		}
		return taskStatus(t), nil
	}
	timeout := env.TerminalTimeout
	if args.Timeout != nil && *args.Timeout > 0 {
		timeout = time.Duration(min(*args.Timeout, 1e6) * float64(time.Second))
	}
	deadline := time.Now().Add(timeout)
	for !t.Finished() && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("process: %w", context.Cause(ctx))
		case <-time.After(100 * time.Millisecond):
		}
		if _, err := supervisor.Reconcile(env.Tasks); err != nil {
			return "", fmt.Errorf("process: %w", err)
		}
		if t, err = env.Tasks.Get(t.ID); err != nil {
			return "", fmt.Errorf("process: %w", err)
		}
	}
	log, err := taskLog(env, t.ID)
	if err != nil {
		return "", err
	}
	status := taskStatus(t)
	if !t.Finished() {
		status = fmt.Sprintf("still running after %v\n%s", timeout, status)
	}
	return status + "\nlog:\n" + log, nil
}

// ownTask reads task id after reconciling, so that a task whose supervisor
// died shows as lost, and refuses one of another session.
func ownTask(env *Env, id string) (tasks.Task, error) {
	if err := fsstore.CheckID("task id", id); err != nil {
		return tasks.Task{}, fmt.Errorf("process: %w", err)
	}
	if _, err := supervisor.Reconcile(env.Tasks); err != nil {
		return tasks.Task{}, fmt.Errorf("process: %w", err)
	}
	t, err := env.Tasks.Get(id)
	if err != nil {
		return t, fmt.Errorf("process: %w", err)
	}
	if t.SessionID != env.SessionID {
		return t, fmt.Errorf("process: task %s does not belong to this session", id)
	}
	return t, nil
}

func taskStatus(t tasks.Task) string {
	var b strings.Builder
	fmt.Fprintf(&b, "task %s: %s", t.ID, t.Status)
	switch {
	case t.ExitCode != nil:
		fmt.Fprintf(&b, ", exit code %d", *t.ExitCode)
	case t.Signal != "":
		fmt.Fprintf(&b, ", killed by %s", t.Signal)
	}
	if t.Error != "" {
		fmt.Fprintf(&b, " (%s)", t.Error)
	}
	fmt.Fprintf(&b, "\ncommand: %s\nstarted: %s", strings.Join(t.Command, " "), t.StartedAt)
	if t.FinishedAt != "" {
		fmt.Fprintf(&b, "\nfinished: %s", t.FinishedAt)
	}
	return b.String()
}

// taskLog is the end of a task's log, reading no more of a large log than
// the result can hold.
func taskLog(env *Env, id string) (string, error) {
	f, err := os.Open(env.Tasks.LogPath(id))
	if errors.Is(err, os.ErrNotExist) {
		return "(no output yet)", nil
	}
	if err != nil {
		return "", fmt.Errorf("process: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("process: %w", err)
	}
	limit := max(env.MaxOutput, 256)
	size := fi.Size()
	head, tail := make([]byte, min(size, int64(limit))), make([]byte, min(size, int64(limit)))
	if _, err := io.ReadFull(f, head); err != nil {
		return "", fmt.Errorf("process: %w", err)
	}
	if _, err := f.ReadAt(tail, size-int64(len(tail))); err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("process: %w", err)
	}
	if size <= int64(limit) {
		return strings.ToValidUTF8(string(head), "\uFFFD"), nil
	}
	return headAndTail(string(head), string(tail), size, limit), nil
}
