package kanban

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// Status is a kanban task's status.
type Status string

// Kanban task statuses.
const (
	Todo     Status = "todo"
	Ready    Status = "ready"
	Running  Status = "running"
	Blocked  Status = "blocked"
	Done     Status = "done"
	Archived Status = "archived"
)

// Valid reports whether s is one of the statuses.
func (s Status) Valid() bool {
	switch s {
	case Todo, Ready, Running, Blocked, Done, Archived:
		return true
	}
	return false
}

// Run outcomes.
const (
	OutcomeCompleted         = "completed"
	OutcomeBlocked           = "blocked"
	OutcomeCrashed           = "crashed"
	OutcomeProtocolViolation = "protocol_violation"
	OutcomeReclaimed         = "reclaimed"
	OutcomeSpawnFailed       = "spawn_failed"
)

// EventType says what an event of a task's log records.
type EventType string

// The events a board writes. A run's end is recorded under its outcome's
// name (blocked, completed, crashed, protocol_violation, reclaimed,
// spawn_failed).
const (
	EventCreated           EventType = "created"
	EventClaimed           EventType = "claimed"
	EventBlocked           EventType = OutcomeBlocked
	EventUnblocked         EventType = "unblocked"
	EventReadied           EventType = "readied"
	EventCompleted         EventType = OutcomeCompleted
	EventCommented         EventType = "commented"
	EventArchived          EventType = "archived"
	EventReclaimed         EventType = OutcomeReclaimed
	EventCrashed           EventType = OutcomeCrashed
	EventProtocolViolation EventType = OutcomeProtocolViolation
	EventSpawnFailed       EventType = OutcomeSpawnFailed
	EventSessionRegistered EventType = "session_registered"
	EventResumed           EventType = "resumed"
	EventResumeSkipped     EventType = "resume_skipped"
)

// Blocks reports whether an event stopped the task's work (a block by a
// worker or a person, a crash, a protocol violation, a reclaim, a failed
// spawn): the comments after the last such event are news to the worker
// that resumes it.
func (t EventType) Blocks() bool {
	switch t {
	case EventBlocked, EventCrashed, EventProtocolViolation, EventReclaimed, EventSpawnFailed:
		return true
	}
	return false
}

// Task is a task of the board: a document that holds its runs, so
// that a claim (the task moves to running and gains a run) is one atomic
// write. Its comments and events are JSONL logs beside it.
type Task struct {
	ID              string       `json:"id"`
	Title           string       `json:"title"`
	Body            string       `json:"body"`
	Assignee        string       `json:"assignee"`
	Status          Status       `json:"status"`
	Priority        int          `json:"priority"`
	CreatedAt       fsstore.Time `json:"created_at"`
	UpdatedAt       fsstore.Time `json:"updated_at"`
	ResumeOnRespawn *bool        `json:"resume_on_respawn"`
	CurrentRunID    string       `json:"current_run_id"`
	ClaimLock       string       `json:"claim_lock"`
	ClaimExpires    fsstore.Time `json:"claim_expires"`
	ClaimTTLMS      int64        `json:"claim_ttl_ms"`
	BlockReason     string       `json:"block_reason"`
	Result          string       `json:"result"`
	Runs            []Run        `json:"runs"`
}

// Run is one attempt of a worker at a task.
type Run struct {
	ID                 string       `json:"id"`
	Profile            string       `json:"profile"`
	SessionID          string       `json:"session_id"`
	Status             string       `json:"status"` // running or ended
	Outcome            string       `json:"outcome"`
	ExitCode           *int         `json:"exit_code"`
	Signal             string       `json:"signal"`
	WorkerTaskID       string       `json:"worker_task_id"`
	StartedAt          fsstore.Time `json:"started_at"`
	EndedAt            fsstore.Time `json:"ended_at"`
	ResumedFromSession string       `json:"resumed_from_session"`
	Summary            string       `json:"summary"`
}

// Run statuses.
const (
	RunRunning = "running"
	RunEnded   = "ended"
)

