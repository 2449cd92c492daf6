package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// newTestTaskStore returns a task store in a fresh profile directory, with
// a settable clock and its warnings collected.
func newTestTaskStore(t testing.TB) (*Store, *storetest.Clock, *storetest.Warnings) {
	t.Helper()
	w := &storetest.Warnings{}
	clock := storetest.NewClock()
	s := NewStore(filepath.Join(t.TempDir(), "profiles", "default"), 10*time.Second, w.Add)
	s.Now, s.Seen.Clock = clock.Now, clock.Uptime
	return s, clock, w
}

func mustCreateTask(t testing.TB, s *Store, id, name string) Task {
	t.Helper()
	task, err := s.Create(Task{ID: id, Name: name, Command: []string{"sh", "-c", "true"}, Cwd: "/"})
	if err != nil {
		t.Fatalf("create %s: %v", id, err)
	}
	return task
}

// mustFinishTask ends task id with status and exit code (nil: none).
func mustFinishTask(t testing.TB, s *Store, id, status string, code *int) Task {
	t.Helper()
	task, finished, err := s.Finish(id, func(t *Task) { t.Status, t.ExitCode = status, code })
	if err != nil || !finished {
		t.Fatalf("finish %s: finished=%v err=%v", id, finished, err)
	}
	return task
}

func intp(n int) *int { return &n }

func taskIDs(list []Task) string {
	var ids []string
	for _, t := range list {
		ids = append(ids, t.ID)
	}
	return strings.Join(ids, " ")
}

// finishedLines returns the task ids of the lines of the finished log.
func finishedLines(t testing.TB, s *Store) []string {
	t.Helper()
	b, err := os.ReadFile(s.finishedPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		e, ok := parseFinished(line)
		if !ok {
			t.Fatalf("finished log line %q does not parse", line)
		}
		ids = append(ids, e.TaskID)
	}
	return ids
}

// oldEntry is a line of the finished log as profiles written before
// finished records moved into it hold them: an entry naming <id>.json.
func oldEntry(id, status string, at time.Time) []byte {
	line, _ := json.Marshal(struct {
		TaskID     string       `json:"task_id"`
		Status     string       `json:"status"`
		FinishedAt fsstore.Time `json:"finished_at"`
	}{id, status, fsstore.TimeOf(at)})
	return line
}

func markers(t testing.TB, s *Store) []string {
	t.Helper()
	ids, err := s.Running()
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestTaskCreateFinishRecord(t *testing.T) {
	s, clock, _ := newTestTaskStore(t)
	task := mustCreateTask(t, s, "t1", "build")
	if task.Status != Running || task.StartedAt != fsstore.TimeOf(storetest.Epoch) || task.FinishedAt != "" || task.ExitCode != nil {
		t.Fatalf("new task: %+v", task)
	}
	if got := markers(t, s); !slices.Equal(got, []string{"t1"}) {
		t.Fatalf("markers %v, want [t1]", got)
	}
	if fi, err := os.Stat(s.LogPath("t1")); err != nil || fi.Size() != 0 {
		t.Fatalf("log after create: %v %v", fi, err)
	}
	// A second create of the same id changes nothing.
	if _, err := s.Create(Task{ID: "t1", Name: "other"}); !errors.Is(err, fsstore.ErrRefused) {
		t.Fatalf("create of an existing id: %v, want refused", err)
	}
	if got, _ := s.Get("t1"); got.Name != "build" {
		t.Fatalf("record changed by a second create: %+v", got)
	}

	// The output: more than PreviewBytes, so the preview is its end, from
	// a line boundary.
	var out strings.Builder
	for i := 0; out.Len() <= PreviewBytes+100; i++ {
		out.WriteString(strings.Repeat("x", 40) + "\n")
	}
	out.WriteString("the last line\n")
	storetest.MustWrite(t, s.LogPath("t1"), []byte(out.String()))

	clock.Advance(1500 * time.Millisecond)
	done := mustFinishTask(t, s, "t1", Failed, intp(3))
	if done.Status != Failed || done.ExitCode == nil || *done.ExitCode != 3 {
		t.Fatalf("finished: %+v", done)
	}
	if done.FinishedAt != fsstore.TimeOf(storetest.Epoch.Add(1500*time.Millisecond)) || done.DurationMS != 1500 {
		t.Fatalf("finished_at %s duration %d", done.FinishedAt, done.DurationMS)
	}
	if done.LogBytes != int64(out.Len()) {
		t.Fatalf("log_bytes %d, want %d", done.LogBytes, out.Len())
	}
	if len(done.OutputPreview) > PreviewBytes || !strings.HasSuffix(done.OutputPreview, "the last line\n") || !strings.HasPrefix(done.OutputPreview, "xxxx") || !strings.HasSuffix(out.String(), done.OutputPreview) {
		t.Fatalf("preview (%d bytes) %q...", len(done.OutputPreview), done.OutputPreview[:20])
	}
	if got, err := s.Get("t1"); err != nil || got.FinishedAt != done.FinishedAt || got.Status != Failed {
		t.Fatalf("record on disk: %+v %v", got, err)
	}
	if got := markers(t, s); len(got) != 0 {
		t.Fatalf("markers after finish: %v", got)
	}
	if got := finishedLines(t, s); !slices.Equal(got, []string{"t1"}) {
		t.Fatalf("finished log %v", got)
	}

	// The finished log's line is the record now; the record file is gone.
	if _, err := os.Lstat(s.docPath("t1")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("record file of a finished task: %v", err)
	}
	// Finishing again changes nothing and writes no second line.
	before := storetest.MustRead(t, s.finishedPath())
	clock.Advance(time.Minute)
	again, finished, err := s.Finish("t1", func(t *Task) { t.Status = Killed })
	if err != nil || finished || again.Status != Failed {
		t.Fatalf("second finish: %+v finished=%v err=%v", again, finished, err)
	}
	if !bytes.Equal(before, storetest.MustRead(t, s.finishedPath())) {
		t.Fatal("second finish rewrote the record")
	}
	if got := finishedLines(t, s); len(got) != 1 {
		t.Fatalf("finished log after a second finish: %v", got)
	}
	// Update does not touch a finished record either.
	if _, err := s.Update("t1", func(t *Task) { t.Name = "renamed" }); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, storetest.MustRead(t, s.finishedPath())) {
		t.Fatal("update rewrote a finished record")
	}

	// The JSON names users script against, all present.
	var m map[string]any
	if err := json.Unmarshal(before, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "name", "command", "cwd", "session_id", "pid", "supervisor_pid", "started_at", "finished_at", "duration_ms", "status", "exit_code", "signal", "output_preview", "log_bytes", "error"} {
		if _, ok := m[k]; !ok {
			t.Errorf("record has no %q", k)
		}
	}
}

