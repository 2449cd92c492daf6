package checkpoints

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
)

// Retention defaults: checkpoints.max_age and checkpoints.max_bytes.
const (
	DefaultMaxAge   = 30 * 24 * time.Hour
	DefaultMaxBytes = 1 << 30
)

// MinAge is how old an object nothing refers to must be before prune
// removes it: a tool call in flight stores its object a moment before
// its pending record names it.
const MinAge = time.Hour

// PruneOptions bound the store.
type PruneOptions struct {
	// MaxAge: objects whose newest checkpoint is older are removed.
	MaxAge time.Duration
	// MaxBytes: past it, objects are removed oldest first (by their
	// newest checkpoint) until the store is within it.
	MaxBytes int64
	Now      time.Time
	DryRun   bool
}

// Pruned is an object prune removed (or, dry, would remove).
type Pruned struct {
	Hash string `json:"hash"`
	Size int64  `json:"size"`
	Why  string `json:"why"`
}

// references returns, for each object a record or a pending record
// names, the time of the newest record naming it (a pending record's is
// now).
func (s *Store) references(st *sessions.Store, now time.Time) (map[string]time.Time, error) {
	ids, err := sessionIDs(st)
	if err != nil {
		return nil, err
	}
	refs := map[string]time.Time{}
	add := func(h string, at time.Time) {
		if h != "" && at.After(refs[h]) {
			refs[h] = at
		}
	}
	for _, id := range ids {
		msgs, err := st.Messages(id)
		if err != nil {
			// Its checkpoints are unknown: nothing may be pruned.
			return nil, fmt.Errorf("session %s: %w; nothing pruned (hermes fsck)", id, err)
		}
		recs, err := Records(id, msgs)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			at, err := time.Parse(time.RFC3339Nano, r.TS)
			if err != nil {
				at = now // an unreadable time keeps its objects
			}
			for _, c := range r.Changes {
				add(c.Before, at)
				add(c.After, at)
			}
		}
	}
	pending, err := s.AllPending()
	if err != nil {
		return nil, err
	}
	for _, p := range pending {
		for _, c := range p.Changes {
			add(c.Before, now)
			add(c.After, now)
		}
	}
	return refs, nil
}

// Prune removes the objects no checkpoint refers to (once MinAge old),
// then those whose newest checkpoint is older than MaxAge, then, oldest
// first, those past MaxBytes. An object removed while a checkpoint still
// refers to it is marked unrestorable (fsck then notes it rather than
// call it lost); the records are never touched. Before all that, the
// objects stored as they are (Save) are compressed, so that MaxBytes
// counts them compressed; a dry run counts them as they are.
func (s *Store) Prune(st *sessions.Store, o PruneOptions) ([]Pruned, error) {
	refs, err := s.references(st, o.Now)
	if err != nil {
		return nil, err
	}
	if !o.DryRun {
		if _, err := s.Compress(); err != nil {
			return nil, err
		}
	}
	objs, err := s.Objects()
	if err != nil {
		return nil, err
	}
	type obj struct {
		hash   string
		size   int64
		newest time.Time
	}
	var kept []obj
	var out []Pruned
	var total int64
	for h, size := range objs {
		at, ok := refs[h]
		switch {
		case !ok:
			path, _ := s.objectPath(h)
			if fi, err := os.Lstat(path); err == nil && o.Now.Sub(fi.ModTime()) >= MinAge {
				out = append(out, Pruned{h, size, "no checkpoint refers to it"})
			}
		case o.MaxAge > 0 && o.Now.Sub(at) > o.MaxAge:
			out = append(out, Pruned{h, size, fmt.Sprintf("its newest checkpoint is older than checkpoints.max_age (%s)", at.Format(time.RFC3339))})
		default:
			kept = append(kept, obj{h, size, at})
			total += size
		}
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].newest.Before(kept[j].newest) })
	for i := 0; o.MaxBytes > 0 && total > o.MaxBytes && i < len(kept); i++ {
		out = append(out, Pruned{kept[i].hash, kept[i].size, fmt.Sprintf("the store is over checkpoints.max_bytes (%d): the oldest go first", o.MaxBytes)})
		total -= kept[i].size
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Hash < out[j].Hash })
	if o.DryRun {
		return out, nil
	}
	if len(out) == 0 {
		return out, s.tidy(st, o.Now)
	}
	marked, err := s.Unrestorable()
	if err != nil {
		return nil, err
	}
	newly := false
	for _, p := range out {
		if _, ok := refs[p.Hash]; ok {
			marked[p.Hash] = "pruned at " + o.Now.UTC().Format(time.RFC3339) + ": " + p.Why
			newly = true
		}
	}
	// Marked before the removal: a crash between them leaves a mark of
	// an object that still exists, which is harmless.
	if newly {
		if err := fsstore.WriteDoc(s.unrestorablePath(), marked); err != nil {
			return nil, err
		}
	}
	// A removal a crash loses leaves the object, which the next prune
	// removes: no sync is needed.
	for i, p := range out {
		if err := s.Remove(p.Hash); err != nil {
			return out[:i], err
		}
	}
	return out, s.tidy(st, o.Now)
}

// tidy removes what crashes and deletes leave beside the objects: the
// temp files of SaveHashing a crash left in objects/, once MinAge old
// (an older one belongs to no write in progress), and the pending logs
// of sessions that are gone (dropGoneLogs).
func (s *Store) tidy(st *sessions.Store, now time.Time) error {
	dir := filepath.Join(s.Dir, "objects")
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), stagePrefix) || !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err == nil && now.Sub(fi.ModTime()) >= MinAge {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	return s.dropGoneLogs(st)
}

// dropGoneLogs removes the pending logs, and their locks, of sessions st
// no longer holds, when no record is in flight in them: a session's
// delete takes its pending log with it, at the prune that follows it. A
// log with a record in flight is fsck's to report.
func (s *Store) dropGoneLogs(st *sessions.Store) error {
	ids, err := sessionIDs(st)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(s.Dir, "pending"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok || !e.Type().IsRegular() || slices.Contains(ids, id) {
			continue
		}
		log := filepath.Join(s.Dir, "pending", e.Name())
		recs, err := s.pendingIn(log)
		if err != nil || len(recs) > 0 {
			continue
		}
		unlock, err := fsstore.Lock(lockOf(log), s.lockTimeout())
		if err != nil {
			return err
		}
		if fi, err := os.Lstat(log); err == nil && fi.Size() == 0 {
			os.Remove(log)
			os.Remove(lockOf(log))
		}
		unlock()
	}
	return nil
}

// sessionIDs are the sessions of st that have a document or a transcript,
// found by their files' names alone: no document is read, so that a check
// changes nothing (a corrupt document is the sessions check's to report),
// and a transcript whose document was quarantined still counts.
func sessionIDs(st *sessions.Store) ([]string, error) {
	entries, err := os.ReadDir(st.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var ids []string
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok {
			id, ok = strings.CutSuffix(e.Name(), ".json")
		}
		if ok && !seen[id] && fsstore.CheckID("session id", id) == nil {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, nil
}
