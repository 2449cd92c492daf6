package cmd

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/kanban"
)

// The kanban tools' lock waits end with the call's context: each verb of a
// worker, with the task's lock and its comments' lock held elsewhere and a
// lock timeout of an hour, returns at once when its context is cancelled,
// and nothing reaches the board.
func TestKanbanWorkerLockWaitEndsWithItsContext(t *testing.T) {
	board := kanban.NewBoard(t.TempDir(), time.Hour, func(msg string) { t.Log(msg) })
	task, err := board.Create(kanban.Task{ID: "t1", Title: "build", Status: kanban.Todo})
	if err != nil {
		t.Fatal(err)
	}
	var held []func()
	unlock := func() {
		for _, u := range held {
			u()
		}
		held = nil
	}
	defer unlock()
	for _, name := range []string{task.ID + ".lock", task.ID + ".comments.jsonl.lock"} {
		u, err := fsstore.Lock(filepath.Join(board.Dir, "tasks", name), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, u)
	}
	k := &kanbanWorker{board: board, w: kanban.Worker{Task: task.ID, Run: "r1", Claim: "c1"}, author: "default"}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, verb := range map[string]func() error{
		"complete":  func() error { return k.Complete(ctx, "shipped") },
		"block":     func() error { _, err := k.Block(ctx, "no data"); return err },
		"comment":   func() error { return k.Comment(ctx, "half way") },
		"heartbeat": func() error { return k.Heartbeat(ctx) },
	} {
		ended := make(chan error, 1)
		go func() { ended <- verb() }()
		select {
		case err := <-ended:
			var interrupted *fsstore.LockInterruptedError
			if !errors.As(err, &interrupted) || !errors.Is(err, context.Canceled) {
				t.Fatalf("%s: %v, want the lock wait interrupted", name, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s still waits on the task's lock after its context was cancelled", name)
		}
	}
	unlock()
	if got, err := board.Get(task.ID); err != nil || got.Status != kanban.Todo {
		t.Fatalf("task after the called-off waits: %+v, %v; want it as it was", got, err)
	}
	if comments, err := board.Comments(task.ID); err != nil || len(comments) != 0 {
		t.Fatalf("comments after the called-off wait: %v, %v; want none", comments, err)
	}
	if board.Cancel != nil {
		t.Fatal("the worker's board was changed; a call must work on a copy")
	}
}
