package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/hosts"
)

// Task statuses.
const (
	Running   = "running"
	Succeeded = "succeeded"
	Failed    = "failed"
	Killed    = "killed"
	Lost      = "lost"
)

// Task is the record of a background task: a command run under a
// supervisor. It is a document, rewritten atomically when the task starts
// and when it finishes. Every field is always present in JSON; exit_code is
// null while the task runs and when it is unknown (lost).
type Task struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Command   []string `json:"command"`
	Cwd       string   `json:"cwd"`
	SessionID string   `json:"session_id"`
	// Host is the host the task runs on (fsstore.ThisHost): its pids mean
	// something there only. A record written before hosts were recorded
	// has none, and is taken to run on the host that reads it.
	Host string `json:"host"`
	// PID and PIDStart identify the command's process; PIDStart is the
	// process's start time as the kernel counts it, so that a reused pid is
	// not taken for the task. Likewise for the supervisor.
	PID             int          `json:"pid"`
	PIDStart        string       `json:"pid_start"`
	SupervisorPID   int          `json:"supervisor_pid"`
	SupervisorStart string       `json:"supervisor_start"`
	StartedAt       fsstore.Time `json:"started_at"`
	FinishedAt      fsstore.Time `json:"finished_at"`
	DurationMS      int64        `json:"duration_ms"`
	Status          string       `json:"status"`
	ExitCode        *int         `json:"exit_code"`
	Signal          string       `json:"signal"`
	OutputPreview   string       `json:"output_preview"`
	LogBytes        int64        `json:"log_bytes"`
	// Error says why a task could not start, or what is known of a lost one.
	Error string `json:"error"`
}

// Finished reports whether the task has ended, one way or another.
func (t Task) Finished() bool { return t.Status != Running }

// PreviewBytes is how much of the end of a task's output its record keeps.
const PreviewBytes = 2048

// Store keeps the background tasks of one profile in Dir:
//
//	<id>.json           the record of a task that runs (and, in profiles
//	                    written before finished records moved to the
//	                    finished log, of a finished one)
//	<id>.log            the command's output, written by the command itself
//	<id>.lock           the sidecar lock of the record
//	.running/<id>       a marker for each task not yet finished, so that
//	                    recovery looks at running tasks only
//	.finished.jsonl     one line per finished task, in the order they
//	                    finished: its whole final record (older profiles
//	                    hold entries naming <id>.json instead); history
//	                    reads it backwards
//	.finished.idx       the finished index: each block of the finished
//	                    log's lines and the range of their ids (a cache,
//	                    finindex.go)
//	.prune.lock         held by Prune, so that one prune runs at a time
//	.pruning            the ids an interrupted prune was removing
//
// A record file, where there is one, is the truth about its task; a
// finished line without one is the record. The markers are an index,
// rebuilt by RebuildIndex when lost.
type Store struct {
	Dir         string
	LockTimeout time.Duration
	Now         func() time.Time
	Warn        func(string)
	// Host is the id of the host this process runs on (fsstore.ThisHost),
	// which Create records.
	Host string
	// Seen is what this host has watched of other hosts' heartbeats
	// (lease.go).
	Seen *hosts.Seen
	// Cancel, when it closes, ends a lock wait at once, with a
	// *fsstore.LockInterruptedError: a tool call's ctx.Done(). Nil never
	// closes. A copy of the store with its own Cancel serves one call.
	Cancel <-chan struct{}
	// indexBlock, when not 0, is the least size of a block of the
	// finished index instead of finishedIndexBlock: tests cut small logs
	// into many blocks.
	indexBlock int64
}

// NewStore returns the task store of the profile whose directory is
// profileDir. Nothing is created until the first write.
func NewStore(profileDir string, lockTimeout time.Duration, warn func(string)) *Store {
	return &Store{Dir: filepath.Join(profileDir, "tasks"), LockTimeout: lockTimeout, Now: fsstore.Now, Warn: warn, Host: fsstore.ThisHost(),
		Seen: hosts.NewSeen(profileDir, lockTimeout)}
}