// A change that leaves the task running (Reconcile finding, under the
// lock, that the supervisor lives after all) writes nothing: the record,
// its marker and the finished log stay as they were.
func TestTaskFinishThatLeavesRunningWritesNothing(t *testing.T) {
	s, clock, _ := newTestTaskStore(t)
	mustCreateTask(t, s, "t1", "")
	before := storetest.MustRead(t, s.docPath("t1"))
	clock.Advance(time.Second)
	got, finished, err := s.Finish("t1", func(*Task) {})
	if err != nil || finished || got.Status != Running {
		t.Fatalf("finish with no outcome: %+v finished=%v err=%v", got, finished, err)
	}
	if !bytes.Equal(before, storetest.MustRead(t, s.docPath("t1"))) {
		t.Fatal("the record was rewritten")
	}
	if got := markers(t, s); !slices.Equal(got, []string{"t1"}) {
		t.Fatalf("markers %v, want [t1]", got)
	}
	if got := finishedLines(t, s); len(got) != 0 {
		t.Fatalf("finished log %v, want none", got)
	}
}

func TestTaskHistoryOrderAndFilters(t *testing.T) {
	s, clock, _ := newTestTaskStore(t)
	// Created a, b, c, d; finished b, a, c; d runs.
	for _, id := range []string{"a", "b", "c", "d"} {
		mustCreateTask(t, s, id, "n-"+id)
		clock.Advance(time.Second)
	}
	mustCreateTask(t, s, "e", "n-a")
	clock.Advance(time.Hour)
	mustFinishTask(t, s, "b", Succeeded, intp(0))
	clock.Advance(time.Hour)
	mustFinishTask(t, s, "a", Failed, intp(1))
	mid := clock.Advance(time.Hour)
	mustFinishTask(t, s, "c", Killed, nil)
	clock.Advance(time.Hour)
	mustFinishTask(t, s, "e", Succeeded, intp(0))

	cases := []struct {
		opts HistoryOptions
		want string
	}{
		{HistoryOptions{}, "e c a b"},
		{HistoryOptions{Limit: 2}, "e c"},
		{HistoryOptions{Name: "n-a"}, "e a"},
		{HistoryOptions{Status: Succeeded}, "e b"},
		{HistoryOptions{Status: Killed}, "c"},
		{HistoryOptions{Status: Lost}, ""},
		{HistoryOptions{Since: mid}, "e c"},
		{HistoryOptions{Since: mid.Add(time.Microsecond)}, "e"},
		{HistoryOptions{Since: mid.Add(-2 * time.Hour), Limit: 3}, "e c a"},
		{HistoryOptions{Name: "n-a", Status: Failed}, "a"},
		{HistoryOptions{Name: "n-d"}, ""},
	}
	for _, c := range cases {
		got, err := s.History(c.opts)
		if err != nil {
			t.Fatalf("%+v: %v", c.opts, err)
		}
		if ids := taskIDs(got); ids != c.want {
			t.Errorf("History(%+v) = %q, want %q", c.opts, ids, c.want)
		}
	}
	// A store with no finished task has no history, and no error.
	empty, _, _ := newTestTaskStore(t)
	if got, err := empty.History(HistoryOptions{}); err != nil || len(got) != 0 {
		t.Fatalf("empty history: %v %v", got, err)
	}
}

