package kanban

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// kbOrchestrator returns a board whose task "o" runs, and its worker.
func kbOrchestrator(t *testing.T) (*Board, *storetest.Clock, *storetest.Warnings, Worker) {
	t.Helper()
	b, clock, warn := kbBoard(t)
	kbCreate(t, b, Task{ID: "o", Title: "orchestrate"})
	task, err := b.Claim("o", time.Minute, "p", nil)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	return b, clock, warn, Worker{Task: "o", Run: task.CurrentRunID, Claim: task.ClaimLock}
}

// failTempOf makes the atomic write of the file named name fail.
func failTempOf(t *testing.T, name string) {
	storetest.SetSeams(t, func(dir, pattern string) (*os.File, error) {
		if strings.HasPrefix(pattern, "."+name+".tmp-") {
			return nil, storetest.ErrInjected
		}
		return os.CreateTemp(dir, pattern)
	}, nil, nil)
}

// TestSubtaskCreateFaults fails each step of a subtask's create (see
// subtask.go). Before the commit point nothing is made, and the worker's
// block blocks; at or after it, the subtask is made, and the worker's
// block waits for it whether or not the link was written.
func TestSubtaskCreateFaults(t *testing.T) {
	t.Parallel()
	for _, step := range []struct {
		name   string
		inject func(t *testing.T)
		made   bool
	}{
		{"marker", func(t *testing.T) { failTempOf(t, "s") }, false},
		{"subtask's events", func(t *testing.T) {
			storetest.SetWrite(t, func(*os.File, []byte) (int, error) { return 0, storetest.ErrInjected })
		}, false},
		{"subtask's document", func(t *testing.T) { failTempOf(t, "s.json") }, false},
		{"link", func(t *testing.T) { failTempOf(t, "o.json") }, true},
	} {
		t.Run(step.name, func(t *testing.T) {
			b, _, warn, w := kbOrchestrator(t)
			step.inject(t)
			_, err := b.CreateSubtask(w, Task{ID: "s", Title: "part"})
			storetest.SetSeams(t, os.CreateTemp, nil, nil)
			storetest.SetWrite(t, func(f *os.File, p []byte) (int, error) { return f.Write(p) })
			if step.made {
				if err != nil || len(warn.List()) != 1 {
					t.Fatalf("create after its commit point: %v, warnings %q", err, warn.List())
				}
				if o, _ := b.Get("o"); len(o.Parents) != 0 {
					t.Fatalf("the link's failure left parents %v", o.Parents)
				}
			} else {
				if !errors.Is(err, storetest.ErrInjected) {
					t.Fatalf("create: %v, want the injected fault", err)
				}
				for _, path := range []string{b.docPath("s"), filepath.Join(b.subtasksDir("o"), "s"), filepath.Join(b.openDir(), "s")} {
					if kbExists(path) {
						t.Errorf("a failed create left %s", path)
					}
				}
			}
			got, _, err := b.Block("o", &w, "waiting for the part")
			if err != nil {
				t.Fatal(err)
			}
			if !step.made {
				if got.Status != Blocked || len(got.Parents) != 0 {
					t.Fatalf("block with no subtask made: %s, parents %v", got.Status, got.Parents)
				}
				return
			}
			if got.Status != Todo || len(got.Parents) != 1 || got.Parents[0] != "s" {
				t.Fatalf("block with the subtask made: %s, parents %v, want todo waiting for s", got.Status, got.Parents)
			}
			if _, h := kbView(t, b, "o"); h.Parent != "s" {
				t.Fatalf("hold %+v", h)
			}
			kbDone(t, b, "s")
			if v, _ := kbView(t, b, "o"); v.Status != Ready {
				t.Fatalf("after the subtask: %s", v.Status)
			}
		})
	}
}

// TestSubtaskCheck: fsck reports what a crash inside a subtask's create
// leaves: a marker whose subtask was never made (repair removes it), and
// a task not running that does not wait for its subtask, its worker gone
// before it blocked (repair links it, and the task waits).
func TestSubtaskCheck(t *testing.T) {
	t.Parallel()
	b, _, _, w := kbOrchestrator(t)
	failTempOf(t, "o.json")
	if _, err := b.CreateSubtask(w, Task{ID: "s", Title: "part"}); err != nil {
		t.Fatal(err)
	}
	storetest.SetSeams(t, os.CreateTemp, nil, nil)
	if err := os.WriteFile(filepath.Join(b.subtasksDir("o"), "never"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// While its worker runs, the task is not reported: its block links.
	if fs, err := b.checkSubtasks(false); err != nil || len(fs) != 1 || !strings.Contains(fs[0].What, "did not finish") {
		t.Fatalf("check while o runs: %v %+v", err, fs)
	}
	if err := b.FailRun("o", w.Run, OutcomeCrashed, "killed", nil, ""); err != nil {
		t.Fatal(err)
	}
	if o, _ := b.Get("o"); o.Status != Ready {
		t.Fatalf("after the crash o is %s", o.Status)
	}
	fs, err := b.Check(false, filepath.Join(t.TempDir(), "lost"))
	if err != nil {
		t.Fatal(err)
	}
	var what []string
	for _, f := range fs {
		what = append(what, f.What)
	}
	if len(fs) != 2 || !strings.Contains(strings.Join(what, "\n"), "kanban task o does not wait for its subtask s") {
		t.Fatalf("check: %q", what)
	}
	fs, err = b.Check(true, filepath.Join(t.TempDir(), "lost"))
	if err != nil || len(fs) != 2 || !fs[0].Repaired || !fs[1].Repaired {
		t.Fatalf("repair: %v %+v", err, fs)
	}
	if v, h := kbView(t, b, "o"); v.Status != Todo || h.Parent != "s" {
		t.Fatalf("after repair o is %s, held by %+v", v.Status, h)
	}
	if fs, err := b.Check(false, filepath.Join(t.TempDir(), "lost")); err != nil || len(fs) != 0 {
		t.Fatalf("check after repair: %v %+v", err, fs)
	}
}

// TestSubtaskUnlinked: a subtask a person unlinks is not waited for again
// by the worker's next block.
func TestSubtaskUnlinked(t *testing.T) {
	b, _, _, w := kbOrchestrator(t)
	if _, err := b.CreateSubtask(w, Task{ID: "s", Title: "part"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateSubtask(Worker{Task: "o", Run: "stale", Claim: "x"}, Task{ID: "s2", Title: "x"}); !errors.Is(err, fsstore.ErrRefused) {
		t.Fatalf("a stale worker's subtask: %v", err)
	}
	if kbExists(b.docPath("s2")) {
		t.Fatal("a stale worker's subtask was made")
	}
	if _, err := b.Unlink("o", "s"); err != nil {
		t.Fatal(err)
	}
	if got, _, err := b.Block("o", &w, "waiting"); err != nil || got.Status != Blocked {
		t.Fatalf("block after the unlink: %v %s %v", err, got.Status, got.Parents)
	}
}