func (s *Store) docPath(id string) string       { return filepath.Join(s.Dir, id+".json") }
func (s *Store) lockPath(id string) string      { return filepath.Join(s.Dir, id+".lock") }
func (s *Store) runningDir() string             { return filepath.Join(s.Dir, ".running") }
func (s *Store) finishedPath() string           { return filepath.Join(s.Dir, ".finished.jsonl") }
func (s *Store) finishedLockPath() string       { return filepath.Join(s.Dir, ".finished.lock") }
func (s *Store) pruneLockPath() string          { return filepath.Join(s.Dir, ".prune.lock") }
func (s *Store) journalPath() string            { return filepath.Join(s.Dir, ".pruning") }
func (s *Store) runningMarker(id string) string { return filepath.Join(s.runningDir(), id) }

// LogPath is where the output of task id goes.
func (s *Store) LogPath(id string) string { return filepath.Join(s.Dir, id+".log") }

// Create writes the record of a new task (status running) with an empty
// log and its running marker. The id is t.ID, or a new one.
func (s *Store) Create(t Task) (Task, error) {
	now := s.Now()
	if t.ID == "" {
		t.ID = fsstore.NewID(now)
	}
	if err := fsstore.CheckNewID("task id", t.ID); err != nil {
		return Task{}, err
	}
	if err := s.ensureDirs(); err != nil {
		return Task{}, err
	}
	unlock, err := fsstore.LockUntil(s.lockPath(t.ID), s.LockTimeout, s.Cancel)
	if err != nil {
		return Task{}, err
	}
	defer unlock()
	if _, err := os.Lstat(s.docPath(t.ID)); err == nil {
		return Task{}, fsstore.Refusedf("task %s exists", t.ID)
	}
	t.Status = Running
	t.StartedAt = fsstore.TimeOf(now)
	if t.Host == "" {
		t.Host = s.Host
	}
	if t.Command == nil {
		t.Command = []string{}
	}
	// The marker and the empty log hold no data: they are created plainly,
	// and the syncs of the two directories after the record commit all
	// three names at once.
	var made []string
	for _, path := range []string{s.runningMarker(t.ID), s.LogPath(t.ID)} {
		if err := createEmpty(path); err != nil {
			removeAll(made)
			return Task{}, err
		}
		made = append(made, path)
	}
	// The marker's time is the task's first heartbeat.
	if err := touch(s.runningMarker(t.ID), now); err != nil {
		removeAll(made)
		return Task{}, err
	}
	if err := fsstore.WriteDoc(s.docPath(t.ID), &t); err != nil {
		// A full disk: no marker or log without a record is left behind.
		removeAll(made)
		return Task{}, err
	}
	return t, fsstore.SyncDir(s.runningDir())
}

// ensureDirs makes the store's directories, refusing any that is a
// symlink: EnsureDir checks only the directory it is given when that
// exists, so a symlinked tasks dir above .running must be checked itself.
func (s *Store) ensureDirs() error {
	if err := fsstore.EnsureDir(s.Dir); err != nil {
		return err
	}
	return fsstore.EnsureDir(s.runningDir())
}

// removeAll removes the files a failed create made.
func removeAll(paths []string) {
	for _, p := range paths {
		os.Remove(p)
	}
}

// createEmpty creates an empty file 0600, never through a symlink.
func createEmpty(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, fsstore.FileMode)
	if err != nil {
		return fsstore.PathErr("create", path, err)
	}
	err = f.Chmod(fsstore.FileMode)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Get reads the record of task id. An unreadable record is quarantined
// and reported, never replaced.
func (s *Store) Get(id string) (Task, error) {
	if err := fsstore.CheckID("task id", id); err != nil {
		return Task{}, err
	}
	return s.read(id, false)
}

// read returns the record of task id: its record file, else its line in
// the finished log, found by reading the log backwards, so that a task
// that has just finished is found at once.
func (s *Store) read(id string, locked bool) (Task, error) {
	t, err := fsstore.ReadRecord(fsstore.Record{What: "task", ID: id, Path: s.docPath(id), Lock: s.lockPath(id),
		Locked: locked, Timeout: s.LockTimeout, Cancel: s.Cancel, Now: s.Now}, func(v *Task) string { return v.ID })
	if !errors.Is(err, fsstore.ErrNotFound) {
		return t, err
	}
	if r, ferr := s.finishedRecord(id); ferr != nil || r != nil {
		if r == nil {
			return Task{}, ferr
		}
		return *r, nil
	}
	return Task{}, err
}

