package checkpoints

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hermes/hermes/fsstore"
)

// Pending is a change in flight: written, synced, before a tool call (or
// a restore) touches a file, and removed once the transcript line that
// records the changes is stored. One left behind is a crash between the
// two; see the package doc for how it is resolved.
type Pending struct {
	SessionID string `json:"session_id"`
	// CallID is the tool call's id; "" for a restore.
	CallID  string   `json:"call_id,omitempty"`
	Changes []Change `json:"changes"`
}

// RestoreCall is the CallID of a restore's pending record.
const RestoreCall = "restore"

// pendingPath is where the pending record of a call of a session lives:
// pending/<sha256 of session and call id>.json, so that no id a model
// chose becomes a name.
func (s *Store) pendingPath(sessionID, callID string) string {
	h := sha256.Sum256([]byte(sessionID + "\x00" + callID))
	return filepath.Join(s.Dir, "pending", hex.EncodeToString(h[:16])+".json")
}

// SetPending writes p durably (atomic, synced), replacing the one of the
// same call.
func (s *Store) SetPending(p Pending) error {
	path := s.pendingPath(p.SessionID, p.CallID)
	if err := fsstore.EnsureDir(filepath.Dir(path)); err != nil {
		return err
	}
	return fsstore.WriteDoc(path, p)
}

// ClearPending removes the pending record of a call, once its changes are
// in the transcript. A missing one is no error. The removal is not
// synced: a record a crash brings back is stale, and fsck --repair
// moves it aside.
func (s *Store) ClearPending(sessionID, callID string) error {
	if err := os.Remove(s.pendingPath(sessionID, callID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// PendingOf returns the pending record of a call, if there is one.
func (s *Store) PendingOf(sessionID, callID string) (Pending, bool, error) {
	var p Pending
	err := fsstore.ReadDoc(s.pendingPath(sessionID, callID), &p)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fsstore.ErrNotFound) {
		return Pending{}, false, nil
	}
	if err != nil {
		return Pending{}, false, err
	}
	return p, true, nil
}

// AllPending returns every pending record, with its file's path.
func (s *Store) AllPending() (map[string]Pending, error) {
	dir := filepath.Join(s.Dir, "pending")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]Pending{}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		var p Pending
		path := filepath.Join(dir, e.Name())
		if err := fsstore.ReadDoc(path, &p); err != nil {
			return nil, err
		}
		out[path] = p
	}
	return out, nil
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
