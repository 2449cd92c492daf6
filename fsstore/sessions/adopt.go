package sessions

import (
	"encoding/json"

	"github.com/hermes/hermes/fsstore"
)

// EndImported is the end reason of an imported session whose source gave
// none: history, not a chat in progress.
const EndImported = "imported"

// Adopt brings to session id what an import's source now says of it
// beyond its messages (a re-import of a source that grew, or ended, since
// the last): parent_session_id, session_key and meta where the source has
// them, cwd where the session has none (a --cwd given since stays), and the source's end (reason, and time if it has one) where the
// session's end is still the import's own (EndImported), never over an end
// a user or a chat gave it. Titles are not adopted: a title is its user's
// once the session exists. The document is written only when something
// differs, under the session's lock, and no activity is recorded: the
// session was last active where its history ends.
func (s *Store) Adopt(id string, from Session) (_ Session, changed bool, err error) {
	if err := fsstore.CheckID("session id", id); err != nil {
		return Session{}, false, err
	}
	unlock, err := s.lock(id)
	if err != nil {
		return Session{}, false, err
	}
	defer unlock()
	sess, err := s.readSession(id, true)
	if err != nil {
		return Session{}, false, err
	}
	set := func(field *string, v string) {
		if v != "" && *field != v {
			*field, changed = v, true
		}
	}
	set(&sess.ParentSessionID, from.ParentSessionID)
	set(&sess.SessionKey, from.SessionKey)
	if sess.Cwd == "" {
		set(&sess.Cwd, from.Cwd)
	}
	if len(from.Meta) > 0 && !sameJSON(json.RawMessage(sess.Meta), json.RawMessage(from.Meta)) {
		sess.Meta, changed = from.Meta, true
	}
	if sess.State == StateEnded && sess.EndReason == EndImported && from.EndReason != "" && from.EndReason != EndImported {
		sess.EndReason, changed = from.EndReason, true
		set((*string)(&sess.EndedAt), string(from.EndedAt))
	}
	if !changed {
		return sess, false, nil
	}
	return sess, true, fsstore.WriteDoc(s.docPath(id), &sess)
}