// finishedRecord returns the last record of task id in the finished log,
// or nil. Only lines that start as a record of id does are decoded. It
// looks through the finished index first (finindex.go), then, when that
// cannot answer for the whole log, reads the log backwards.
func (s *Store) finishedRecord(id string) (*Task, error) {
	f, size, err := fsstore.OpenSized(s.finishedPath())
	if f == nil || err != nil {
		return nil, err
	}
	defer f.Close()
	quoted, _ := json.Marshal(id)
	prefix := append(append([]byte(`{"id":`), quoted...), ',')
	found, sure, err := s.indexedRecord(f, size, id, prefix)
	if err != nil || found != nil || sure {
		return found, err
	}
	err = fsstore.EachLineBackward(f, size, func(line []byte, _ int64) bool {
		found = recordOf(line, id, prefix)
		return found == nil
	})
	return found, err
}

// Update applies change to the record of a running task under its lock.
// A task that has finished is not changed: its record is final; a change
// that changes nothing writes nothing. Update records what a running task
// is (its pids), which a crash makes meaningless: the record is synced but
// its directory is not, and Finish's sync commits it with the end of the
// task. After a power cut the record may show the task as Create wrote it,
// which recovery treats like any task whose processes are gone.
func (s *Store) Update(id string, change func(*Task)) (Task, error) {
	if err := fsstore.CheckID("task id", id); err != nil {
		return Task{}, err
	}
	if err := s.ensureDirs(); err != nil {
		return Task{}, err
	}
	unlock, err := fsstore.LockUntil(s.lockPath(id), s.LockTimeout, s.Cancel)
	if err != nil {
		return Task{}, err
	}
	defer unlock()
	t, err := s.read(id, true)
	if err != nil || t.Finished() {
		return t, err
	}
	before, err := fsstore.EncodeDoc(s.docPath(id), &t)
	if err != nil {
		return t, err
	}
	change(&t)
	after, err := fsstore.EncodeDoc(s.docPath(id), &t)
	if err != nil || bytes.Equal(before, after) {
		return t, err
	}
	return t, fsstore.ReplaceFile(s.docPath(id), func(w io.Writer) error { _, err := w.Write(after); return err })
}

// finishedLine is a line of the finished log as it is decoded: a task's
// whole final record, or, in a profile written before finished records
// moved into the log, an entry (task_id, name, status, finished_at) whose
// record is <task_id>.json. Both spell name, status and finished_at alike.
type finishedLine struct {
	Task
	TaskID string `json:"task_id"`
}

// lineTaskID reads the task a line of the finished log is of from its
// first key, as the store writes it ({"id":"… for a whole record,
// {"task_id":"… for an older entry), without decoding the rest: a prune
// reads every line. ok is false for any other line, which the caller
// parses.
func lineTaskID(line []byte) (id []byte, ok bool) {
	for _, key := range [][]byte{[]byte(`{"id":"`), []byte(`{"task_id":"`)} {
		if rest, found := bytes.CutPrefix(line, key); found {
			if i := bytes.IndexByte(rest, '"'); i > 0 && bytes.IndexByte(rest[:i], '\\') < 0 {
				return rest[:i], true
			}
		}
	}
	return nil, false
}

// finishedEntry is what the store knows of a line of the finished log.
type finishedEntry struct {
	TaskID     string
	Name       string
	Status     string
	FinishedAt fsstore.Time
	// Record is the whole record; nil for an old entry.
	Record *Task
	// Size is the line's length with its newline.
	Size int64
}

// parseFinished decodes a line of the finished log; ok is false for a
// line that is not one (which readers skip).
func parseFinished(line []byte) (e finishedEntry, ok bool) {
	var l finishedLine
	if json.Unmarshal(line, &l) != nil {
		return e, false
	}
	e = finishedEntry{TaskID: l.TaskID, Name: l.Name, Status: l.Status, FinishedAt: l.FinishedAt, Size: int64(len(line)) + 1}
	if l.TaskID == "" {
		if !l.Task.Finished() {
			return e, false
		}
		e.TaskID, e.Record = l.ID, &l.Task
	}
	return e, fsstore.CheckID("task id", e.TaskID) == nil
}

