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
//	<id>.json           the record
//	<id>.log            the command's output, written by the command itself
//	<id>.lock           the sidecar lock of the record
//	.running/<id>       a marker for each task not yet finished, so that
//	                    recovery looks at running tasks only
//	.finished.jsonl     one line per finished task, in the order they
//	                    finished: history reads it backwards, so showing
//	                    the last 20 opens 20 records, not all of them
//
// The records are the truth; the markers and the finished log are indexes,
// rebuilt from the records by RebuildIndex when they are lost.
type Store struct {
	Dir         string
	LockTimeout time.Duration
	Now         func() time.Time
	Warn        func(string)
}

// NewStore returns the task store of the profile whose directory is
// profileDir. Nothing is created until the first write.
func NewStore(profileDir string, lockTimeout time.Duration, warn func(string)) *Store {
	return &Store{Dir: filepath.Join(profileDir, "tasks"), LockTimeout: lockTimeout, Now: time.Now, Warn: warn}
}

func (s *Store) docPath(id string) string       { return filepath.Join(s.Dir, id+".json") }
func (s *Store) lockPath(id string) string      { return filepath.Join(s.Dir, id+".lock") }
func (s *Store) runningDir() string             { return filepath.Join(s.Dir, ".running") }
func (s *Store) finishedPath() string           { return filepath.Join(s.Dir, ".finished.jsonl") }
func (s *Store) finishedLockPath() string       { return filepath.Join(s.Dir, ".finished.lock") }
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
	if err := fsstore.CheckID("task id", t.ID); err != nil {
		return Task{}, err
	}
	if err := s.ensureDirs(); err != nil {
		return Task{}, err
	}
	unlock, err := fsstore.Lock(s.lockPath(t.ID), s.LockTimeout)
	if err != nil {
		return Task{}, err
	}
	defer unlock()
	if _, err := os.Lstat(s.docPath(t.ID)); err == nil {
		return Task{}, fsstore.Refusedf("task %s exists", t.ID)
	}
	t.Status = Running
	t.StartedAt = fsstore.TimeOf(now)
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
		return fmt.Errorf("create %s: %w", path, err)
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

