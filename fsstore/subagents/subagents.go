package subagents

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// States of a claim.
const (
	Running = "running"
	Done    = "done"
)

// Claim is the record of one child's claim.
type Claim struct {
	SessionID       string       `json:"session_id"`
	ParentSessionID string       `json:"parent_session_id"`
	ToolCallID      string       `json:"tool_call_id"`
	TaskIndex       int          `json:"task_index"`
	State           string       `json:"state"`
	Runs            int          `json:"runs"`
	Host            string       `json:"host"`
	PID             int          `json:"pid"`
	ClaimedAt       fsstore.Time `json:"claimed_at"`
	FinishedAt      fsstore.Time `json:"finished_at"`
}

// Store keeps the claims of one profile in Dir.
type Store struct {
	Dir  string
	Host string
	// LockTimeout bounds the wait for a claim another holds (--lock-timeout).
	LockTimeout time.Duration
	// Now is the clock; tests replace it.
	Now func() time.Time
}

// Open returns the store of the profile whose directory is profileDir;
// nothing is created until the first claim.
func Open(profileDir string) *Store {
	return &Store{Dir: filepath.Join(profileDir, "subagents"), Host: fsstore.ThisHost(), Now: time.Now}
}

func (s *Store) docPath(id string) string  { return filepath.Join(s.Dir, id+".json") }
func (s *Store) lockPath(id string) string { return filepath.Join(s.Dir, id+".lock") }

// Get returns the claim of child id. One never claimed is
// fsstore.ErrNotFound.
func (s *Store) Get(id string) (Claim, error) {
	if err := fsstore.CheckID("session id", id); err != nil {
		return Claim{}, err
	}
	return fsstore.ReadRecord(fsstore.Record{What: "sub-agent claim", ID: id, Path: s.docPath(id), Lock: s.lockPath(id),
		Timeout: 0, Now: s.Now}, func(c *Claim) string { return c.SessionID })
}

// Held is a claim this process holds: its record as written, until
// Release.
type Held struct {
	Claim
	store   *Store
	release func()
}

// Claim takes the claim of the child c names (c.SessionID, with its
// parent, call and task): its lock, then its record, state running, runs
// one more than before, this host and pid, written and synced. A claim
// held is waited for, up to LockTimeout or until cancel closes: a lock's
// descriptor may outlive its process for a moment (a child it was
// starting holds a copy until its exec closes it). A claim still held
// then is refused, naming the process its record names. A child whose
// record says done is returned as it is, still held, for the caller to
// read its answer.
func (s *Store) Claim(c Claim, cancel <-chan struct{}) (*Held, error) {
	if err := fsstore.CheckID("session id", c.SessionID); err != nil {
		return nil, err
	}
	if err := fsstore.EnsureDir(s.Dir); err != nil {
		return nil, err
	}
	release, err := fsstore.LockUntil(s.lockPath(c.SessionID), s.LockTimeout, cancel)
	var timeout *fsstore.LockTimeoutError
	var interrupted *fsstore.LockInterruptedError
	if errors.As(err, &timeout) || errors.As(err, &interrupted) {
		holder := "another process"
		if old, gerr := s.Get(c.SessionID); gerr == nil {
			holder = fmt.Sprintf("pid %d on %s since %s", old.PID, old.Host, old.ClaimedAt)
		}
		return nil, fsstore.Refusedf("sub-agent %s is running in %s", c.SessionID, holder)
	}
	if err != nil {
		return nil, err
	}
	h := &Held{store: s, release: release}
	old, err := fsstore.ReadRecord(fsstore.Record{What: "sub-agent claim", ID: c.SessionID, Path: s.docPath(c.SessionID),
		Lock: s.lockPath(c.SessionID), Locked: true, Now: s.Now}, func(c *Claim) string { return c.SessionID })
	switch {
	case err == nil && old.State == Done:
		h.Claim = old
		return h, nil
	case err == nil:
		c.Runs = old.Runs
	case !errors.Is(err, fsstore.ErrNotFound):
		release()
		return nil, err
	}
	c.State, c.Runs, c.Host, c.PID = Running, c.Runs+1, s.Host, os.Getpid()
	c.ClaimedAt, c.FinishedAt = fsstore.TimeOf(s.Now()), ""
	if err := fsstore.WriteDoc(s.docPath(c.SessionID), &c); err != nil {
		release()
		return nil, err
	}
	h.Claim = c
	return h, nil
}

// Finish records the held child done, synced.
func (h *Held) Finish() error {
	if h.State == Done {
		return nil
	}
	c := h.Claim
	c.State, c.FinishedAt = Done, fsstore.TimeOf(h.store.Now())
	if err := fsstore.WriteDoc(h.store.docPath(c.SessionID), &c); err != nil {
		return err
	}
	h.Claim = c
	return nil
}

// Release lets the claim go; the record stays.
func (h *Held) Release() { h.release() }

// Forget removes the claims of the sessions ids, deleted or pruned: no
// record of a sub-agent outlives its session. One never claimed is no
// error; a claim held now (its child running) is left, and refused.
func (s *Store) Forget(ids ...string) error {
	var errs []error
	for _, id := range ids {
		if fsstore.CheckID("session id", id) != nil {
			continue
		}
		if _, err := os.Stat(s.docPath(id)); errors.Is(err, os.ErrNotExist) {
			continue
		}
		release, err := fsstore.Lock(s.lockPath(id), 0)
		if err != nil {
			errs = append(errs, fsstore.Refusedf("the claim of sub-agent %s is held: %v", id, err))
			continue
		}
		if err := os.Remove(s.docPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		os.Remove(s.lockPath(id)) // a lock file is no record; one left is harmless
		release()
	}
	return errors.Join(errs...)
}

// Check is fsck's check of the claims (fsstore.CheckTree): a record that
// does not parse is a problem, moved aside with repair, never replaced;
// stray temp files of an interrupted write go to lostFound. A claim's
// lock is no record and is left.
func (s *Store) Check(repair bool, lostFound string) ([]fsstore.Finding, error) {
	noLogs := func(string) string { return "" } // the store holds documents only
	return fsstore.CheckTree(s.Dir, noLogs, s.LockTimeout, repair, lostFound)
}