// Finish records the end of a running task: change sets the outcome
// (status, exit code, signal, error); Finish fills in finished_at, the
// duration, the log's size and its last PreviewBytes. The finished log gets
// the whole final record as its line before the record file is rewritten,
// the commit point, so a crash between the two leaves a line whose record
// file still says running, which readers skip (the file is the truth),
// never a finished record that history cannot find; a failure to rewrite
// the record file cuts the line off again. After the commit the record
// file is removed: the line is the record from then on, so that a prune
// removes one log per task and rewrites one file, and frees no block of a
// record file per task. A task already finished is returned unchanged
// with finished=false; so is one that change leaves running, and nothing
// is written.
func (s *Store) Finish(id string, change func(*Task)) (t Task, finished bool, err error) {
	if err := fsstore.CheckID("task id", id); err != nil {
		return Task{}, false, err
	}
	if err := s.ensureDirs(); err != nil {
		return Task{}, false, err
	}
	unlock, err := fsstore.LockUntil(s.lockPath(id), s.LockTimeout, s.Cancel)
	if err != nil {
		return Task{}, false, err
	}
	defer unlock()
	if t, err = s.read(id, true); err != nil {
		return t, false, err
	}
	if t.Finished() {
		// A crash may have come between the record and its marker.
		os.Remove(s.runningMarker(id))
		return t, false, nil
	}
	now := s.Now()
	change(&t)
	if !t.Finished() {
		// change decided the task still runs (Reconcile found its
		// supervisor alive under the lock): the record stays as it was.
		return t, false, nil
	}
	t.FinishedAt = fsstore.TimeOf(now)
	if start, err := t.StartedAt.Instant(); err == nil {
		t.DurationMS = now.Sub(start).Milliseconds()
	}
	t.LogBytes, t.OutputPreview = logTail(s.LogPath(id), PreviewBytes)
	line, _ := json.Marshal(t)
	err = s.appendFinished(line, now, func() error { return fsstore.WriteDoc(s.docPath(id), &t) })
	if err != nil {
		return Task{}, false, err
	}
	// After the commit point: a marker of a finished task is stale, which
	// readers skip and the next Finish or fsck --repair removes.
	if err := os.Remove(s.runningMarker(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.Warn(fmt.Sprintf("task %s has finished, but its running marker stays: %v", id, err))
	}
	// Unsynced: a record file that a crash brings back says what the line
	// says, and readers take either.
	if err := os.Remove(s.docPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.Warn(fmt.Sprintf("task %s has finished, but its record file stays: %v", id, err))
	}
	return t, true, nil
}

// appendFinished appends line to the finished log, then runs commit; if
// commit fails the line is cut off again. The finished log's lock is
// held throughout, so no other line comes after it meanwhile: it is taken
// after a record's lock, never before one.
func (s *Store) appendFinished(line []byte, now time.Time, commit func() error) error {
	unlock, err := fsstore.LockUntil(s.finishedLockPath(), s.LockTimeout, s.Cancel)
	if err != nil {
		return err
	}
	defer unlock()
	_, err = os.Lstat(s.finishedPath())
	made := errors.Is(err, os.ErrNotExist)
	f, moved, err := fsstore.OpenAppend(s.finishedPath(), now)
	if err != nil {
		return err
	}
	defer f.Close()
	if moved != "" {
		s.Warn("torn tail moved aside to " + moved)
	}
	if err := fsstore.AppendThen(f, made, [][]byte{append(line, '\n')}, commit); err != nil {
		return err
	}
	if fi, err := f.Stat(); err == nil {
		s.extendIndex(fi.Size(), false)
	}
	return nil
}

// Discard removes the record, log and running marker of task id, whose
// command never started: for a supervisor that could not start it and
// could not record that either (a full disk), so that no record is left
// that says a command runs which never ran. The record goes first, so a
// crash halfway leaves a log or a marker without a record, which fsck
// reports. A task that has finished, or whose command has a pid, is
// refused.
func (s *Store) Discard(id string) error {
	if err := fsstore.CheckID("task id", id); err != nil {
		return err
	}
	unlock, err := fsstore.LockUntil(s.lockPath(id), s.LockTimeout, s.Cancel)
	if err != nil {
		return err
	}
	defer unlock()
	t, err := s.read(id, true)
	if err != nil {
		return err
	}
	if t.Finished() || t.PID != 0 {
		return fsstore.Refusedf("task %s has started; its record stays", id)
	}
	for _, p := range []string{s.docPath(id), s.LogPath(id), s.runningMarker(id)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("discard task %s: %w", id, err)
		}
	}
	os.Remove(s.lockPath(id))
	return errors.Join(fsstore.SyncDir(s.Dir), fsstore.SyncDir(s.runningDir()))
}