// History reads only the records it returns: with a limit, records further
// back in the finished log are never opened (one that cannot be read does
// not matter).
func TestTaskHistoryOpensOnlyWhatItReturns(t *testing.T) {
	s, clock, _ := newTestTaskStore(t)
	for _, id := range []string{"a", "b", "c"} {
		mustCreateTask(t, s, id, "")
		clock.Advance(time.Second)
		mustFinishTask(t, s, id, Succeeded, intp(0))
	}
	storetest.MustWrite(t, s.docPath("a"), []byte("{not json"))
	got, err := s.History(HistoryOptions{Limit: 2})
	if err != nil || taskIDs(got) != "c b" {
		t.Fatalf("history: %q %v", taskIDs(got), err)
	}
	if _, err := os.Stat(s.docPath("a")); err != nil {
		t.Fatalf("record a was touched: %v", err)
	}
}

// Finish appends the finished line before it rewrites the record. A crash
// between the two leaves a line whose record still says running: History
// skips it, and RebuildIndex makes the indexes agree with the records.
func TestTaskCrashBetweenFinishedLineAndRecord(t *testing.T) {
	s, clock, w := newTestTaskStore(t)
	mustCreateTask(t, s, "a", "")
	mustCreateTask(t, s, "b", "")
	mustCreateTask(t, s, "c", "")
	clock.Advance(time.Second)
	mustFinishTask(t, s, "a", Succeeded, intp(0))
	clock.Advance(time.Second)
	// The crash: b's line is written, its record is not.
	line := oldEntry("b", Succeeded, clock.Now())
	if err := s.appendFinished(line, clock.Now(), noCommit); err != nil {
		t.Fatal(err)
	}
	// And c's record is written but its marker not removed.
	clock.Advance(time.Second)
	mustFinishTask(t, s, "c", Failed, intp(2))
	if err := fsstore.WriteFileAtomic(s.runningMarker("c"), nil); err != nil {
		t.Fatal(err)
	}

	got, err := s.History(HistoryOptions{})
	if err != nil || taskIDs(got) != "c a" {
		t.Fatalf("history after the crash: %q %v (b's record says running)", taskIDs(got), err)
	}
	if got, _ := s.Get("b"); got.Status != Running {
		t.Fatalf("b: %+v", got)
	}

	if err := s.RebuildIndex(); err != nil {
		t.Fatal(err)
	}
	if got := finishedLines(t, s); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("finished log after rebuild: %v, want [a c]", got)
	}
	if got := markers(t, s); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("markers after rebuild: %v, want [b]", got)
	}
	// b can still finish, and then it is history.
	clock.Advance(time.Second)
	mustFinishTask(t, s, "b", Succeeded, intp(0))
	got, err = s.History(HistoryOptions{})
	if err != nil || taskIDs(got) != "b c a" {
		t.Fatalf("history after b finished: %q %v", taskIDs(got), err)
	}

	// A rebuild keeps the records that the finished log holds.
	if err := s.RebuildIndex(); err != nil {
		t.Fatal(err)
	}
	if got, err := s.History(HistoryOptions{}); err != nil || taskIDs(got) != "b c a" {
		t.Fatalf("history after rebuild: %q %v", taskIDs(got), err)
	}
	if len(w.List()) != 0 {
		t.Fatalf("warnings: %v", w.List())
	}
}

