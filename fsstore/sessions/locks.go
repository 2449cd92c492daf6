package sessions

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hermes/hermes/fsstore"
)

// CheckLocks reports the lock files of sessions that are not there:
// Delete removes a session's lock as its last act under it, but a writer
// that waited on the lock meanwhile makes the file again, finds no
// session and leaves it, as does a create that is refused (a title
// taken). Such a file holds no record: each is a note,
// and with repair it is removed under its own lock, taken without
// waiting, once the session is seen missing under it; one that is held
// is left (fsstore.Lock: a waiter that opened it before the removal takes
// the lock again on the path). The store's own locks (.catalog.lock and
// the others whose names begin with a dot) are not session locks.
func (s *Store) CheckLocks(repair bool) ([]fsstore.Finding, error) {
	d, err := os.Open(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var out []fsstore.Finding
	for {
		names, err := d.Readdirnames(4096)
		for _, name := range names {
			id, ok := strings.CutSuffix(name, ".lock")
			if !ok || strings.HasPrefix(name, ".") || s.present(id) {
				continue
			}
			f := fsstore.Finding{Path: filepath.Join(s.Dir, name), What: "lock file of no session (left by a writer that found none: a create refused, a wait on a session being deleted)"}
			if repair {
				f.Repaired, f.What = s.removeLock(id, f.What)
			}
			out = append(out, f)
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// present reports whether session id has a document or a transcript.
func (s *Store) present(id string) bool {
	for _, p := range []string{s.docPath(id), s.logPath(id)} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			return true
		}
	}
	return false
}

// removeLock removes the lock file of session id if no one holds it and
// the session is still missing, and returns whether it did, with what
// extended to say so or why not.
func (s *Store) removeLock(id, what string) (bool, string) {
	unlock, err := fsstore.Lock(s.lockPath(id), 0)
	var held *fsstore.LockTimeoutError
	if errors.As(err, &held) {
		return false, what + "; held by a writer, left"
	}
	if err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	defer unlock()
	if s.present(id) {
		return false, what + "; the session was made meanwhile, left"
	}
	if err := os.Remove(s.lockPath(id)); err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	return true, what + "; removed"
}