// logTail returns the size of the log at path and its last n bytes as text
// (starting at a line or rune boundary where one is near).
func logTail(path string, n int64) (int64, string) {
	f, err := os.Open(path)
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, ""
	}
	size := fi.Size()
	start := max(size-n, 0)
	buf := make([]byte, size-start)
	if _, err := f.ReadAt(buf, start); err != nil && err != io.EOF {
		return size, ""
	}
	if start > 0 {
		if i := bytes.IndexByte(buf, '\n'); i >= 0 && i < len(buf)-1 {
			buf = buf[i+1:]
		}
	}
	return size, strings.ToValidUTF8(string(buf), "")
}

// Running returns the ids of the tasks whose records say running, from
// their markers, oldest first.
func (s *Store) Running() ([]string, error) {
	return fsstore.MarkerIDs(s.runningDir())
}

// HistoryOptions filter History.
type HistoryOptions struct {
	Limit  int       // 0: no limit
	Name   string    // only tasks with this name
	Status string    // only tasks with this status
	Since  time.Time // only tasks finished at or after this time
}

// History returns finished tasks, the most recently finished first. It
// reads the finished log backwards and opens only the record files of the
// tasks it returns that have one, so its cost follows the limit, not the
// number of tasks.
func (s *Store) History(opts HistoryOptions) ([]Task, error) {
	f, size, err := fsstore.OpenSized(s.finishedPath())
	if f == nil || err != nil {
		return nil, err
	}
	defer f.Close()
	var since fsstore.Time
	if !opts.Since.IsZero() {
		since = fsstore.TimeOf(opts.Since)
	}
	seen := map[string]bool{}
	var out []Task
	var readErr error
	err = fsstore.EachLineBackward(f, size, func(line []byte, _ int64) bool {
		e, ok := parseFinished(line)
		if !ok || seen[e.TaskID] {
			return true
		}
		seen[e.TaskID] = true
		if since != "" && e.FinishedAt.Before(since) {
			return false
		}
		if (opts.Name != "" && e.Name != opts.Name) || (opts.Status != "" && e.Status != opts.Status) {
			return true
		}
		t, err := s.entryRecord(e)
		if errors.Is(err, fsstore.ErrNotFound) {
			return true
		}
		if err != nil {
			readErr = err
			return false
		}
		if !t.Finished() {
			return true
		}
		out = append(out, t)
		return opts.Limit <= 0 || len(out) < opts.Limit
	})
	if err == nil {
		err = readErr
	}
	return out, err
}

// entryRecord returns the record a line of the finished log stands for:
// the task's record file where it has one (the truth: a crash may have
// left a line whose file still says running), else the line's record.
func (s *Store) entryRecord(e finishedEntry) (Task, error) {
	if e.Record != nil {
		if _, err := os.Lstat(s.docPath(e.TaskID)); errors.Is(err, os.ErrNotExist) {
			return *e.Record, nil
		}
	}
	t, err := fsstore.ReadRecord(fsstore.Record{What: "task", ID: e.TaskID, Path: s.docPath(e.TaskID), Lock: s.lockPath(e.TaskID),
		Timeout: s.LockTimeout, Cancel: s.Cancel, Now: s.Now}, func(v *Task) string { return v.ID })
	if errors.Is(err, fsstore.ErrNotFound) && e.Record != nil {
		return *e.Record, nil
	}
	return t, err
}

// Removal is one task removed by Prune (or that a dry run would remove).
type Removal struct {
	TaskID     string       `json:"task_id"`
	Name       string       `json:"name"`
	Status     string       `json:"status"`
	FinishedAt fsstore.Time `json:"finished_at"`
	Bytes      int64        `json:"bytes"`
}

// PruneOptions choose the finished tasks Prune removes.
type PruneOptions struct {
	Before   time.Time // finished before this time
	KeepLast int       // keep the N most recently finished of those matching Status
	Status   string    // only tasks with this status
	DryRun   bool
}

