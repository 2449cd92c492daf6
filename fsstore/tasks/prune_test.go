package tasks

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// mustWriteOldTask writes a finished task as profiles made before finished
// records moved into the finished log hold it: <id>.json, its log, and an
// entry naming it.
func mustWriteOldTask(t testing.TB, s *Store, id string, at time.Time) {
	t.Helper()
	code := 0
	task := Task{ID: id, Command: []string{}, StartedAt: fsstore.TimeOf(at), FinishedAt: fsstore.TimeOf(at), Status: Succeeded, ExitCode: &code}
	if err := s.ensureDirs(); err != nil {
		t.Fatal(err)
	}
	if err := fsstore.WriteDoc(s.docPath(id), &task); err != nil {
		t.Fatal(err)
	}
	storetest.MustWrite(t, s.LogPath(id), []byte("old output\n"))
	if err := s.appendFinished(oldEntry(id, Succeeded, at), at, noCommit); err != nil {
		t.Fatal(err)
	}
}

// taskState is "whole" when the task's record and log are both there,
// "gone" when neither is (nor its record file or its line), and fails the
// test otherwise.
func taskState(t testing.TB, s *Store, id string) string {
	t.Helper()
	_, err := s.Get(id)
	_, errLog := os.Lstat(s.LogPath(id))
	switch {
	case err == nil && errLog == nil:
		return "whole"
	case errors.Is(err, fsstore.ErrNotFound) && errors.Is(errLog, os.ErrNotExist):
		return "gone"
	}
	t.Fatalf("task %s is neither whole nor gone: record %v, log %v", id, err, errLog)
	return ""
}

// A prune that fails at any sync (the disk gone, a crash) leaves every task
// it does not remove whole. Once its journal is written the removal is
// decided: fsck reports it, and the next prune completes it. Before that,
// nothing changed.
func TestTaskPruneFailureAtEverySync(t *testing.T) {
	t.Parallel()
	for n := 1; ; n++ {
		s, clock, w := newTestTaskStore(t)
		mustWriteOldTask(t, s, "old", clock.Now())
		mustCreateTask(t, s, "done", "")
		mustCreateTask(t, s, "r", "")
		mustCreateTask(t, s, "recent", "")
		clock.Advance(time.Hour)
		mustFinishTask(t, s, "done", Succeeded, intp(0))
		cutoff := clock.Advance(time.Hour)
		mustFinishTask(t, s, "recent", Succeeded, intp(0))

		syncs := 0
		storetest.SetSeams(t, nil, nil, func(f *os.File) error {
			if syncs++; syncs == n {
				return storetest.ErrInjected
			}
			return f.Sync()
		})
		_, err := s.Prune(PruneOptions{Before: cutoff})
		storetest.SetSeams(t, nil, nil, func(f *os.File) error { return f.Sync() })
		if err == nil {
			if n == 1 {
				t.Fatal("a prune made no sync")
			}
			break
		}
		if !errors.Is(err, storetest.ErrInjected) {
			t.Fatalf("sync %d: %v", n, err)
		}
		_, journalErr := os.Lstat(s.journalPath())
		committed := journalErr == nil
		// A task the journal names may be half removed: the journal says
		// so, and the next prune completes it. Any other is whole.
		for _, id := range []string{"old", "done", "r", "recent"} {
			if !committed || id == "r" || id == "recent" {
				taskState(t, s, id)
			}
		}
		findings, err := s.Check(false, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range findings {
			if f.Problem && !(committed && strings.Contains(f.What, "interrupted prune of 2 tasks")) {
				t.Errorf("sync %d: fsck: %s: %s", n, f.Path, f.What)
			}
		}
		if !committed && (taskState(t, s, "old") != "whole" || taskState(t, s, "done") != "whole") {
			t.Fatalf("sync %d: a prune that failed before its commit point removed a task", n)
		}
		// The next prune completes what was decided, then finds nothing
		// more; or, not committed, does it all.
		w.Reset()
		got, err := s.Prune(PruneOptions{Before: cutoff})
		if err != nil {
			t.Fatalf("sync %d: prune after the failure: %v", n, err)
		}
		if want := map[bool]int{true: 0, false: 2}[committed]; len(got) != want {
			t.Fatalf("sync %d: second prune removed %d tasks, want %d", n, len(got), want)
		}
		if committed != slices.ContainsFunc(w.List(), func(m string) bool { return strings.Contains(m, "completing an interrupted prune of 2 tasks") }) {
			t.Fatalf("sync %d: journal %v, warnings %v", n, committed, w.List())
		}
		for id, want := range map[string]string{"old": "gone", "done": "gone", "r": "whole", "recent": "whole"} {
			if got := taskState(t, s, id); got != want {
				t.Fatalf("sync %d: task %s is %s, want %s", n, id, got, want)
			}
		}
		for _, p := range []string{s.docPath("old"), s.docPath("done"), s.lockPath("old"), s.lockPath("done"), s.journalPath()} {
			if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("sync %d: %s left: %v", n, p, err)
			}
		}
		if got := finishedLines(t, s); !slices.Equal(got, []string{"recent"}) {
			t.Fatalf("sync %d: finished log %v", n, got)
		}
		if findings, err := s.Check(false, ""); err != nil || len(findings) != 0 {
			t.Fatalf("sync %d: fsck after: %v %v", n, findings, err)
		}
	}
}

