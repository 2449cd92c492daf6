package cron

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/hosts"
)

// Catch-up modes: what a tick does with the occurrences that fell due
// while nothing ticked (catch_up).
const (
	CatchUpNone = "none" // skip them, recorded; only an occurrence on time runs
	CatchUpOnce = "once" // run one for all of them, recording how many were missed
	CatchUpAll  = "all"  // run each, one after the other
)

// Session modes of a prompt job (session).
const (
	SessionNew      = "new"      // each run in a session of its own
	SessionContinue = "continue" // every run in the one session the job keeps
)

// Run statuses, as the runs log and `cron runs` spell them. A finished
// run's status is its task's (succeeded, failed, killed, lost).
const (
	Claimed   = "claimed"
	Started   = "started"
	Succeeded = "succeeded"
	Failed    = "failed"
	Killed    = "killed"
	Lost      = "lost"
	Skipped   = "skipped"
)

// DefaultMaxFailures is how many failed runs in a row pause a job when
// cron.max_failures is not set.
const DefaultMaxFailures = 3

// ClaimLease is how long a claimed occurrence may wait for its task: a
// claim older than that whose run has not started, or whose task cannot
// be found, is recorded lost by the next tick that looks at the job, and
// never run. Starting a task takes milliseconds; the margin is for a busy
// disk and for clocks of hosts a few seconds apart.
const ClaimLease = 60 * time.Second

// OnTime is how late an occurrence may be and still run under catch-up
// none: a ticker that wakes once a minute (crontab) is always a little
// late.
const OnTime = time.Minute

// maxCount bounds the occurrences one claim counts as missed (a job every
// second, after a week off, has 604,800); the count says "at least".
const maxCount = 1 << 20

// Job is the document of a scheduled job. Every field is always present
// in JSON. next_due is the occurrence the next claim takes ("" when none
// is left: an at job that ran); run is the run in progress (claimed, or
// started as a background task), null when none.
type Job struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Schedule string `json:"schedule"`
	// TZ is the IANA zone a cron expression and an "at" time are read
	// in; "Local" is the zone of the host that ticks.
	TZ      string   `json:"tz"`
	Command []string `json:"command"`
	Prompt  string   `json:"prompt"`
	// Session is new or continue (prompt jobs); SessionID is the session a
	// continue job keeps, made by its first run.
	Session   string   `json:"session"`
	SessionID string   `json:"session_id"`
	Tools     []string `json:"tools"`
	Cwd       string   `json:"cwd"`
	CatchUp   string   `json:"catch_up"`
	Paused    bool     `json:"paused"`
	// PausedReason says who paused the job, or which failures did.
	PausedReason  string       `json:"paused_reason"`
	NextDue       fsstore.Time `json:"next_due"`
	FailureStreak int          `json:"failure_streak"`
	LastRun       *LastRun     `json:"last_run"`
	Run           *Run         `json:"run"`
	CreatedAt     fsstore.Time `json:"created_at"`
	UpdatedAt     fsstore.Time `json:"updated_at"`
}

// Run is a job's run in progress: its occurrence claimed by a ticker
// (host, pid), and once started its background task.
type Run struct {
	Occurrence fsstore.Time `json:"occurrence"`
	Manual     bool         `json:"manual"`
	Missed     int          `json:"missed"`
	Host       string       `json:"host"`
	PID        int          `json:"pid"`
	ClaimedAt  fsstore.Time `json:"claimed_at"`
	TaskID     string       `json:"task_id"`
	SessionID  string       `json:"session_id"`
	StartedAt  fsstore.Time `json:"started_at"`
}

// LastRun is how a job's last finished run ended.
type LastRun struct {
	Occurrence fsstore.Time `json:"occurrence"`
	Status     string       `json:"status"`
	ExitCode   *int         `json:"exit_code"`
	TaskID     string       `json:"task_id"`
	SessionID  string       `json:"session_id"`
	FinishedAt fsstore.Time `json:"finished_at"`
}

// Event is a line of the runs log. Each run has a claimed line, then a
// started line and a finished one, or a lost one; occurrences that a
// catch-up of none passed over have one skipped line (occurrence the
// first, until the last, missed how many).
type Event struct {
	Event string `json:"event"`
	JobID string `json:"job_id"`
	// Name is the job's name when it was claimed (claimed lines only):
	// the runs of a removed job are found by the name it had.
	Name       string       `json:"name,omitempty"`
	Occurrence fsstore.Time `json:"occurrence"`
	At         fsstore.Time `json:"at"`
	Manual     bool         `json:"manual,omitempty"`
	Missed     int          `json:"missed,omitempty"`
	Until      fsstore.Time `json:"until,omitempty"`
	Host       string       `json:"host,omitempty"`
	PID        int          `json:"pid,omitempty"`
	TaskID     string       `json:"task_id,omitempty"`
	SessionID  string       `json:"session_id,omitempty"`
	Status     string       `json:"status,omitempty"`
	ExitCode   *int         `json:"exit_code,omitempty"`
	DurationMS int64        `json:"duration_ms,omitempty"`
	Error      string       `json:"error,omitempty"`
}