// RunByID returns a pointer to the run with id, or nil.
func (t *Task) RunByID(id string) *Run {
	for i := range t.Runs {
		if t.Runs[i].ID == id {
			return &t.Runs[i]
		}
	}
	return nil
}

// CurrentRun returns the task's current run, or nil.
func (t *Task) CurrentRun() *Run {
	if t.CurrentRunID == "" {
		return nil
	}
	return t.RunByID(t.CurrentRunID)
}

// EndRun closes run with an outcome and releases the claim if it is the
// current one.
func (t *Task) EndRun(r *Run, outcome string, now time.Time) {
	if r.Status != RunEnded {
		r.Status, r.Outcome, r.EndedAt = RunEnded, outcome, fsstore.TimeOf(now)
	}
	if t.CurrentRunID == r.ID {
		t.ClaimLock, t.ClaimExpires = "", ""
	}
}

// Open reports whether the task can still be worked: not done or archived.
func (t Task) Open() bool { return t.Status != Done && t.Status != Archived }

// Comment is a comment on a task.
type Comment struct {
	ID     string       `json:"id"`
	TS     fsstore.Time `json:"ts"`
	Author string       `json:"author"`
	Text   string       `json:"text"`
}

// Event is a line of a task's event log: what happened to it and why.
type Event struct {
	TS     fsstore.Time `json:"ts"`
	Type   EventType    `json:"type"`
	RunID  string       `json:"run_id,omitempty"`
	Detail string       `json:"detail,omitempty"`
}

// Board keeps the kanban tasks of one profile in Dir:
//
//	tasks/<id>.json            the task, with its runs
//	tasks/<id>.lock            its sidecar lock
//	tasks/<id>.comments.jsonl  comments, append-only
//	tasks/<id>.events.jsonl    events, append-only
//	open/<id>                  a marker for each task not done or archived
//	dispatch.lock              held by a dispatcher for one tick
//
// The markers let a dispatcher read only the open tasks: on a board of
// 10,000 tasks of which 100 are open it opens 100 documents.
type Board struct {
	Dir         string
	LockTimeout time.Duration
	Now         func() time.Time
	Warn        func(string)
}

// NewBoard returns the board of the profile whose directory is profileDir.
func NewBoard(profileDir string, lockTimeout time.Duration, warn func(string)) *Board {
	return &Board{Dir: filepath.Join(profileDir, "kanban"), LockTimeout: lockTimeout, Now: time.Now, Warn: warn}
}

func (b *Board) tasksDir() string          { return filepath.Join(b.Dir, "tasks") }
func (b *Board) docPath(id string) string  { return filepath.Join(b.tasksDir(), id+".json") }
func (b *Board) lockPath(id string) string { return filepath.Join(b.tasksDir(), id+".lock") }
func (b *Board) commentsPath(id string) string {
	return filepath.Join(b.tasksDir(), id+".comments.jsonl")
}
func (b *Board) eventsPath(id string) string { return filepath.Join(b.tasksDir(), id+".events.jsonl") }
func (b *Board) openDir() string             { return filepath.Join(b.Dir, "open") }

// DispatchLockPath is the lock a dispatcher holds for one tick, so that
// concurrent dispatchers neither claim a task twice nor exceed the number
// of workers between them.
func (b *Board) DispatchLockPath() string { return filepath.Join(b.Dir, "dispatch.lock") }

