package sessions

import (
	"encoding/json"
	"os"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// WrittenSince returns the ids of the sessions the activity catalog says
// were written (made, appended to, changed or removed) at or after t, the
// latest first, reading the catalog backwards from its end only as far as
// t: its cost follows the writes since t, not the number of sessions. A
// write that skipped the catalog (a crash between its transcript and its
// line, a change by hand) is not seen; fsck reports the catalog that
// lacks it.
func (s *Store) WrittenSince(t time.Time) ([]string, error) {
	f, size, err := s.openCatalog()
	if f == nil || err != nil {
		return nil, err
	}
	defer f.Close()
	bound := fsstore.TimeOf(t)
	seen := map[string]bool{}
	var out []string
	err = fsstore.EachLineBackward(f, size, func(line []byte, _ int64) bool {
		var e catalogEntry
		if json.Unmarshal(line, &e) != nil {
			return true
		}
		if e.written().Before(bound) {
			return false
		}
		if !seen[e.SessionID] && fsstore.CheckID("session id", e.SessionID) == nil {
			seen[e.SessionID] = true
			out = append(out, e.SessionID)
		}
		return true
	})
	return out, err
}

// Exists reports whether session id has a document: whether it was not
// removed. A name that is no session id has none.
func (s *Store) Exists(id string) bool {
	if fsstore.CheckID("session id", id) != nil {
		return false
	}
	_, err := os.Lstat(s.docPath(id))
	return err == nil
}
