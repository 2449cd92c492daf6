package sessions

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// ActiveSince returns the sessions with activity (a write of any kind) at
// or after cutoff, most recent first. It reads the activity catalog
// backwards and stops a little before cutoff (appends of concurrent writers
// may land slightly out of order), so its cost follows the number of
// recently active sessions, not the profile's size.
func (s *Store) ActiveSince(cutoff time.Time) ([]Session, error) {
	f, size, err := s.openCatalog()
	if f == nil || err != nil {
		return nil, err
	}
	defer f.Close()
	stop := cutoff.Add(-10 * time.Second)
	seen := map[string]bool{}
	var out []Session
	err = fsstore.EachLineBackward(f, size, func(line []byte, _ int64) bool {
		var e catalogEntry
		if json.Unmarshal(line, &e) != nil || fsstore.CheckID("session id", e.SessionID) != nil {
			return true
		}
		at, err := e.At.Instant()
		written, werr := e.written().Instant()
		if err != nil || werr != nil {
			return true
		}
		// An import's line says its session was active long before the
		// line was written: only the write time says where to stop.
		if written.Before(stop) {
			return false
		}
		if seen[e.SessionID] || at.Before(cutoff) {
			return true
		}
		seen[e.SessionID] = true
		sess, err := s.readSession(e.SessionID, false)
		if err != nil {
			var corrupt *fsstore.CorruptError
			if errors.As(err, &corrupt) {
				s.Warn(err.Error())
			}
			return true
		}
		out = append(out, sess)
		return true
	})
	return out, err
}

// MarkInterrupted records that a restart interrupted session id: its
// interrupt_count grows by one and it becomes resume_pending with reason,
// or suspended once the count reaches limit (a session that every restart
// interrupts is a stuck loop). An ended or suspended session is left as
// it is.
func (s *Store) MarkInterrupted(id, reason string, limit int) (Session, error) {
	return s.update(id, func(sess *Session) error {
		if sess.State == StateEnded || sess.State == StateSuspended {
			return nil
		}
		sess.InterruptCount++
		sess.ResumeReason = reason
		if limit > 0 && sess.InterruptCount >= limit {
			sess.State = StateSuspended
			sess.ResumePendingAt = ""
			return nil
		}
		sess.State = StateResumePending
		sess.ResumePendingAt = fsstore.TimeOf(s.Now())
		return nil
	})
}

// CopyMessages returns msgs ready to be appended to another transcript:
// seq cleared (the store numbers them), ts kept, so a fork keeps when each
// message was said.
func CopyMessages(msgs []Message) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		m.Seq = 0
		out[i] = m
	}
	return out
}