// Outcome is how a run's task ended.
type Outcome struct {
	Status     string
	ExitCode   *int
	DurationMS int64
	Error      string
}

// Store keeps the scheduled jobs of one profile in Dir:
//
//	jobs/<id>.json   a job's document
//	jobs/<id>.lock   its sidecar lock: claims, starts and finishes
//	runs.jsonl       the runs log, every job's, append-only
//	runs.lock        its lock
//	due.json         the due index: each job's next instant of interest,
//	                 in time order
//	due.lock         its lock
type Store struct {
	Dir         string
	LockTimeout time.Duration
	Now         func() time.Time
	Warn        func(string)
	// Host and PID name the ticker in the claims it makes.
	Host string
	PID  int
	// MaxFailures is how many failed runs in a row pause a job.
	MaxFailures int
	// TaskOutcome says how the task of a started run ended (done false
	// while it runs); a task that does not exist is fsstore.ErrNotFound.
	// Nil leaves started runs to the finish their task records.
	TaskOutcome func(taskID string) (out Outcome, done bool, err error)
	// Skew is how much a claim takes off Now to judge what is due: this
	// host's clock ahead of the shared filesystem's (hosts.Clock.Offset);
	// an error refuses the claim. Nil takes nothing off.
	Skew func() (time.Duration, error)
}

// NewStore returns the cron store of the profile whose directory is
// profileDir. Nothing is created until the first write.
func NewStore(profileDir string, lockTimeout time.Duration, warn func(string)) *Store {
	return &Store{Dir: filepath.Join(profileDir, "cron"), LockTimeout: lockTimeout, Now: fsstore.Now, Warn: warn,
		Host: fsstore.ThisHost(), PID: os.Getpid(), MaxFailures: DefaultMaxFailures,
		Skew: hosts.NewClock(profileDir, lockTimeout, warn).Offset}
}

func (s *Store) jobsDir() string           { return filepath.Join(s.Dir, "jobs") }
func (s *Store) docPath(id string) string  { return filepath.Join(s.jobsDir(), id+".json") }
func (s *Store) lockPath(id string) string { return filepath.Join(s.jobsDir(), id+".lock") }
func (s *Store) runsPath() string          { return filepath.Join(s.Dir, "runs.jsonl") }
func (s *Store) runsLock() string          { return filepath.Join(s.Dir, "runs.lock") }
func (s *Store) duePath() string           { return filepath.Join(s.Dir, "due.json") }
func (s *Store) dueLock() string           { return filepath.Join(s.Dir, "due.lock") }

func (s *Store) record(id string, locked bool) fsstore.Record {
	return fsstore.Record{What: "job", ID: id, Path: s.docPath(id), Lock: s.lockPath(id), Locked: locked, Timeout: s.LockTimeout, Now: s.Now}
}

func (s *Store) read(id string, locked bool) (Job, error) {
	if err := fsstore.CheckID("job id", id); err != nil {
		return Job{}, err
	}
	return fsstore.ReadRecord(s.record(id, locked), func(j *Job) string { return j.ID })
}

// Get reads job id.
func (s *Store) Get(id string) (Job, error) { return s.read(id, false) }

// Location is the zone a job's schedule is read in.
func Location(tz string) (*time.Location, error) {
	if tz == "" || tz == "Local" {
		return time.Local, nil
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fsstore.Invalidf("unknown time zone %q (use an IANA name such as Europe/Berlin)", tz)
	}
	return loc, nil
}

// scheduleOf parses j's schedule; every falls from the job's creation.
func scheduleOf(j Job) (Schedule, error) {
	loc, err := Location(j.TZ)
	if err != nil {
		return nil, err
	}
	created, _ := j.CreatedAt.Instant()
	return ParseSchedule(j.Schedule, loc, created)
}

