package sessions

import (
	"crypto/sha256"
	"encoding/hex"
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

// CatalogMark is a place in the activity catalog: the offset just past a
// line, and a digest of that line, by which a later reader knows the
// catalog is still the one it read (not compacted, rebuilt or cut back
// since) and can read on from there.
type CatalogMark struct {
	Offset int64  `json:"offset"`
	Line   string `json:"line"`
}

// WrittenAfter returns the sessions written since mark, each once, and
// the mark of the catalog's end now. When mark no longer holds (the
// catalog was compacted, rebuilt or cut back since, or mark is zero), it
// is WrittenSince(since) instead, which reads back by the lines' times.
// Unlike WrittenSince, it sees every line appended after the mark
// whatever the clock of the host that wrote it.
func (s *Store) WrittenAfter(mark CatalogMark, since time.Time) ([]string, CatalogMark, error) {
	f, size, err := s.openCatalog()
	if f == nil || err != nil {
		return nil, CatalogMark{}, err
	}
	defer f.Close()
	end, err := catalogEnd(f, size)
	if err != nil {
		return nil, CatalogMark{}, err
	}
	if mark.Offset > 0 && mark.Offset <= size {
		at, err := catalogEnd(f, mark.Offset)
		if err != nil {
			return nil, CatalogMark{}, err
		}
		if at == mark {
			seen := map[string]bool{}
			var out []string
			_, err := fsstore.ScanLinesFrom(f, mark.Offset, end.Offset, func(line []byte, _ int64) error {
				var e catalogEntry
				if json.Unmarshal(line, &e) == nil && !seen[e.SessionID] && fsstore.CheckID("session id", e.SessionID) == nil {
					seen[e.SessionID] = true
					out = append(out, e.SessionID)
				}
				return nil
			})
			return out, end, err
		}
	}
	ids, err := s.WrittenSince(since)
	return ids, end, err
}

// catalogEnd is the mark of the last complete line in the first size
// bytes of the catalog f.
func catalogEnd(f *os.File, size int64) (CatalogMark, error) {
	line, start, err := fsstore.LastLine(f, size)
	if err != nil || line == nil {
		return CatalogMark{}, err
	}
	sum := sha256.Sum256(line)
	return CatalogMark{Offset: start + int64(len(line)) + 1, Line: hex.EncodeToString(sum[:16])}, nil
}
