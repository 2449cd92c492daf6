package tasks

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// A Finish whose record cannot be rewritten (a full disk) leaves the
// finished log as it was and the task running: nothing says it finished.
func TestTaskFinishFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestTaskStore(t)
	mustCreateTask(t, s, "t0", "before")
	mustFinishTask(t, s, "t0", Succeeded, intp(0))
	mustCreateTask(t, s, "t1", "job")
	log := storetest.MustRead(t, s.finishedPath())
	storetest.SetSeams(t, func(string, string) (*os.File, error) { return nil, storetest.ErrInjected }, nil, nil)
	if _, _, err := s.Finish("t1", func(t *Task) { t.Status = Failed }); !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("finish: %v, want the injected fault", err)
	}
	if got := storetest.MustRead(t, s.finishedPath()); !bytes.Equal(got, log) {
		t.Fatalf("a failed finish left the finished log\n%s\nwant\n%s", got, log)
	}
	if task, err := s.Get("t1"); err != nil || task.Finished() {
		t.Fatalf("after a failed finish: %+v, %v", task, err)
	}
	if ids, _ := s.Running(); len(ids) != 1 || ids[0] != "t1" {
		t.Fatalf("running markers %v", ids)
	}
}

// Discard removes a task whose command never started, record first, and
// refuses one that started or finished.
func TestTaskDiscard(t *testing.T) {
	s, _, _ := newTestTaskStore(t)
	mustCreateTask(t, s, "never", "job")
	if err := s.Discard("never"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{s.docPath("never"), s.LogPath("never"), s.runningMarker("never"), s.lockPath("never")} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("discard left %s", p)
		}
	}
	if _, err := s.Get("never"); !errors.Is(err, fsstore.ErrNotFound) {
		t.Fatalf("get after discard: %v", err)
	}
	mustCreateTask(t, s, "started", "job")
	if _, err := s.Update("started", func(t *Task) { t.PID = 4242 }); err != nil {
		t.Fatal(err)
	}
	mustCreateTask(t, s, "done", "job")
	mustFinishTask(t, s, "done", Failed, intp(127))
	for _, id := range []string{"started", "done"} {
		if err := s.Discard(id); !errors.Is(err, fsstore.ErrRefused) {
			t.Errorf("discard %s: %v, want ErrRefused", id, err)
		}
		if _, err := s.Get(id); err != nil {
			t.Errorf("%s after a refused discard: %v", id, err)
		}
	}
	if err := s.Discard("missing"); !errors.Is(err, fsstore.ErrNotFound) {
		t.Errorf("discard of a task never made: %v", err)
	}
}