// check says what is wrong with a job as a user gave it.
func check(j Job) error {
	if strings.TrimSpace(j.Name) == "" {
		return fsstore.Invalidf("a job needs a name")
	}
	if err := fsstore.CheckTitle(j.Name); err != nil {
		return err
	}
	if (len(j.Command) == 0) == (j.Prompt == "") {
		return fsstore.Invalidf("a job runs a command or a prompt, one of the two")
	}
	if !slices.Contains([]string{CatchUpNone, CatchUpOnce, CatchUpAll}, j.CatchUp) {
		return fsstore.Invalidf("catch-up %q: use none, once or all", j.CatchUp)
	}
	if !slices.Contains([]string{SessionNew, SessionContinue}, j.Session) {
		return fsstore.Invalidf("session %q: use new or continue", j.Session)
	}
	if j.Session == SessionContinue && j.Prompt == "" {
		return fsstore.Invalidf("--session continue is for prompt jobs")
	}
	_, err := scheduleOf(j)
	return err
}

// Add writes a new job, due at its first occurrence after now. Its name
// must be new. Commit point: the job's document; the due index takes the
// job first, so a crash between the two leaves an entry that the next
// tick drops, never a job the index misses.
func (s *Store) Add(j Job) (Job, error) {
	now := s.Now()
	j.ID = fsstore.NewID(now)
	j.CreatedAt, j.UpdatedAt = fsstore.TimeOf(now), fsstore.TimeOf(now)
	if j.CatchUp == "" {
		j.CatchUp = CatchUpOnce
	}
	if j.Session == "" {
		j.Session = SessionNew
	}
	if j.Command == nil {
		j.Command = []string{}
	}
	if j.Tools == nil {
		j.Tools = []string{}
	}
	if err := check(j); err != nil {
		return Job{}, err
	}
	sched, _ := scheduleOf(j)
	next, ok := sched.Next(now)
	if !ok {
		return Job{}, fsstore.Invalidf("schedule %q has no occurrence after now", j.Schedule)
	}
	j.NextDue = fsstore.TimeOf(next)
	if err := fsstore.EnsureDir(s.jobsDir()); err != nil {
		return Job{}, err
	}
	unlock, err := fsstore.Lock(s.dueLock(), s.LockTimeout)
	if err != nil {
		return Job{}, err
	}
	defer unlock()
	if err := s.nameFree(j.Name, ""); err != nil {
		return Job{}, err
	}
	if err := s.lowerIndex(j.ID, j.NextDue); err != nil {
		return Job{}, err
	}
	if err := fsstore.WriteDoc(s.docPath(j.ID), &j); err != nil {
		return Job{}, err
	}
	return j, fsstore.SyncDir(s.jobsDir())
}

// nameFree refuses name when a job other than self has it. The caller
// holds the due index's lock, which every naming change takes; the
// documents are read without quarantining an unreadable one, which would
// take a job's lock under the index's.
func (s *Store) nameFree(name, self string) error {
	ids, err := fsstore.DocIDs(s.jobsDir())
	if err != nil {
		return err
	}
	for _, id := range ids {
		var j Job
		if err := fsstore.ReadDoc(s.docPath(id), &j); err == nil && j.Name == name && j.ID != self {
			return fsstore.Refusedf("a job named %q exists (%s)", name, j.ID)
		}
	}
	return nil
}

// List reads every job, oldest first. A document that cannot be read is
// reported through Warn and left out.
func (s *Store) List() ([]Job, error) {
	ids, err := fsstore.DocIDs(s.jobsDir())
	if err != nil {
		return nil, err
	}
	slices.Reverse(ids)
	var out []Job
	for _, id := range ids {
		j, err := s.read(id, false)
		if errors.Is(err, fsstore.ErrNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			if errors.Is(err, fsstore.ErrInvalid) {
				continue // not a job's name
			}
			s.Warn(err.Error())
			continue
		}
		out = append(out, j)
	}
	return out, nil
}

// Resolve finds the job ref names: an id, a unique prefix of one, or a
// name.
func (s *Store) Resolve(ref string) (string, error) {
	if ref == "" {
		return "", fsstore.Invalidf("no job named")
	}
	if fsstore.CheckID("job id", ref) == nil {
		if _, err := os.Lstat(s.docPath(ref)); err == nil {
			return ref, nil
		}
	}
	ids, err := fsstore.DocIDs(s.jobsDir())
	if err != nil {
		return "", err
	}
	if m := fsstore.WithPrefix(ids, ref); len(m) == 1 {
		return m[0], nil
	} else if len(m) > 1 {
		return "", fsstore.Ambiguous(ref, m)
	}
	jobs, err := s.List()
	if err != nil {
		return "", err
	}
	for _, j := range jobs {
		if j.Name == ref {
			return j.ID, nil
		}
	}
	return "", fsstore.NotFoundf("job %s not found", ref)
}