// Prune removes finished tasks, record and log together, that finished
// before opts.Before, sparing the opts.KeepLast most recently finished.
// One prune runs at a time (.prune.lock); it takes no lock of a task. A
// running task is never removed: a task's line in the finished log is its
// record only once it has no record file (Finish removes the file after
// its commit point), and a task that has one is removed only when the
// file says finished. The files are listed after the finished log is read,
// so a task finishing meanwhile is either not in what was read, or is
// seen with its final record.
//
// The removal has one commit point: the journal .pruning, naming the tasks
// to remove, synced. Then the finished log is rewritten without them
// (lines appended meanwhile are kept), their record files, logs and lock
// sidecars are removed, the directory is synced once, and the journal is
// removed. A crash after the commit point leaves the journal, and the next
// prune (or fsck --repair) completes it; before, nothing has changed.
func (s *Store) Prune(opts PruneOptions) ([]Removal, error) {
	if _, err := os.Lstat(s.Dir); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	unlock, err := fsstore.LockUntil(s.pruneLockPath(), s.LockTimeout, s.Cancel)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if !opts.DryRun {
		if err := s.completePrune(); err != nil {
			return nil, err
		}
	}
	entries, err := s.finishedEntries()
	if err != nil {
		return nil, err
	}
	docs, err := s.docIDs()
	if err != nil {
		return nil, err
	}
	before := fsstore.TimeOf(opts.Before)
	var out []Removal
	kept := 0
	// Newest first, so that KeepLast spares the most recent.
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if opts.Status != "" && e.Status != opts.Status {
			continue
		}
		if kept < opts.KeepLast {
			kept++
			continue
		}
		if e.FinishedAt >= before {
			continue
		}
		r, ok, err := s.removal(e, docs[e.TaskID])
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, r)
		}
	}
	if opts.DryRun || len(out) == 0 {
		return out, nil
	}
	ids := make([]string, len(out))
	for i, r := range out {
		ids[i] = r.TaskID
	}
	if err := fsstore.WriteFileAtomic(s.journalPath(), []byte(strings.Join(ids, "\n")+"\n")); err != nil {
		return nil, err
	}
	if err := fsstore.SyncDir(s.Dir); err != nil {
		return nil, err
	}
	return out, s.removeTasks(ids)
}

// removal says what removing the task of entry e frees, and whether it is
// to be removed: a task with a record file only if that says finished.
func (s *Store) removal(e finishedEntry, hasDoc bool) (Removal, bool, error) {
	var t Task
	var size int64
	switch {
	case hasDoc:
		var err error
		t, err = s.read(e.TaskID, false)
		if errors.Is(err, fsstore.ErrNotFound) {
			return Removal{}, false, nil
		}
		if err != nil || !t.Finished() {
			return Removal{}, false, err
		}
		if fi, err := os.Lstat(s.docPath(e.TaskID)); err == nil {
			size = fi.Size()
		} else if e.Record != nil {
			// Finish removed the file meanwhile: its line is the record.
			size = e.Size
		}
	case e.Record != nil:
		t, size = *e.Record, e.Size
	default:
		// An old entry whose record file is gone.
		return Removal{}, false, nil
	}
	if fi, err := os.Lstat(s.LogPath(e.TaskID)); err == nil {
		size += fi.Size()
	}
	return Removal{TaskID: t.ID, Name: t.Name, Status: t.Status, FinishedAt: t.FinishedAt, Bytes: size}, true, nil
}

// removeTasks removes the tasks ids, which the journal names: their lines
// from the finished log, their files, then the journal. Each step may have
// been done before (a crash after it); none fails for that.
func (s *Store) removeTasks(ids []string) error {
	removed := make(map[string]bool, len(ids))
	for _, id := range ids {
		removed[id] = true
	}
	if err := s.dropFinished(removed); err != nil {
		return err
	}
	// Only the files the directory holds are removed: most finished tasks
	// have no record file nor lock left, and a name that is not there would
	// cost two system calls to find so (os.Remove tries unlink, then rmdir).
	d, err := os.Open(s.Dir)
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return err
	}
	present := make(map[string]bool, len(names))
	for _, n := range names {
		present[n] = true
	}
	// The record file goes before the log, so that no record is ever left
	// without its log; whatever a crash leaves, the journal names.
	for _, id := range ids {
		for _, p := range []string{s.docPath(id), s.LogPath(id), s.lockPath(id)} {
			if !present[filepath.Base(p)] {
				continue
			}
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("prune task %s: %w", id, err)
			}
		}
	}
	if err := fsstore.SyncDir(s.Dir); err != nil {
		return err
	}
	if err := os.Remove(s.journalPath()); err != nil {
		return fmt.Errorf("prune: %w", err)
	}
	return nil
}

