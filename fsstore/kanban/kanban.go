package kanban

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/hosts"
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
	EventLinked            EventType = "linked"
	EventUnlinked          EventType = "unlinked"
	EventGaveUp            EventType = "gave_up"
	EventAssigned          EventType = "assigned"
	// EventWaiting follows the "blocked" of a worker's block that leaves
	// its task waiting for its subtasks (todo), its detail what holds it.
	EventWaiting EventType = "waiting"
)

// Blocks reports whether an event stopped the task's work (a block by a
// worker or a person, a crash, a protocol violation, a reclaim, a failed
// spawn): the comments after the last such event are news to the worker
// that resumes it.
func (t EventType) Blocks() bool {
	switch t {
	case EventBlocked, EventCrashed, EventProtocolViolation, EventReclaimed, EventSpawnFailed, EventGaveUp:
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
	// CompletedAt is when the task was done, kept when it is archived:
	// an archived parent that was done still releases its children.
	CompletedAt fsstore.Time `json:"completed_at"`
	// Parents are the tasks this one waits for (deps.go).
	Parents []string `json:"parents"`
	// NotBefore is when the task may be claimed: a retry's backoff
	// (retry.go) or --at.
	NotBefore fsstore.Time `json:"not_before"`
	// Failures counts the runs in a row that ended crashed,
	// protocol_violation or reclaimed; MaxRetries is the task's own
	// limit of retries after a failure (absent: the board's).
	Failures   int  `json:"failures"`
	MaxRetries *int `json:"max_retries,omitempty"`
	// RetryBackoffMS is the backoff of the retry the task waits for
	// (retry.go), judged by each host's own clock from when it saw the
	// retry (lease.go); not_before, stamped by the clock of the host that
	// failed the run, is for people to read.
	RetryBackoffMS int64 `json:"retry_backoff_ms,omitempty"`
	// IdempotencyKey is the key of the create that made the task
	// (CreateOnce), if any.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// SubtaskOf is the task whose worker made this one as a subtask,
	// which waits for it (subtask.go).
	SubtaskOf string `json:"subtask_of,omitempty"`
	Runs      []Run  `json:"runs"`
}

// Run is one attempt of a worker at a task.
type Run struct {
	ID      string `json:"id"`
	Profile string `json:"profile"`
	// Host is the host its worker runs on (fsstore.ThisHost of the
	// claimer); none in a run claimed before hosts were recorded.
	Host               string       `json:"host"`
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
	// Host is the id of the host this process runs on
	// (fsstore.ThisHost), which a claim records on its run.
	Host string
	// Sleep waits between the re-reads of a document that may be a stale
	// view (see staleWindow).
	Sleep func(time.Duration)
	// Shared reports whether the board is on a filesystem where a read
	// can be a stale view of another host's write (FUSE or a network
	// filesystem: fsstore.NetworkFS, one statfs, asked only when a change
	// finds events later than its document). Nil is that question.
	Shared func() bool
	// FailureLimit is how many runs in a row may fail (crashed,
	// protocol_violation, reclaimed) before a task is given up, unless
	// the task sets max_retries; RetryBackoff is the wait before the
	// first retry, doubled for each further one (retry.go).
	FailureLimit int
	RetryBackoff time.Duration
	// Cancel, when it closes, ends a lock wait at once, with a
	// *fsstore.LockInterruptedError: a tool call's ctx.Done(). Nil never
	// closes. A copy of the store with its own Cancel serves one call.
	Cancel <-chan struct{}
	// Seen is what this host has watched of claims (lease.go).
	Seen *hosts.Seen
	// Skew refuses a claim on a host whose clock is too far from the
	// shared filesystem's (hosts.Clock.Offset); nil refuses none.
	Skew func() (time.Duration, error)
}

// NewBoard returns the board of the profile whose directory is profileDir.
func NewBoard(profileDir string, lockTimeout time.Duration, warn func(string)) *Board {
	return &Board{Dir: filepath.Join(profileDir, "kanban"), LockTimeout: lockTimeout, Now: fsstore.Now, Warn: warn, Host: fsstore.ThisHost(), Sleep: time.Sleep,
		FailureLimit: DefaultFailureLimit, RetryBackoff: DefaultRetryBackoff, Seen: hosts.NewSeen(profileDir, lockTimeout),
		Skew: hosts.NewClock(profileDir, lockTimeout, warn).Offset}
}

// A change that finds events in the task's log later than the document it
// read re-reads the document every stalePoll, staleWindow long, before it
// takes them for a crash's: longer than a network filesystem's client
// caches of attributes and entries last (1 s each in GlusterFS's FUSE
// client), after which a document another host has replaced is seen.
const (
	staleWindow = 2 * time.Second
	stalePoll   = 100 * time.Millisecond
)

// errStaleRead is why a change whose document read was a stale view is
// refused.
var errStaleRead = errors.New("another host's change was not yet visible here")

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

// Create adds a task; one with parents (which must exist) waits for
// them, todo (deps.go). Its open marker is written first, then its
// "created" event, then its document, the commit point (see commit): a
// failure removes the marker and the event again, and a crash before the
// document leaves a marker without a task and an events log without a
// document, which readers skip and the next writer of that id moves aside.
func (b *Board) Create(t Task) (Task, error) {
	now := b.Now()
	if err := b.checkNew(&t, now); err != nil {
		return Task{}, err
	}
	if len(t.Parents) > 0 {
		// It waits for its parents (deps.go): ready once they are done.
		t.Status = Todo
	}
	if err := b.ensureDirs(); err != nil {
		return Task{}, err
	}
	unlock, err := fsstore.LockUntil(b.lockPath(t.ID), b.LockTimeout, b.Cancel)
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
	if t.Parents == nil {
		t.Parents = []string{}
	}
	marker := filepath.Join(b.openDir(), t.ID)
	if err := fsstore.WriteFileAtomic(marker, nil); err != nil {
		return Task{}, err
	}
	if _, err := b.commit(&t, "", []Event{{TS: ts, Type: EventCreated, Detail: string(t.Status)}}, now, false); err != nil {
		if errors.Is(err, errStaleRead) {
			// Another host created the task: its marker stays, and the
			// create is the no-op of a task that exists.
			return b.read(t.ID, true)
		}
		os.Remove(marker)
		return Task{}, err
	}
	return t, nil
}

// checkNew checks a task to be created, and gives it an id if it has
// none.
func (b *Board) checkNew(t *Task, now time.Time) error {
	if t.ID == "" {
		t.ID = fsstore.NewID(now)
	}
	if err := fsstore.CheckNewID("task id", t.ID); err != nil {
		return err
	}
	if strings.TrimSpace(t.Title) == "" {
		return fsstore.Invalidf("empty task title")
	}
	if err := fsstore.CheckTitle(t.Title); err != nil {
		return err
	}
	return b.checkParents(t.Parents)
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
		Locked: locked, Timeout: b.LockTimeout, Cancel: b.Cancel, Now: b.Now}, func(v *Task) string { return v.ID })
}

