package agent

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/tasks"
)

// A tool call that waits on a lock another holder keeps is called off with
// its turn (Ctrl-C, the gateway's client gone). process reconciles first,
// and a running task whose supervisor is gone is marked lost under the
// task's lock, which the test holds. The lock timeout is an hour, far
// beyond the test's deadline, so only the turn's cancellation can end the
// wait; the turn is cancelled as the call starts.
func TestToolLockWaitEndsWithTheTurn(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	id := newSession(t, st)
	taskStore := tasks.NewStore(t.TempDir(), time.Hour, func(msg string) { t.Log(msg) })
	task, err := taskStore.Create(tasks.Task{Name: "agent", Command: []string{"sh", "-c", "build"}, SessionID: id})
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := fsstore.Lock(filepath.Join(taskStore.Dir, task.ID+".lock"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := &scripted{t: t, replies: []sessions.Message{calls("process", `{"action":"status","task_id":"`+task.ID+`"}`), text("done")}}
	e := &Engine{Sessions: st, Provider: p, Tools: []Tool{processTool{}},
		Progress: func(pr Progress) {
			if !pr.Done {
				cancel()
			}
		}}
	env := &Env{Sessions: st, Tasks: taskStore, MaxOutput: DefaultMaxOutput}
	ended := make(chan error, 1)
	go func() {
		_, err := e.Run(ctx, Turn{SessionID: id, Input: user("how is the build?"), Env: env})
		ended <- err
	}()
	select {
	case err = <-ended:
	case <-time.After(time.Minute):
		t.Fatal("the turn still waits on the task's lock after it was cancelled")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("turn: %v, want it cancelled", err)
	}
	if got := resultOf(t, stored(t, st, id), "call_process_0"); got != cancelledResult {
		t.Fatalf("the call's result is %q, want %q", got, cancelledResult)
	}
	unlock()
	if got, err := taskStore.Get(task.ID); err != nil || got.Status != tasks.Running {
		t.Fatalf("task after the called-off wait: %+v, %v; want it running as it was", got, err)
	}
	if env.Tasks != taskStore || taskStore.Cancel != nil {
		t.Fatal("the turn's Env or its store was changed; a call must work on copies")
	}
}