// A torn last line of the finished log (a crash mid-append) is skipped by
// History and moved aside by the next Finish, with a warning.
func TestTaskFinishedLogTornTail(t *testing.T) {
	s, clock, w := newTestTaskStore(t)
	mustCreateTask(t, s, "a", "")
	mustCreateTask(t, s, "b", "")
	mustFinishTask(t, s, "a", Succeeded, intp(0))
	f, err := os.OpenFile(s.finishedPath(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"task_id":"b","sta`)
	f.Close()
	if got, err := s.History(HistoryOptions{}); err != nil || taskIDs(got) != "a" {
		t.Fatalf("history with a torn tail: %q %v", taskIDs(got), err)
	}
	clock.Advance(time.Second)
	mustFinishTask(t, s, "b", Failed, intp(1))
	if got := finishedLines(t, s); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("finished log: %v", got)
	}
	if msgs := w.List(); len(msgs) != 1 || !strings.Contains(msgs[0], "torn tail moved aside") {
		t.Fatalf("warnings: %v", msgs)
	}
	if got, err := s.History(HistoryOptions{}); err != nil || taskIDs(got) != "b a" {
		t.Fatalf("history: %q %v", taskIDs(got), err)
	}
}

func TestTaskPrune(t *testing.T) {
	s, clock, _ := newTestTaskStore(t)
	// Finished in this order, an hour apart: f1 (failed), s1, s2, f2
	// (failed), s3; r runs.
	order := []struct{ id, status string }{
		{"f1", Failed}, {"s1", Succeeded}, {"s2", Succeeded}, {"f2", Failed}, {"s3", Succeeded},
	}
	for _, o := range order {
		mustCreateTask(t, s, o.id, "")
	}
	mustCreateTask(t, s, "r", "")
	// r even has a line in the finished log (the crash above), an old one.
	line := oldEntry("r", Succeeded, storetest.Epoch)
	if err := s.appendFinished(line, storetest.Epoch, noCommit); err != nil {
		t.Fatal(err)
	}
	for _, o := range order {
		clock.Advance(time.Hour)
		code := 0
		if o.status == Failed {
			code = 1
		}
		mustFinishTask(t, s, o.id, o.status, &code)
	}
	now := clock.Advance(time.Minute)
	removedIDs := func(rs []Removal) string {
		var ids []string
		for _, r := range rs {
			ids = append(ids, r.TaskID)
		}
		return strings.Join(ids, " ")
	}
	exists := func(id string) bool {
		_, errDoc := s.Get(id)
		_, errLog := os.Stat(s.LogPath(id))
		if (errDoc == nil) != (errLog == nil) {
			t.Fatalf("%s: record and log disagree: %v / %v", id, errDoc, errLog)
		}
		return errDoc == nil
	}

	dry := []struct {
		opts PruneOptions
		want string
	}{
		// Everything finished more than 110 minutes ago: f1, s1, s2 (and r
		// is never a candidate).
		{PruneOptions{Before: now.Add(-110 * time.Minute)}, "s2 s1 f1"},
		{PruneOptions{Before: now}, "s3 f2 s2 s1 f1"},
		{PruneOptions{Before: now, KeepLast: 2}, "s2 s1 f1"},
		{PruneOptions{Before: now, KeepLast: 5}, ""},
		{PruneOptions{Before: now, Status: Failed}, "f2 f1"},
		{PruneOptions{Before: now, Status: Failed, KeepLast: 1}, "f1"},
		{PruneOptions{Before: now, Status: Succeeded, KeepLast: 1}, "s2 s1"},
		{PruneOptions{Before: storetest.Epoch}, ""},
	}
	for _, c := range dry {
		c.opts.DryRun = true
		got, err := s.Prune(c.opts)
		if err != nil {
			t.Fatalf("%+v: %v", c.opts, err)
		}
		if ids := removedIDs(got); ids != c.want {
			t.Errorf("Prune(%+v) = %q, want %q", c.opts, ids, c.want)
		}
	}
	for _, id := range []string{"f1", "s1", "s2", "f2", "s3", "r"} {
		if !exists(id) {
			t.Fatalf("a dry run removed %s", id)
		}
	}

	got, err := s.Prune(PruneOptions{Before: now, Status: Succeeded, KeepLast: 1})
	if err != nil || removedIDs(got) != "s2 s1" {
		t.Fatalf("prune: %q %v", removedIDs(got), err)
	}
	if r := got[0]; r.Status != Succeeded || r.FinishedAt == "" || r.Bytes == 0 {
		t.Fatalf("removal: %+v", r)
	}
	for id, want := range map[string]bool{"f1": true, "s1": false, "s2": false, "f2": true, "s3": true, "r": true} {
		if exists(id) != want {
			t.Errorf("after prune, %s exists = %v, want %v", id, !want, want)
		}
	}
	if got := finishedLines(t, s); !slices.Equal(got, []string{"r", "f1", "f2", "s3"}) {
		t.Fatalf("finished log after prune: %v", got)
	}
	if h, err := s.History(HistoryOptions{}); err != nil || taskIDs(h) != "s3 f2 f1" {
		t.Fatalf("history after prune: %q %v", taskIDs(h), err)
	}
	// Everything old: the running task stays, with its marker.
	got, err = s.Prune(PruneOptions{Before: now})
	if err != nil || removedIDs(got) != "s3 f2 f1" {
		t.Fatalf("prune all: %q %v", removedIDs(got), err)
	}
	if !exists("r") || !slices.Equal(markers(t, s), []string{"r"}) {
		t.Fatal("prune removed the running task")
	}
	if got, _ := s.Get("r"); got.Status != Running {
		t.Fatalf("r: %+v", got)
	}
}

// A task with two lines in the finished log counts where its last line is:
// finished again after a crash, it is among the most recently finished.
func TestTaskPruneKeepLastUsesLastLine(t *testing.T) {
	s, clock, _ := newTestTaskStore(t)
	for _, id := range []string{"a", "b", "c"} {
		mustCreateTask(t, s, id, "")
	}
	line := oldEntry("c", Succeeded, storetest.Epoch)
	if err := s.appendFinished(line, storetest.Epoch, noCommit); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		clock.Advance(time.Hour)
		mustFinishTask(t, s, id, Succeeded, intp(0))
	}
	got, err := s.Prune(PruneOptions{Before: clock.Advance(time.Hour), KeepLast: 1, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.TaskID)
	}
	if strings.Join(ids, " ") != "b a" {
		t.Fatalf("prune --keep-last 1 would remove %v, want [b a]", ids)
	}
}