func (s *Store) read(id string, locked bool) (Task, error) {
	return fsstore.ReadRecord(fsstore.Record{What: "task", ID: id, Path: s.docPath(id), Lock: s.lockPath(id),
		Locked: locked, Timeout: s.LockTimeout, Now: s.Now}, func(v *Task) string { return v.ID })
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
	unlock, err := fsstore.Lock(s.lockPath(id), s.LockTimeout)
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

// finishedEntry is a line of the finished log.
type finishedEntry struct {
	TaskID     string       `json:"task_id"`
	Name       string       `json:"name"`
	Status     string       `json:"status"`
	FinishedAt fsstore.Time `json:"finished_at"`
}

// Finish records the end of a running task: change sets the outcome
// (status, exit code, signal, error); Finish fills in finished_at, the
// duration, the log's size and its last PreviewBytes. The finished log gets
// its line before the record is rewritten, the commit point, so a crash
// between the two leaves a line whose record still says running, which
// readers skip, never a finished record that history cannot find; a
// failure to rewrite the record cuts the line off again. A task already
// finished is returned unchanged with finished=false; so is one that
// change leaves running, and nothing is written.
func (s *Store) Finish(id string, change func(*Task)) (t Task, finished bool, err error) {
	if err := fsstore.CheckID("task id", id); err != nil {
		return Task{}, false, err
	}
	if err := s.ensureDirs(); err != nil {
		return Task{}, false, err
	}
	unlock, err := fsstore.Lock(s.lockPath(id), s.LockTimeout)
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
	line, _ := json.Marshal(finishedEntry{TaskID: t.ID, Name: t.Name, Status: t.Status, FinishedAt: t.FinishedAt})
	err = s.appendFinished(line, now, func() error { return fsstore.WriteDoc(s.docPath(id), &t) })
	if err != nil {
		return Task{}, false, err
	}
	// After the commit point: a marker of a finished task is stale, which
	// readers skip and the next Finish or fsck --repair removes.
	if err := os.Remove(s.runningMarker(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.Warn(fmt.Sprintf("task %s has finished, but its running marker stays: %v", id, err))
	}
	return t, true, nil
}

// appendFinished appends line to the finished log, then runs commit; if
// commit fails the line is cut off again. The finished log's lock is
// held throughout, so no other line comes after it meanwhile: it is taken
// after a record's lock, never before one.
func (s *Store) appendFinished(line []byte, now time.Time, commit func() error) error {
	unlock, err := fsstore.Lock(s.finishedLockPath(), s.LockTimeout)
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
	return fsstore.AppendThen(f, made, [][]byte{append(line, '\n')}, commit)
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
	unlock, err := fsstore.Lock(s.lockPath(id), s.LockTimeout)
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
// reads the finished log backwards and opens only the records it returns,
// so its cost follows the limit, not the number of tasks.
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
		var e finishedEntry
		if json.Unmarshal(line, &e) != nil || seen[e.TaskID] || fsstore.CheckID("task id", e.TaskID) != nil {
			return true
		}
		seen[e.TaskID] = true
		if since != "" && e.FinishedAt.Before(since) {
			return false
		}
		if (opts.Name != "" && e.Name != opts.Name) || (opts.Status != "" && e.Status != opts.Status) {
			return true
		}
		t, err := s.read(e.TaskID, false)
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
// before opts.Before, sparing the opts.KeepLast most recently finished. A
// running task is never removed: each candidate is re-read under its lock.
// The finished log is then rewritten without the removed tasks.
func (s *Store) Prune(opts PruneOptions) ([]Removal, error) {
	entries, err := s.finishedEntries()
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
		r, err := s.removeFinished(e.TaskID, opts.DryRun)
		if errors.Is(err, fsstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return out, err
		}
		if r.TaskID != "" {
			out = append(out, r)
		}
	}
	if opts.DryRun || len(out) == 0 {
		return out, nil
	}
	removed := make(map[string]bool, len(out))
	for _, r := range out {
		removed[r.TaskID] = true
	}
	return out, s.dropFinished(removed)
}

// dropFinished rewrites the finished log without the lines of removed
// tasks. It reads no record.
func (s *Store) dropFinished(removed map[string]bool) error {
	unlock, err := fsstore.Lock(s.finishedLockPath(), s.LockTimeout)
	if err != nil {
		return err
	}
	defer unlock()
	f, err := os.Open(s.finishedPath())
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if _, err := fsstore.ScanLines(f, fi.Size(), func(line []byte, _ int64) error {
		var e finishedEntry
		if json.Unmarshal(line, &e) == nil && removed[e.TaskID] {
			return nil
		}
		b.Write(line)
		b.WriteByte('\n')
		return nil
	}); err != nil {
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
		var e finishedEntry
		if json.Unmarshal(line, &e) != nil || fsstore.CheckID("task id", e.TaskID) != nil {
			return nil
		}
		all = append(all, e)
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

func (s *Store) removeFinished(id string, dryRun bool) (Removal, error) {
	unlock, err := fsstore.Lock(s.lockPath(id), s.LockTimeout)
	if err != nil {
		return Removal{}, err
	}
	defer unlock()
	t, err := s.read(id, true)
	if err != nil || !t.Finished() {
		return Removal{}, err
	}
	r := Removal{TaskID: id, Name: t.Name, Status: t.Status, FinishedAt: t.FinishedAt}
	paths := []string{s.docPath(id), s.LogPath(id)}
	for _, p := range paths {
		if fi, err := os.Lstat(p); err == nil {
			r.Bytes += fi.Size()
		}
	}
	if dryRun {
		return r, nil
	}
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return r, fmt.Errorf("prune task %s: %w", id, err)
		}
	}
	os.Remove(s.lockPath(id))
	return r, nil
}

// IDs returns the ids of all task records, newest first.
func (s *Store) IDs() ([]string, error) { return fsstore.DocIDs(s.Dir) }

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
	ids, err := s.IDs()
	if err != nil {
		return "", err
	}
	switch matches := fsstore.WithPrefix(ids, ref); len(matches) {
	case 0:
		return "", fsstore.NotFoundf("no task with id or id prefix %q", ref)
	case 1:
		return matches[0], nil
	default:
		return "", fsstore.Ambiguous(ref, matches)
	}
}

// RebuildIndex rewrites the finished log from the records (one line per
// finished task, in the order they finished) and the running markers, and
// syncs the directory. Prune calls it to drop removed tasks; fsck --repair
// when the indexes disagree with the records.
func (s *Store) RebuildIndex() error {
	if err := fsstore.EnsureDir(s.runningDir()); err != nil {
		return err
	}
	unlock, err := fsstore.Lock(s.finishedLockPath(), s.LockTimeout)
	if err != nil {
		return err
	}
	defer unlock()
	ids, err := s.IDs()
	if err != nil {
		return err
	}
	var finished []finishedEntry
	running := map[string]bool{}
	for _, id := range ids {
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
			continue
		}
		finished = append(finished, finishedEntry{TaskID: t.ID, Name: t.Name, Status: t.Status, FinishedAt: t.FinishedAt})
	}
	sort.SliceStable(finished, func(i, j int) bool { return finished[i].FinishedAt < finished[j].FinishedAt })
	var b bytes.Buffer
	for _, e := range finished {
		line, _ := json.Marshal(e)
		b.Write(line)
		b.WriteByte('\n')
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
