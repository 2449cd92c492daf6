package sessions

import (
	"time"

	"github.com/hermes/hermes/fsstore"
)

// TouchCatalogForBench appends the activity line an append to session id
// writes (its message count and size as given), and compacts the catalog
// when that append would; the transcript is not written and nothing is
// synced. BenchmarkListAfterAppends runs it a million times.
func (s *Store) TouchCatalogForBench(id string, at time.Time, count, bytes int64) error {
	f, due, err := s.appendCatalog(catalogEntry{SessionID: id, At: fsstore.TimeOf(at), State: StateActive, Source: "cli", MessageCount: count, Bytes: bytes})
	if err != nil {
		return err
	}
	f.Close()
	if due {
		s.compactCatalogIfDue()
	}
	return nil
}