// ResolveRuns is Resolve for a reader of the runs log: a ref that names
// no job may name a removed one, whose runs stay: by its id, a unique
// prefix of it, or the name it had when it last ran (the latest job of
// that name).
func (s *Store) ResolveRuns(ref string) (string, error) {
	id, err := s.Resolve(ref)
	if !errors.Is(err, fsstore.ErrNotFound) {
		return id, err
	}
	byName, prefixed := "", map[string]bool{}
	err = s.Events(func(ev Event) {
		if ev.JobID == ref || strings.HasPrefix(ev.JobID, ref) {
			prefixed[ev.JobID] = true
		}
		if ev.Name == ref {
			byName = ev.JobID
		}
	})
	switch {
	case err != nil:
		return "", err
	case prefixed[ref]:
		return ref, nil
	case len(prefixed) == 1:
		for id := range prefixed {
			return id, nil
		}
	case len(prefixed) > 1:
		return "", fsstore.Ambiguous(ref, slices.Sorted(maps.Keys(prefixed)))
	case byName != "":
		return byName, nil
	}
	return "", fsstore.NotFoundf("job %s not found (nor a removed job's runs)", ref)
}

// Update changes job id under its lock and writes it; a change whose
// error is not nil writes nothing. When the schedule, the zone or the
// pause changed, next_due is computed again from now, and the due index
// takes the earlier of its entry and the new one before the document is
// written (see Add). A new name must be free.
func (s *Store) Update(id string, change func(*Job) error) (Job, error) {
	j, unlock, err := s.lockJob(id)
	if err != nil {
		return Job{}, err
	}
	defer unlock()
	before := j
	if err := change(&j); err != nil {
		return Job{}, err
	}
	if err := check(j); err != nil {
		return Job{}, err
	}
	now := s.Now()
	if j.Schedule != before.Schedule || j.TZ != before.TZ || j.Paused != before.Paused {
		j.NextDue = ""
		if sched, err := scheduleOf(j); err == nil {
			if next, ok := sched.Next(now); ok {
				j.NextDue = fsstore.TimeOf(next)
			}
		}
	}
	if !j.Paused {
		j.PausedReason = ""
	}
	j.UpdatedAt = fsstore.TimeOf(now)
	iunlock, err := fsstore.Lock(s.dueLock(), s.LockTimeout)
	if err != nil {
		return Job{}, err
	}
	defer iunlock()
	if j.Name != before.Name {
		if err := s.nameFree(j.Name, j.ID); err != nil {
			return Job{}, err
		}
	}
	if e := entryOf(j); e != "" {
		if err := s.lowerIndex(j.ID, e); err != nil {
			return Job{}, err
		}
	}
	if err := fsstore.WriteDoc(s.docPath(id), &j); err != nil {
		return Job{}, err
	}
	return j, s.refreshLocked([]string{id})
}

// lockJob takes job id's lock and reads its document under it; the
// caller releases the lock with the func returned.
func (s *Store) lockJob(id string) (Job, func(), error) {
	unlock, err := fsstore.Lock(s.lockPath(id), s.LockTimeout)
	if err != nil {
		return Job{}, nil, err
	}
	j, err := s.read(id, true)
	if err != nil {
		unlock()
		return Job{}, nil, err
	}
	return j, unlock, nil
}

// Remove deletes job id's document and lock; its runs stay in the runs
// log. A job with a run in progress is not removed (fsstore.ErrRefused).
func (s *Store) Remove(id string) (Job, error) {
	j, unlock, err := s.lockJob(id)
	if err != nil {
		return Job{}, err
	}
	defer unlock()
	if j.Run != nil {
		return Job{}, fsstore.Refusedf("job %s has a run in progress (occurrence %s); remove it when it has finished", id, j.Run.Occurrence)
	}
	if err := os.Remove(s.docPath(id)); err != nil {
		return Job{}, err
	}
	if err := fsstore.SyncDir(s.jobsDir()); err != nil {
		return Job{}, err
	}
	os.Remove(s.lockPath(id))
	return j, s.RefreshIndex([]string{id})
}

// appendEvents appends lines to the runs log, then calls commit (the
// job's document); a failure of either leaves the log as it was. The
// caller holds the job's lock.
func (s *Store) appendEvents(events []Event, commit func() error) error {
	if len(events) == 0 {
		return commit()
	}
	lines := make([][]byte, 0, len(events))
	for _, ev := range events {
		b, err := marshalLine(ev)
		if err != nil {
			return err
		}
		lines = append(lines, b)
	}
	unlock, err := fsstore.Lock(s.runsLock(), s.LockTimeout)
	if err != nil {
		return err
	}
	defer unlock()
	f, err := fsstore.AppendLog(s.runsPath(), s.Now(), s.Warn, lines, commit)
	if err != nil {
		return err
	}
	return f.Close()
}
