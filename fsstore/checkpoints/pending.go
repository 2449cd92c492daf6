package checkpoints

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// Pending is a change in flight: appended, synced, to its session's
// pending log before a tool call (or a restore) touches a file, and taken
// out once the transcript line that records the changes is stored. One
// left behind is a crash between the two; see the package doc for how it
// is resolved.
type Pending struct {
	SessionID string `json:"session_id"`
	// CallID is the tool call's id; "" for a restore.
	CallID  string   `json:"call_id,omitempty"`
	Changes []Change `json:"changes"`
}

// RestoreCall is the CallID of a restore's pending record.
const RestoreCall = "restore"

// pendingLine is a line of a pending log: a call's record as its last
// SetPending wrote it, or, with Done, the mark ClearPending leaves when
// other calls of the session are still in flight.
type pendingLine struct {
	Pending
	Done bool `json:"done,omitempty"`
}

// DefaultLockTimeout bounds the wait for a pending log's lock when the
// store has no LockTimeout.
const DefaultLockTimeout = 10 * time.Second

// compactAt is the size past which ClearPending, with other calls still
// in flight, rewrites the log with only theirs: a record left stale by a
// crash (fsck --repair takes it out) would otherwise keep the log from
// ever being emptied. A variable for its test.
var compactAt int64 = 256 << 10

// pendingLog is the pending log of a session: pending/<session>.jsonl,
// guarded by pending/<session>.lock. A session id is checked before it
// becomes a name (DESIGN.md invariant 7); a call id, which a model
// chose, never becomes one.
func (s *Store) pendingLog(sessionID string) (string, error) {
	if err := fsstore.CheckID("session id", sessionID); err != nil {
		return "", err
	}
	return filepath.Join(s.Dir, "pending", sessionID+".jsonl"), nil
}

// lockOf is the lock sidecar of the pending log at path.
func lockOf(log string) string { return strings.TrimSuffix(log, ".jsonl") + ".lock" }

func (s *Store) lockTimeout() time.Duration {
	if s.LockTimeout > 0 {
		return s.LockTimeout
	}
	return DefaultLockTimeout
}

// SetPending appends p to its session's pending log and syncs it: one
// write and one sync, the log being there from the session's first change
// (its create is committed to pending/ once). It replaces the record of
// the same call: a log's last line for a call is its record.
func (s *Store) SetPending(p Pending) error {
	log, err := s.pendingLog(p.SessionID)
	if err != nil {
		return err
	}
	line, err := json.Marshal(pendingLine{Pending: p})
	if err != nil {
		return err
	}
	if err := fsstore.EnsureDir(filepath.Dir(log)); err != nil {
		return err
	}
	unlock, err := fsstore.Lock(lockOf(log), s.lockTimeout())
	if err != nil {
		return err
	}
	defer unlock()
	f, err := fsstore.AppendLog(log, time.Now(), func(string) {}, [][]byte{append(line, '\n')}, func() error { return nil })
	if err != nil {
		return err
	}
	return f.Close()
}

// ClearPending takes the record of a call out of its session's pending
// log, once its changes are in the transcript. A call without one is no
// error. Nothing is synced: a record a crash brings back is stale, and
// fsck --repair takes it out. The log is emptied when no other call is
// in flight, else a Done line is appended.
func (s *Store) ClearPending(sessionID, callID string) error {
	log, err := s.pendingLog(sessionID)
	if err != nil {
		return err
	}
	return s.clearPending(log, sessionID, callID, false)
}

// clearPending takes the record of call callID of session sessionID out
// of the log at path, synced when sync is set (fsck --repair).
func (s *Store) clearPending(log, sessionID, callID string, sync bool) error {
	if _, err := os.Lstat(log); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	unlock, err := fsstore.Lock(lockOf(log), s.lockTimeout())
	if err != nil {
		return err
	}
	defer unlock()
	f, _, err := fsstore.OpenAppend(log, time.Now())
	if err != nil {
		return err
	}
	defer f.Close()
	size, err := fsstore.FreshSize(f)
	if err != nil {
		return err
	}
	recs, err := readPending(f, size)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(recs, func(p Pending) bool { return p.SessionID == sessionID && p.CallID == callID })
	if i < 0 {
		return nil
	}
	rest := slices.Delete(recs, i, i+1)
	switch {
	case len(rest) == 0:
		if err := f.Truncate(0); err != nil {
			return fsstore.PathErr("empty", log, err)
		}
		if sync {
			return fsstore.SyncLog(f)
		}
		return nil
	case size > compactAt:
		var b []byte
		for _, p := range rest {
			line, err := json.Marshal(pendingLine{Pending: p})
			if err != nil {
				return err
			}
			b = append(append(b, line...), '\n')
		}
		// Synced, and its rename too: the records in flight it keeps
		// must not be lost by a crash.
		return fsstore.WriteFileAtomic(log, b)
	}
	line, err := json.Marshal(pendingLine{Pending: Pending{SessionID: sessionID, CallID: callID}, Done: true})
	if err != nil {
		return err
	}
	lines := [][]byte{append(line, '\n')}
	if sync {
		return fsstore.AppendLines(f, lines)
	}
	return fsstore.WriteLines(f, lines)
}