// Create adds a task. Its open marker is written before its document, so
// a crash between the two leaves a marker without a task (skipped and
// removed), never an open task that a dispatcher cannot see.
func (b *Board) Create(t Task) (Task, error) {
	now := b.Now()
	if t.ID == "" {
		t.ID = fsstore.NewID(now)
	}
	if err := fsstore.CheckID("task id", t.ID); err != nil {
		return Task{}, err
	}
	if strings.TrimSpace(t.Title) == "" {
		return Task{}, fsstore.Invalidf("empty task title")
	}
	if err := fsstore.CheckTitle(t.Title); err != nil {
		return Task{}, err
	}
	if err := b.ensureDirs(); err != nil {
		return Task{}, err
	}
	unlock, err := fsstore.Lock(b.lockPath(t.ID), b.LockTimeout)
	if err != nil {
		return Task{}, err
	}
	defer unlock()
	if old, err := b.read(t.ID, true); err == nil {
		return old, nil
	} else if !errors.Is(err, fsstore.ErrNotFound) {
		return Task{}, err
	}
	ts := fsstore.TimeOf(now)
	t.CreatedAt, t.UpdatedAt = ts, ts
	if t.Status == "" {
		t.Status = Ready
	}
	if t.Runs == nil {
		t.Runs = []Run{}
	}
	if err := fsstore.WriteFileAtomic(filepath.Join(b.openDir(), t.ID), nil); err != nil {
		return Task{}, err
	}
	if err := fsstore.WriteDoc(b.docPath(t.ID), &t); err != nil {
		// A full disk: the marker of a task that was never made goes too.
		os.Remove(filepath.Join(b.openDir(), t.ID))
		return Task{}, err
	}
	return t, b.appendEvent(t.ID, Event{TS: ts, Type: EventCreated, Detail: string(t.Status)})
}

// ensureDirs makes the board's directories, refusing any that is a
// symlink. EnsureDir checks only the directory it is given when that
// exists, so a symlinked kanban dir above tasks/ and open/ must be checked
// itself.
func (b *Board) ensureDirs() error {
	for _, dir := range []string{b.Dir, b.tasksDir(), b.openDir()} {
		if err := fsstore.EnsureDir(dir); err != nil {
			return err
		}
	}
	return nil
}

// Get reads task id.
func (b *Board) Get(id string) (Task, error) {
	if err := fsstore.CheckID("task id", id); err != nil {
		return Task{}, err
	}
	return b.read(id, false)
}

func (b *Board) read(id string, locked bool) (Task, error) {
	return fsstore.ReadRecord(fsstore.Record{What: "kanban task", ID: id, Path: b.docPath(id), Lock: b.lockPath(id),
		Locked: locked, Timeout: b.LockTimeout, Now: b.Now}, func(v *Task) string { return v.ID })
}

// Update applies change to task id under its lock: a compare-and-swap,
// since change sees the task as stored and may refuse. The events change
// returns are appended after the document is written; updated_at is set
// and the open marker follows the status.
func (b *Board) Update(id string, change func(t *Task, now time.Time) ([]Event, error)) (Task, error) {
	if err := fsstore.CheckID("task id", id); err != nil {
		return Task{}, err
	}
	// An unknown task is not found before its lock is taken: taking it
	// would leave a stray sidecar behind (or fail, on a board not yet made).
	if _, err := os.Lstat(b.docPath(id)); errors.Is(err, os.ErrNotExist) {
		return Task{}, fsstore.NotFoundf("kanban task %s not found", id)
	}
	if err := b.ensureDirs(); err != nil {
		return Task{}, err
	}
	unlock, err := fsstore.Lock(b.lockPath(id), b.LockTimeout)
	if err != nil {
		return Task{}, err
	}
	defer unlock()
	t, err := b.read(id, true)
	if err != nil {
		return Task{}, err
	}
	now := b.Now()
	events, err := change(&t, now)
	if err != nil {
		return t, err
	}
	t.UpdatedAt = fsstore.TimeOf(now)
	if err := fsstore.WriteDoc(b.docPath(id), &t); err != nil {
		return Task{}, err
	}
	if !t.Open() {
		if err := os.Remove(filepath.Join(b.openDir(), id)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return t, err
		}
	}
	for _, ev := range events {
		if ev.TS == "" {
			ev.TS = fsstore.TimeOf(now)
		}
		if err := b.appendEvent(id, ev); err != nil {
			return t, err
		}
	}
	return t, nil
}

// OpenIDs returns the ids of the open tasks (todo, ready, running,
// blocked), from their markers, oldest first. Stale markers (of a task now
// closed or gone) are removed.
func (b *Board) OpenIDs() ([]string, error) {
	return fsstore.MarkerIDs(b.openDir())
}

