package sessions

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// Idle returns the active sessions of source whose last activity is
// before cutoff, newest first: those a server that ends idle sessions
// (the gateway, gateway.idle_end) should end. It reads the catalog
// backwards and stops at its lines from before after: a session whose
// latest line is that old was as idle at the caller's previous scan,
// whose cutoff was after, since every write to a session (a turn, a
// reopen) adds a line. The zero after reads the whole catalog.
func (s *Store) Idle(source string, cutoff, after time.Time) ([]Session, error) {
	f, size, err := s.openCatalog()
	if f == nil || err != nil {
		return nil, err
	}
	defer f.Close()
	seen := map[string]bool{}
	var out []Session
	err = fsstore.EachLineBackward(f, size, func(line []byte, _ int64) bool {
		if seenLine(line, seen) {
			return true
		}
		var e catalogEntry
		if json.Unmarshal(line, &e) != nil || seen[e.SessionID] || fsstore.CheckID("session id", e.SessionID) != nil {
			return true
		}
		at, err := e.At.Instant()
		if err != nil {
			return true
		}
		if at.Before(after) {
			return false
		}
		seen[e.SessionID] = true
		if !at.Before(cutoff) {
			return true
		}
		sess, err := s.readSession(e.SessionID, false)
		if err != nil {
			// As in List: a session deleted meanwhile is skipped, a
			// damaged one reported and skipped.
			if !errors.Is(err, fsstore.ErrNotFound) {
				s.Warn(err.Error())
			}
			return true
		}
		if idle(sess, source, cutoff) {
			out = append(out, sess)
		}
		return true
	})
	return out, err
}

func idle(sess Session, source string, cutoff time.Time) bool {
	t, err := sess.UpdatedAt.Instant()
	return sess.State == StateActive && sess.Source == source && err == nil && t.Before(cutoff)
}

// EndIdle ends session id with reason if, read again under its lock, it
// is still an active session of source whose last activity is before
// cutoff; it reports whether it did. A reader that comes after sees it
// ended, and a turn reopens it (the gateway's admit, the turn engine).
func (s *Store) EndIdle(id, source string, cutoff time.Time, reason string) (bool, error) {
	if err := fsstore.CheckID("session id", id); err != nil {
		return false, err
	}
	unlock, err := s.lock(id)
	if err != nil {
		return false, err
	}
	defer unlock()
	sess, err := s.readSession(id, true)
	if err != nil || !idle(sess, source, cutoff) {
		return false, err
	}
	now := s.Now()
	sess.State, sess.EndedAt, sess.EndReason = StateEnded, fsstore.TimeOf(now), reason
	sess.UpdatedAt = fsstore.TimeOf(now)
	return true, s.touchCatalogThen(&sess, now, now, func() error { return fsstore.WriteDoc(s.docPath(id), &sess) })
}