// readPending returns the records in flight in the first size bytes of
// the pending log f, in the order of their first line: each call's last
// record, unless a Done line follows it. A torn tail (an append a crash
// cut short, whose change was never made) and a line that does not
// decode are skipped.
func readPending(f *os.File, size int64) ([]Pending, error) {
	var out []Pending
	_, err := fsstore.ScanLines(f, size, func(line []byte, _ int64) error {
		var l pendingLine
		if json.Unmarshal(line, &l) != nil {
			return nil
		}
		i := slices.IndexFunc(out, func(p Pending) bool { return p.SessionID == l.SessionID && p.CallID == l.CallID })
		switch {
		case l.Done && i >= 0:
			out = slices.Delete(out, i, i+1)
		case l.Done:
		case i >= 0:
			out[i] = l.Pending
		default:
			out = append(out, l.Pending)
		}
		return nil
	})
	return out, err
}

// pendingIn returns the records in flight in the pending log at path.
func (s *Store) pendingIn(log string) ([]Pending, error) {
	unlock, err := fsstore.RLock(lockOf(log), s.lockTimeout())
	if err != nil {
		return nil, err
	}
	defer unlock()
	f, size, err := fsstore.OpenSizedFlag(log, os.O_RDONLY|syscall.O_NOFOLLOW)
	if err != nil || f == nil {
		return nil, err
	}
	defer f.Close()
	return readPending(f, size)
}

// PendingOf returns the pending record of a call, if there is one.
func (s *Store) PendingOf(sessionID, callID string) (Pending, bool, error) {
	log, err := s.pendingLog(sessionID)
	if err != nil {
		return Pending{}, false, err
	}
	if _, err := os.Lstat(log); errors.Is(err, fs.ErrNotExist) {
		return Pending{}, false, nil
	}
	recs, err := s.pendingIn(log)
	if err != nil {
		return Pending{}, false, err
	}
	for _, p := range recs {
		if p.SessionID == sessionID && p.CallID == callID {
			return p, true, nil
		}
	}
	return Pending{}, false, nil
}

// loggedPending is a pending record and the log that holds it.
type loggedPending struct {
	log string
	Pending
}

// AllPending returns every pending record.
func (s *Store) AllPending() ([]Pending, error) {
	all, err := s.allPending()
	out := make([]Pending, len(all))
	for i, l := range all {
		out[i] = l.Pending
	}
	return out, err
}

// allPending returns every pending record with its log, the logs in the
// order of their names.
func (s *Store) allPending() ([]loggedPending, error) {
	dir := filepath.Join(s.Dir, "pending")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []loggedPending
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		log := filepath.Join(dir, e.Name())
		recs, err := s.pendingIn(log)
		if err != nil {
			return nil, err
		}
		for _, p := range recs {
			out = append(out, loggedPending{log: log, Pending: p})
		}
	}
	return out, nil
}

// dropPending is fsck --repair's removal of a pending record: written to
// lostFound as a document (pending-<hash of its session and call>.json),
// then taken out of its log, synced. It returns whether it was, and what
// with what appended.
func (s *Store) dropPending(p loggedPending, lostFound, what string) (bool, string) {
	if err := fsstore.EnsureDir(lostFound); err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	h := sha256.Sum256([]byte(p.SessionID + "\x00" + p.CallID))
	dst := filepath.Join(lostFound, "pending-"+hex.EncodeToString(h[:16])+".json")
	if err := fsstore.WriteDoc(dst, p.Pending); err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	if err := s.clearPending(p.log, p.SessionID, p.CallID, true); err != nil {
		return false, fmt.Sprintf("%s (%v)", what, err)
	}
	return true, what + "; moved to " + dst
}

// Paths returns the sorted paths of cs.
func Paths(cs []Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Path
	}
	sort.Strings(out)
	return out
}