// OpenTasks reads the open tasks.
func (b *Board) OpenTasks() ([]Task, error) {
	ids, err := b.OpenIDs()
	if err != nil {
		return nil, err
	}
	var out []Task
	for _, id := range ids {
		t, err := b.read(id, false)
		if errors.Is(err, fsstore.ErrNotFound) || (err == nil && !t.Open()) {
			os.Remove(filepath.Join(b.openDir(), id))
			continue
		}
		if err != nil {
			b.Warn(err.Error())
			continue
		}
		out = append(out, t)
	}
	return out, nil
}

// All reads every task, oldest first.
func (b *Board) All() ([]Task, error) {
	ids, err := fsstore.DocIDs(b.tasksDir())
	if err != nil {
		return nil, err
	}
	var out []Task
	for _, id := range ids {
		t, err := b.read(id, false)
		if err != nil {
			b.Warn(err.Error())
			continue
		}
		out = append(out, t)
	}
	// Ids sort by creation only to the second: created_at decides.
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreatedAt != out[j].CreatedAt {
			return out[i].CreatedAt < out[j].CreatedAt
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// AddComment appends a comment to task id.
func (b *Board) AddComment(id, author, text string) (Comment, error) {
	if _, err := b.Get(id); err != nil {
		return Comment{}, err
	}
	if strings.TrimSpace(text) == "" {
		return Comment{}, fsstore.Invalidf("empty comment")
	}
	now := b.Now()
	c := Comment{ID: fsstore.NewID(now), TS: fsstore.TimeOf(now), Author: author, Text: text}
	line, _ := json.Marshal(c)
	if err := b.appendLine(id, b.commentsPath(id), line); err != nil {
		return Comment{}, err
	}
	return c, b.appendEvent(id, Event{TS: c.TS, Type: EventCommented, Detail: author})
}

// Comments returns the comments of task id, oldest first.
func (b *Board) Comments(id string) ([]Comment, error) {
	var out []Comment
	err := b.scan(b.commentsPath(id), func(line []byte) {
		var c Comment
		if json.Unmarshal(line, &c) == nil {
			out = append(out, c)
		}
	})
	return out, err
}

// Events returns the events of task id, oldest first.
func (b *Board) Events(id string) ([]Event, error) {
	var out []Event
	err := b.scan(b.eventsPath(id), func(line []byte) {
		var e Event
		if json.Unmarshal(line, &e) == nil {
			out = append(out, e)
		}
	})
	return out, err
}

func (b *Board) scan(path string, fn func([]byte)) error {
	f, size, err := fsstore.OpenSized(path)
	if f == nil || err != nil {
		return err
	}
	defer f.Close()
	torn, err := fsstore.ScanLines(f, size, func(line []byte, _ int64) error { fn(line); return nil })
	if torn != nil {
		b.Warn(torn.String())
	}
	return err
}

func (b *Board) appendEvent(id string, ev Event) error {
	line, _ := json.Marshal(ev)
	return b.appendLine(id, b.eventsPath(id), line)
}

// appendLine appends to one of a task's logs under a lock of its own, so
// comments do not wait for a claim.
func (b *Board) appendLine(id, path string, line []byte) error {
	if err := b.ensureDirs(); err != nil {
		return err
	}
	unlock, err := fsstore.Lock(path+".lock", b.LockTimeout)
	if err != nil {
		return err
	}
	defer unlock()
	f, moved, err := fsstore.OpenAppend(path, b.Now())
	if err != nil {
		return err
	}
	defer f.Close()
	if moved != "" {
		b.Warn("torn tail moved aside to " + moved)
	}
	return fsstore.AppendLines(f, [][]byte{append(line, '\n')})
}

// Check checks the board's tasks and their logs (see CheckTree).
func (b *Board) Check(repair bool, lostFound string) ([]fsstore.Finding, error) {
	return fsstore.CheckTree(b.Dir, func(log string) string { return log + ".lock" }, b.LockTimeout, repair, lostFound)
}