// fsck --repair completes an interrupted prune too.
func TestTaskCheckCompletesInterruptedPrune(t *testing.T) {
	s, clock, _ := newTestTaskStore(t)
	mustCreateTask(t, s, "a", "")
	mustCreateTask(t, s, "b", "")
	mustFinishTask(t, s, "a", Succeeded, intp(0))
	mustFinishTask(t, s, "b", Succeeded, intp(0))
	// The crash: the journal names a, nothing else is done.
	storetest.MustWrite(t, s.journalPath(), []byte("a\n"))
	clock.Advance(time.Hour)
	findings, err := s.Check(true, t.TempDir())
	if err != nil || len(findings) != 1 || !findings[0].Repaired || !strings.Contains(findings[0].What, "interrupted prune of 1 tasks; completed") {
		t.Fatalf("fsck --repair: %+v %v", findings, err)
	}
	if taskState(t, s, "a") != "gone" || taskState(t, s, "b") != "whole" {
		t.Fatal("the interrupted prune was not completed as its journal says")
	}
}

// Tasks finishing while prunes run: every task is whole or gone at every
// moment it is looked at, a task is gone only if a prune said it removed
// it, and the finished log keeps every line appended during a prune.
func TestTaskFinishDuringPrune(t *testing.T) {
	s, _, w := newTestTaskStore(t)
	s.Now = time.Now
	const n = 40
	var ids []string
	for i := range n {
		id := fmt.Sprintf("t%02d", i)
		mustCreateTask(t, s, id, "")
		ids = append(ids, id)
	}
	removed := map[string]bool{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for _, id := range ids {
			if _, _, err := s.Finish(id, func(t *Task) { t.Status = Succeeded }); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	prune := func() {
		got, err := s.Prune(PruneOptions{Before: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range got {
			if removed[r.TaskID] {
				t.Fatalf("task %s removed twice", r.TaskID)
			}
			removed[r.TaskID] = true
		}
		for _, id := range ids {
			if st := taskState(t, s, id); (st == "gone") != removed[id] {
				t.Fatalf("task %s is %s; removed by a prune: %v", id, st, removed[id])
			}
		}
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		prune()
	}
	wg.Wait()
	prune()
	if len(removed) != n {
		t.Fatalf("%d of %d finished tasks removed", len(removed), n)
	}
	if findings, err := s.Check(false, ""); err != nil || len(findings) != 0 {
		t.Fatalf("fsck: %v %v", findings, err)
	}
	if len(w.List()) != 0 {
		t.Fatalf("warnings: %v", w.List())
	}
}

// lineTaskID reads the id of both kinds of line as the store writes them,
// and declines what it does not recognize.
func TestLineTaskID(t *testing.T) {
	for line, want := range map[string]string{
		`{"id":"20260101_000000_aaaaaa","name":"x","status":"succeeded"}`: "20260101_000000_aaaaaa",
		`{"task_id":"20250101_000000_bbbbbb","name":"x"}`:                 "20250101_000000_bbbbbb",
	} {
		if id, ok := lineTaskID([]byte(line)); !ok || string(id) != want {
			t.Errorf("lineTaskID(%s) = %q, %v; want %q", line, id, ok, want)
		}
	}
	for _, line := range []string{`{"name":"x","id":"a"}`, `{"id":"a\"b"}`, `{"id":""}`, `{"id":"unterminated`} {
		if id, ok := lineTaskID([]byte(line)); ok {
			t.Errorf("lineTaskID(%s) = %q, want none", line, id)
		}
	}
}