// Update applies change to task id under its lock: a compare-and-swap,
// since change sees the task as stored and may refuse. The events change
// returns are written, then the document, the commit point (see commit):
// a failure changes nothing a reader sees. updated_at is set and the open
// marker follows the status.
func (b *Board) Update(id string, change func(t *Task, now time.Time) ([]Event, error)) (Task, error) {
	t, _, err := b.update(id, change, false)
	return t, err
}

// update is Update; with keep, the document it replaces is kept until the
// returned Pending says what becomes of the change.
func (b *Board) update(id string, change func(t *Task, now time.Time) ([]Event, error), keep bool) (Task, *Pending, error) {
	if err := fsstore.CheckID("task id", id); err != nil {
		return Task{}, nil, err
	}
	// An unknown task is not found before its lock is taken: taking it
	// would leave a stray sidecar behind (or fail, on a board not yet made).
	if _, err := os.Lstat(b.docPath(id)); errors.Is(err, os.ErrNotExist) {
		return Task{}, nil, fsstore.NotFoundf("kanban task %s not found", id)
	}
	if err := b.ensureDirs(); err != nil {
		return Task{}, nil, err
	}
	unlock, err := fsstore.LockUntil(b.lockPath(id), b.LockTimeout, b.Cancel)
	if err != nil {
		return Task{}, nil, err
	}
	defer unlock()
	t, pending, err := b.apply(id, change, keep)
	if errors.Is(err, errStaleRead) {
		// The document read was a stale view, and a later read saw the
		// newer one: the change is decided again on that one (a claim of
		// a task another host claimed is then refused by the rules).
		t, pending, err = b.apply(id, change, keep)
	}
	return t, pending, err
}