// completePrune completes a prune that a crash interrupted, which left
// its journal; the caller holds the prune lock. No journal: nothing to do.
func (s *Store) completePrune() error {
	ids, err := s.journal()
	if err != nil || ids == nil {
		return err
	}
	s.Warn(fmt.Sprintf("completing an interrupted prune of %d tasks", len(ids)))
	return s.removeTasks(ids)
}

// journal returns the task ids in the journal of an interrupted prune, or
// nil when there is none. A journal with a bad id is not completed.
func (s *Store) journal() ([]string, error) {
	b, err := os.ReadFile(s.journalPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ids := strings.Fields(string(b))
	for _, id := range ids {
		if err := fsstore.CheckID("task id", id); err != nil {
			return nil, &fsstore.CorruptError{Path: s.journalPath(), Err: err}
		}
	}
	return ids, nil
}

// docIDs returns the ids of the tasks that have a record file, from one
// listing of the directory.
func (s *Store) docIDs() (map[string]bool, error) {
	ids, err := fsstore.DocIDs(s.Dir)
	if err != nil {
		return nil, err
	}
	docs := make(map[string]bool, len(ids))
	for _, id := range ids {
		docs[id] = true
	}
	return docs, nil
}

// dropFinished rewrites the finished log without the lines of removed
// tasks. It reads no record.
func (s *Store) dropFinished(removed map[string]bool) error {
	unlock, err := fsstore.LockUntil(s.finishedLockPath(), s.LockTimeout, s.Cancel)
	if err != nil {
		return err
	}
	defer unlock()
	f, size, err := fsstore.OpenSized(s.finishedPath())
	if f == nil || err != nil {
		return err
	}
	defer f.Close()
	var b bytes.Buffer
	b.Grow(int(size))
	dropped := false
	if _, err := fsstore.ScanLines(f, size, func(line []byte, _ int64) error {
		id, ok := lineTaskID(line)
		if !ok {
			if e, parsed := parseFinished(line); parsed {
				id, ok = []byte(e.TaskID), true
			}
		}
		if ok && removed[string(id)] {
			dropped = true
			return nil
		}
		b.Write(line)
		b.WriteByte('\n')
		return nil
	}); err != nil {
		return err
	}
	if !dropped {
		return nil
	}
	if err := s.dropIndex(); err != nil {
		return err
	}
	if err := fsstore.WriteFileAtomic(s.finishedPath(), b.Bytes()); err != nil {
		return err
	}
	return fsstore.SyncDir(s.Dir)
}

// finishedEntries reads the finished log, oldest first, one entry per task:
// its last line, in the place of its last line (as History sees it), so
// that a task finished again after a crash counts as recently finished.
func (s *Store) finishedEntries() ([]finishedEntry, error) {
	f, size, err := fsstore.OpenSized(s.finishedPath())
	if f == nil || err != nil {
		return nil, err
	}
	defer f.Close()
	var all []finishedEntry
	_, err = fsstore.ScanLines(f, size, func(line []byte, _ int64) error {
		if e, ok := parseFinished(line); ok {
			all = append(all, e)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(all))
	entries := make([]finishedEntry, 0, len(all))
	for i := len(all) - 1; i >= 0; i-- {
		if !seen[all[i].TaskID] {
			seen[all[i].TaskID] = true
			entries = append(entries, all[i])
		}
	}
	slices.Reverse(entries)
	return entries, nil
}

// IDs returns the ids of all tasks, those with a record file and those
// whose record is a line of the finished log, newest first.
func (s *Store) IDs() ([]string, error) {
	docs, err := s.docIDs()
	if err != nil {
		return nil, err
	}
	entries, err := s.finishedEntries()
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.Record != nil {
			docs[e.TaskID] = true
		}
	}
	ids := make([]string, 0, len(docs))
	for id := range docs {
		ids = append(ids, id)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(ids)))
	return ids, nil
}

// Resolve turns what a user typed into a task id: an exact id, else a
// unique id prefix. An ambiguous prefix is ErrInvalid listing the
// candidates; nothing matching is ErrNotFound.
func (s *Store) Resolve(ref string) (string, error) {
	if err := fsstore.CheckID("task id", ref); err != nil {
		return "", err
	}
	if _, err := os.Lstat(s.docPath(ref)); err == nil {
		return ref, nil
	}
	// An exact id of a finished task, found through the finished index:
	// listing every id reads the whole log.
	if r, err := s.finishedRecord(ref); err != nil {
		return "", err
	} else if r != nil {
		return ref, nil
	}
	matches, err := s.idsWithPrefix(ref)
	if err != nil {
		return "", err
	}
	if slices.Contains(matches, ref) {
		return ref, nil
	}
	switch len(matches) {
	case 0:
		return "", fsstore.NotFoundf("no task with id or id prefix %q", ref)
	case 1:
		return matches[0], nil
	default:
		return "", fsstore.Ambiguous(ref, matches)
	}
}

// idsWithPrefix returns the ids of IDs that start with ref, newest first.
// It lists the record files, and reads of the finished log only what
// finishedWithPrefix does, or the whole log when the finished index cannot
// answer for it.
func (s *Store) idsWithPrefix(ref string) ([]string, error) {
	logged, ok, err := s.finishedWithPrefix(ref)
	if err != nil {
		return nil, err
	}
	if !ok {
		ids, err := s.IDs()
		return fsstore.WithPrefix(ids, ref), err
	}
	ids, err := s.docIDsWithPrefix(ref)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		seen[id] = true
	}
	for _, id := range logged {
		if !seen[id] {
			ids = append(ids, id)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(ids)))
	return ids, nil
}