// An unreadable record is moved aside and reported, never replaced by an
// empty one; after that the task is not found.
func TestTaskCorruptRecordQuarantined(t *testing.T) {
	s, _, _ := newTestTaskStore(t)
	mustCreateTask(t, s, "t1", "")
	garbage := []byte(`{"id": "t1", "status": "runn`)
	storetest.MustWrite(t, s.docPath("t1"), garbage)

	_, err := s.Get("t1")
	var corrupt *fsstore.CorruptError
	if !errors.As(err, &corrupt) {
		t.Fatalf("get of a corrupt record: %v, want a fsstore.CorruptError", err)
	}
	if !strings.Contains(err.Error(), "moved aside to") {
		t.Fatalf("error does not say where the record went: %v", err)
	}
	if _, err := os.Lstat(s.docPath("t1")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("something took the record's place: %v", err)
	}
	aside, _ := filepath.Glob(s.docPath("t1") + ".corrupt-*")
	if len(aside) != 1 || !bytes.Equal(storetest.MustRead(t, aside[0]), garbage) {
		t.Fatalf("quarantined copies %v", aside)
	}
	if _, err := s.Get("t1"); !errors.Is(err, fsstore.ErrNotFound) {
		t.Fatalf("get after quarantine: %v, want not found", err)
	}
	// The log is untouched.
	if _, err := os.Stat(s.LogPath("t1")); err != nil {
		t.Fatal(err)
	}

	// A record that names another task is corrupt too.
	mustCreateTask(t, s, "t2", "")
	b := bytes.Replace(storetest.MustRead(t, s.docPath("t2")), []byte(`"id": "t2"`), []byte(`"id": "t3"`), 1)
	storetest.MustWrite(t, s.docPath("t2"), b)
	if _, err := s.Get("t2"); !errors.As(err, &corrupt) {
		t.Fatalf("get of a record with the wrong id: %v", err)
	}
}

func TestTaskBadIDs(t *testing.T) {
	s, _, _ := newTestTaskStore(t)
	for _, id := range []string{"../x", ".hidden", "a/b", "a\x00b", strings.Repeat("x", 97)} {
		if _, err := s.Create(Task{ID: id}); !errors.Is(err, fsstore.ErrInvalid) {
			t.Errorf("create %q: %v, want invalid", id, err)
		}
		if _, err := s.Get(id); !errors.Is(err, fsstore.ErrInvalid) {
			t.Errorf("get %q: %v, want invalid", id, err)
		}
		if _, _, err := s.Finish(id, func(*Task) {}); !errors.Is(err, fsstore.ErrInvalid) {
			t.Errorf("finish %q: %v, want invalid", id, err)
		}
	}
	if _, err := os.Stat(s.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("bad ids wrote something: %v", err)
	}
}

// noCommit is the commit of a finished line whose record the test writes
// itself.
func noCommit() error { return nil }