// apply is update's work under the task's lock: read, change, commit.
func (b *Board) apply(id string, change func(t *Task, now time.Time) ([]Event, error), keep bool) (Task, *Pending, error) {
	t, err := b.read(id, true)
	if err != nil {
		return Task{}, nil, err
	}
	committed := t.UpdatedAt
	now := b.Now()
	events, err := change(&t, now)
	if err != nil {
		return t, nil, err
	}
	ts := fsstore.TimeOf(now)
	t.UpdatedAt = ts
	for i := range events {
		// An event is committed with the document whose updated_at is its
		// ts: readers take a later one for an uncommitted change's.
		events[i].TS = ts
	}
	pending, err := b.commit(&t, committed, events, now, keep)
	if err != nil {
		return Task{}, nil, err
	}
	if !t.Open() {
		// After the commit point: a marker left behind is stale, which
		// OpenTasks sees and removes.
		if err := os.Remove(filepath.Join(b.openDir(), id)); err != nil && !errors.Is(err, os.ErrNotExist) {
			b.Warn(fmt.Sprintf("kanban task %s is %s, but its open marker stays: %v", id, t.Status, err))
		}
	}
	return t, pending, nil
}

// commit stores a change of task t: first its events, appended to the
// task's events log and synced, then its document, written atomically:
// the commit point. If the document cannot be written the events are cut
// back, so a failed change leaves the log as it was. A crash between the
// two leaves events whose ts is later than the document's updated_at
// (committed, "" for a task not yet created): readers skip them, and the
// next commit, under the same locks, moves them aside to
// <log>.uncommitted-<unix> before it appends, unless the document read
// under the lock was a stale view of another host's committed change (see
// cutUncommitted). With keep, the document being replaced is first linked
// to a hidden name (a link needs no space on a full disk), for the
// returned Pending to put back or drop. The caller holds the task's lock.
func (b *Board) commit(t *Task, committed fsstore.Time, events []Event, now time.Time, keep bool) (*Pending, error) {
	path := b.eventsPath(t.ID)
	unlock, err := fsstore.LockUntil(path+".lock", b.LockTimeout, b.Cancel)
	if err != nil {
		return nil, err
	}
	defer unlock()
	_, err = os.Lstat(path)
	made := errors.Is(err, os.ErrNotExist)
	f, moved, err := fsstore.OpenAppend(path, now)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if moved != "" {
		b.Warn("torn tail moved aside to " + moved)
	}
	if err := b.cutUncommitted(f, t.ID, committed, now); err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	lines := make([][]byte, len(events))
	for i, ev := range events {
		line, _ := json.Marshal(ev)
		lines[i] = append(line, '\n')
	}
	var pending *Pending
	err = fsstore.AppendThen(f, made, lines, func() error {
		if keep {
			pending = &Pending{b: b, events: fi.Size(), undo: filepath.Join(b.tasksDir(), "."+t.ID+".json.tmp-undo-"+fsstore.NewID(now))}
			if err := os.Link(b.docPath(t.ID), pending.undo); err != nil {
				return fmt.Errorf("keep the document of kanban task %s: %w", t.ID, err)
			}
		}
		err := fsstore.WriteDoc(b.docPath(t.ID), t)
		if err != nil && pending != nil {
			os.Remove(pending.undo)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if pending != nil {
		pending.Task = *t
	}
	return pending, nil
}

// cutUncommitted moves aside the events at the end of the log f of task
// id that a change appended but never committed: those whose ts is later
// than the task document's updated_at, committed. "commented" lines, which
// boards before comments were read from their own log wrote without
// changing the document, end the search. Such events are first checked
// against a fresh document (awaitFresh): when it has changed since it was
// read, they are another host's committed change, and the change is
// refused instead.
func (b *Board) cutUncommitted(f *os.File, id string, committed fsstore.Time, now time.Time) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	cut := int64(-1)
	err = fsstore.EachLineBackward(f, fi.Size(), func(line []byte, off int64) bool {
		var ev Event
		if json.Unmarshal(line, &ev) != nil || ev.Type == EventCommented || !committed.Before(ev.TS) {
			return false
		}
		cut = off
		return true
	})
	if err != nil || cut < 0 {
		return err
	}
	if err := b.awaitFresh(id, committed); err != nil {
		return err
	}
	aside, err := fsstore.MoveTailAside(f, cut, fmt.Sprintf(".uncommitted-%d", now.Unix()))
	if err != nil {
		return err
	}
	b.Warn("events of a change that was never committed moved aside to " + aside)
	return nil
}

// awaitFresh re-reads the document of task id, which read as of
// committed ("" when it was not found), every stalePoll for staleWindow,
// each time with a fresh open. A document that has changed since shows
// that the read was a stale view: another host committed a change that
// was not yet visible here, and the change is refused with ErrRefused
// (errStaleRead) before it writes anything. A document that stays as read
// leaves the events to a crash, as do any events on a local filesystem,
// where a read is never a stale view: there the crash is handled at once.
func (b *Board) awaitFresh(id string, committed fsstore.Time) error {
	if !b.shared() {
		return nil
	}
	for range staleWindow / stalePoll {
		b.Sleep(stalePoll)
		var cur Task
		err := fsstore.ReadDoc(b.docPath(id), &cur)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if cur.UpdatedAt != committed {
			return fsstore.Refusedf("kanban task %s changed since it was read (%w); nothing written", id, errStaleRead)
		}
	}
	return nil
}

// shared is Shared, or whether the board's directory is on FUSE or a
// network filesystem.
func (b *Board) shared() bool {
	if b.Shared != nil {
		return b.Shared()
	}
	_, shared := fsstore.NetworkFS(b.Dir)
	return shared
}

// Pending is a claim whose outcome is not stored yet: the dispatcher
// claims a task, starts its worker, then stores how that went. Until it
// does, the task's previous document is kept under a hidden name, so that
// Undo can put it back by a rename, which needs no space, when not even a
// failed start can be written (a full disk). Keep or Undo must be called.
type Pending struct {
	Task   Task // as claimed
	b      *Board
	undo   string // the previous document, kept
	events int64  // the size of the events log before the claim
}

// Keep drops the previous document: the claim stands, or a later change
// of the task has been stored. A link that cannot be removed is a stray
// temp file that fsck --repair moves to lost+found.
func (p *Pending) Keep() {
	if err := os.Remove(p.undo); err != nil {
		p.b.Warn(fmt.Sprintf("kanban task %s: %v", p.Task.ID, err))
	}
}

// Undo puts the task's previous document back and cuts the claim's events
// off its log, unless the task has changed since the claim (then the
// claim stands, and Undo says so with ErrRefused). A crash or a failure
// halfway leaves the document restored with the claim's events still in
// the log: later than the document, they are skipped by readers and moved
// aside by the next change.
func (p *Pending) Undo() error {
	b, id := p.b, p.Task.ID
	unlock, err := fsstore.LockUntil(b.lockPath(id), b.LockTimeout, b.Cancel)
	if err != nil {
		return err
	}
	defer unlock()
	cur, err := b.read(id, true)
	if err != nil {
		return err
	}
	if cur.UpdatedAt != p.Task.UpdatedAt || cur.CurrentRunID != p.Task.CurrentRunID {
		p.Keep()
		return fsstore.Refusedf("kanban task %s has changed since its claim, which stands", id)
	}
	if err := os.Rename(p.undo, b.docPath(id)); err != nil {
		return fmt.Errorf("undo the claim of kanban task %s: %w", id, err)
	}
	if err := fsstore.SyncDir(b.tasksDir()); err != nil {
		return fmt.Errorf("undo the claim of kanban task %s: %w", id, err)
	}
	path := b.eventsPath(id)
	unlockEvents, err := fsstore.LockUntil(path+".lock", b.LockTimeout, b.Cancel)
	if err != nil {
		return err
	}
	defer unlockEvents()
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(p.events); err != nil {
		return fmt.Errorf("undo the claim of kanban task %s: cut its events: %w", id, err)
	}
	return fsstore.SyncLog(f)
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

// AddComment appends a comment to task id: one line of its comments log,
// the only file it writes. Events reads it as a "commented" event.
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
	if err := b.appendLine(b.commentsPath(id), line); err != nil {
		return Comment{}, err
	}
	return c, nil
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

// Events returns the events of task id, oldest first: those of its log
// that were committed with its document (see commit), and a "commented"
// event (by the comment's author) for each comment, in time order, a
// comment before an event of the same time. A task that does not exist
// has none.
func (b *Board) Events(id string) ([]Event, error) {
	t, err := b.Get(id)
	if errors.Is(err, fsstore.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var logged []Event
	err = b.scan(b.eventsPath(id), func(line []byte) {
		var e Event
		// A "commented" line is an older board's copy of a comment, which
		// is read from the comments log.
		if json.Unmarshal(line, &e) == nil && e.Type != EventCommented && !t.UpdatedAt.Before(e.TS) {
			logged = append(logged, e)
		}
	})
	if err != nil {
		return nil, err
	}
	comments, err := b.Comments(id)
	if err != nil {
		return nil, err
	}
	out := make([]Event, 0, len(logged)+len(comments))
	for _, c := range comments {
		for len(logged) > 0 && logged[0].TS.Before(c.TS) {
			out, logged = append(out, logged[0]), logged[1:]
		}
		out = append(out, Event{TS: c.TS, Type: EventCommented, Detail: c.Author})
	}
	return append(out, logged...), nil
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

// appendLine appends a line to the comments log at path under a lock of
// its own, so comments do not wait for a claim.
func (b *Board) appendLine(path string, line []byte) error {
	if err := b.ensureDirs(); err != nil {
		return err
	}
	unlock, err := fsstore.LockUntil(path+".lock", b.LockTimeout, b.Cancel)
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

// Check checks the board's tasks and their logs (see CheckTree), and
// reports a log whose task has no document, nor a copy of one kept aside
// by a quarantine: the events of a create that crashed before its
// document. With repair it is moved to lostFound. It also reports a task
// whose events log records more claims than its document holds runs (see
// checkClaims), which repair cannot mend, and the subtasks a task does not
// wait for (checkSubtasks).
func (b *Board) Check(repair bool, lostFound string) ([]fsstore.Finding, error) {
	out, err := fsstore.CheckTree(b.Dir, func(log string) string { return log + ".lock" }, b.LockTimeout, repair, lostFound)
	if err != nil {
		return out, err
	}
	entries, err := os.ReadDir(b.tasksDir())
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	// names holds the files, and the files a copy kept aside was made
	// from: a task whose document was quarantined has its events.
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
		if of, ok := fsstore.AsideOf(e.Name()); ok {
			names[of] = true
		}
	}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".events.jsonl")
		if !ok {
			id, ok = strings.CutSuffix(e.Name(), ".comments.jsonl")
		}
		if !ok || names[id+".json"] {
			continue
		}
		path := filepath.Join(b.tasksDir(), e.Name())
		f := fsstore.Finding{Path: path, What: "log of a task that has no document (a create that did not finish)", Problem: true}
		if repair {
			f.Repaired, f.What = fsstore.MoveToLostFound(path, lostFound, f.What)
		}
		out = append(out, f)
	}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || fsstore.CheckID("task id", id) != nil {
			continue
		}
		f, err := b.checkClaims(id)
		if err != nil {
			return out, err
		}
		if f != nil {
			out = append(out, *f)
		}
	}
	subs, err := b.checkSubtasks(repair)
	return append(out, subs...), err
}

// checkClaims compares the committed claims of task id's events log with
// the runs its document holds: each claim adds one run in the same change,
// so a log with more claims than runs is a claim whose document another
// claim overwrote (two hosts that each saw the task ready through a stale
// cache of a network filesystem). The events log is the record of what
// happened; the lost run cannot be made again, so this stays a problem
// after repair. A document that does not parse is CheckTree's to report.
// The document is read before the log, so the events of a change made
// meanwhile are later than its updated_at and not counted.
func (b *Board) checkClaims(id string) (*fsstore.Finding, error) {
	var t Task
	if err := fsstore.ReadDoc(b.docPath(id), &t); err != nil || t.ID != id {
		return nil, nil
	}
	f, size, err := fsstore.OpenSized(b.eventsPath(id))
	if f == nil || err != nil {
		return nil, err
	}
	defer f.Close()
	claims := 0
	// A torn tail is CheckTree's to report.
	_, err = fsstore.ScanLines(f, size, func(line []byte, _ int64) error {
		var ev Event
		if json.Unmarshal(line, &ev) == nil && ev.Type == EventClaimed && !t.UpdatedAt.Before(ev.TS) {
			claims++
		}
		return nil
	})
	if err != nil || claims <= len(t.Runs) {
		return nil, err
	}
	return &fsstore.Finding{Path: b.docPath(id), Problem: true, What: fmt.Sprintf(
		"kanban task %s: its events log records %d %s, its document holds %d %s: a claim overwrote the document that held another's run "+
			"(not repaired: the events log is the record of what happened, and the lost run cannot be made again)",
		id, claims, plural(claims, "claim", "claims"), len(t.Runs), plural(len(t.Runs), "run", "runs"))}, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