// docIDsWithPrefix returns the ids of the record files (<id>.json, as
// DocIDs names them) that start with ref, in the order the directory
// lists them. The directory holds every finished task's log too: its names
// are read a batch at a time, and not sorted.
func (s *Store) docIDsWithPrefix(ref string) ([]string, error) {
	d, err := os.Open(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var ids []string
	for {
		names, err := d.Readdirnames(1024)
		for _, name := range names {
			if id, ok := strings.CutSuffix(name, ".json"); ok && strings.HasPrefix(id, ref) {
				ids = append(ids, id)
			}
		}
		if errors.Is(err, io.EOF) {
			return ids, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// RebuildIndex rewrites the finished log from the records (one line per
// finished task, its whole record, in the order they finished) and the
// running markers, and syncs the directory; fsck --repair calls it when
// the indexes disagree with the records. The records are the record files
// and the whole records in the finished log; where a task has both, the
// file wins (a crash left a line whose file still says running).
func (s *Store) RebuildIndex() error {
	if err := fsstore.EnsureDir(s.runningDir()); err != nil {
		return err
	}
	unlock, err := fsstore.LockUntil(s.finishedLockPath(), s.LockTimeout, s.Cancel)
	if err != nil {
		return err
	}
	defer unlock()
	entries, err := s.finishedEntries()
	if err != nil {
		return err
	}
	records := map[string]Task{}
	for _, e := range entries {
		if e.Record != nil {
			records[e.TaskID] = *e.Record
		}
	}
	docs, err := fsstore.DocIDs(s.Dir)
	if err != nil {
		return err
	}
	running := map[string]bool{}
	for _, id := range docs {
		// A plain read: quarantining an unreadable record would take its
		// lock after the finished log's, which Finish takes in the other
		// order. Check quarantines it.
		var t Task
		if err := fsstore.ReadDoc(s.docPath(id), &t); err != nil {
			s.Warn(err.Error())
			continue
		}
		if !t.Finished() {
			running[id] = true
			delete(records, id)
			continue
		}
		records[id] = t
	}
	finished := make([]Task, 0, len(records))
	for _, t := range records {
		finished = append(finished, t)
	}
	sort.Slice(finished, func(i, j int) bool {
		if finished[i].FinishedAt != finished[j].FinishedAt {
			return finished[i].FinishedAt < finished[j].FinishedAt
		}
		return finished[i].ID < finished[j].ID
	})
	var b bytes.Buffer
	for _, t := range finished {
		line, _ := json.Marshal(t)
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := s.dropIndex(); err != nil {
		return err
	}
	if err := fsstore.WriteFileAtomic(s.finishedPath(), b.Bytes()); err != nil {
		return err
	}
	markers, err := s.Running()
	if err != nil {
		return err
	}
	for _, id := range markers {
		if !running[id] {
			os.Remove(s.runningMarker(id))
		}
	}
	for id := range running {
		if err := fsstore.WriteFileAtomic(s.runningMarker(id), nil); err != nil {
			return err
		}
	}
	return fsstore.SyncDir(s.runningDir())
}
