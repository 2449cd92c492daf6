package cron

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// dueIndex is the document due.json: for each job that a tick may have to
// look at, the instant from which it must, in time order (then by id). It
// is a cache of the documents and may say earlier than they do (a tick
// that reads a job not yet due puts its entry right), never later: a
// change that brings a job's instant forward lowers the entry before the
// document is written, and every other change rewrites the entry from
// the document after it. "due" is its only field and comes first, so
// that a tick reads entries from the start of the file until the first
// one in the future, and no further.
type dueIndex struct {
	Due []dueEntry `json:"due"`
}

type dueEntry struct {
	At    fsstore.Time `json:"at"`
	JobID string       `json:"job_id"`
}

// entryOf is the instant from which a tick must look at j: its next
// occurrence, or, when a run is in progress, the end of its lease (from
// its claim, or its start), after which a tick settles it: a claim not
// started is recorded lost, a run whose task ended without recording it
// (or was never made) gets its task's outcome; "" for a paused job, or
// one with no occurrence left, and no run to settle.
func entryOf(j Job) fsstore.Time {
	var at fsstore.Time
	if !j.Paused {
		at = j.NextDue
	}
	if j.Run != nil {
		from := j.Run.ClaimedAt
		if j.Run.TaskID != "" {
			from = j.Run.StartedAt
		}
		if t, err := from.Instant(); err == nil {
			lease := fsstore.TimeOf(t.Add(ClaimLease))
			if at == "" || lease.Before(at) {
				at = lease
			}
		}
	}
	return at
}

// Due returns the jobs whose index entry is not after now, reading the
// index only as far as the first entry that is: a tick that finds none
// due reads one small block whatever the number of jobs. A missing index
// with jobs present, or one that does not parse, is rebuilt from the
// documents (the unreadable one moved aside), and said through Warn.
func (s *Store) Due(now time.Time) ([]string, error) {
	ids, err := s.readDue(now)
	if err == nil {
		return ids, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		if ids, _ := fsstore.DocIDs(s.jobsDir()); len(ids) == 0 {
			return nil, nil
		}
	}
	s.Warn(fmt.Sprintf("%s: %v; rebuilt from the jobs", s.duePath(), err))
	if _, err := s.RebuildIndex(); err != nil {
		return nil, err
	}
	return s.readDue(now)
}

func (s *Store) readDue(now time.Time) ([]string, error) {
	f, err := os.Open(s.duePath())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, 4096))
	corrupt := func(err error) error { return &fsstore.CorruptError{Path: s.duePath(), Err: err} }
	for _, want := range []any{json.Delim('{'), "due", json.Delim('[')} {
		tok, err := dec.Token()
		if err != nil {
			return nil, corrupt(err)
		}
		if tok != want {
			return nil, corrupt(fmt.Errorf("expected %v, found %v", want, tok))
		}
	}
	limit := fsstore.TimeOf(now)
	var ids []string
	for dec.More() {
		var e dueEntry
		if err := dec.Decode(&e); err != nil {
			return nil, corrupt(err)
		}
		if limit.Before(e.At) {
			break
		}
		ids = append(ids, e.JobID)
	}
	return ids, nil
}

// loadIndex reads the whole index; a missing one is empty. The caller
// holds its lock.
func (s *Store) loadIndex() (map[string]fsstore.Time, error) {
	var idx dueIndex
	err := fsstore.ReadDoc(s.duePath(), &idx)
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	if err != nil {
		return nil, err
	}
	m := make(map[string]fsstore.Time, len(idx.Due))
	for _, e := range idx.Due {
		m[e.JobID] = e.At
	}
	return m, nil
}

// writeIndex writes the index in time order, then id order.
func (s *Store) writeIndex(m map[string]fsstore.Time) error {
	idx := dueIndex{Due: make([]dueEntry, 0, len(m))}
	for id, at := range m {
		c, err := at.Canonical()
		if err != nil {
			continue
		}
		idx.Due = append(idx.Due, dueEntry{At: c, JobID: id})
	}
	slices.SortFunc(idx.Due, func(a, b dueEntry) int {
		if c := strings.Compare(string(a.At), string(b.At)); c != 0 {
			return c
		}
		return strings.Compare(a.JobID, b.JobID)
	})
	if err := fsstore.EnsureDir(s.Dir); err != nil {
		return err
	}
	return fsstore.WriteDoc(s.duePath(), &idx)
}

// lowerIndex sets id's entry to at when that is earlier than the entry it
// has. The caller holds the index's lock.
func (s *Store) lowerIndex(id string, at fsstore.Time) error {
	m, err := s.loadIndex()
	if err != nil {
		return err
	}
	if old, ok := m[id]; ok && !at.Before(old) {
		return nil
	}
	m[id] = at
	return s.writeIndex(m)
}

// RefreshIndex sets the entries of ids from their documents as they are
// now: a job removed, paused or done loses its entry.
func (s *Store) RefreshIndex(ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	unlock, err := fsstore.Lock(s.dueLock(), s.LockTimeout)
	if err != nil {
		return err
	}
	defer unlock()
	return s.refreshLocked(ids)
}

// refreshLocked is RefreshIndex for a caller that holds the index's lock.
// A document read under that lock is at least as new as any entry that
// an earlier writer took from it, so the last writer leaves the truth.
func (s *Store) refreshLocked(ids []string) error {
	m, err := s.loadIndex()
	if err != nil {
		return err
	}
	changed := false
	for _, id := range ids {
		at := fsstore.Time("")
		// Read without quarantining: that takes the job's lock, which is
		// never taken under the index's.
		var j Job
		err := fsstore.ReadDoc(s.docPath(id), &j)
		switch {
		case err == nil && j.ID == id:
			at = entryOf(j)
		case !errors.Is(err, os.ErrNotExist):
			continue // unreadable: the entry stays, and fsck says why
		}
		old, had := m[id]
		switch {
		case at == "" && had:
			delete(m, id)
			changed = true
		case at != "" && at != old:
			m[id] = at
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return s.writeIndex(m)
}

// RebuildIndex writes the due index again from every job's document, and
// returns the entries that differed from it (fsck --repair).
func (s *Store) RebuildIndex() (int, error) {
	unlock, err := fsstore.Lock(s.dueLock(), s.LockTimeout)
	if err != nil {
		return 0, err
	}
	defer unlock()
	want, known, err := s.indexFromJobs()
	if err != nil {
		return 0, err
	}
	old, err := s.loadIndex()
	if err != nil {
		var corrupt *fsstore.CorruptError
		if !errors.As(err, &corrupt) {
			return 0, err
		}
		if _, err := fsstore.MoveAside(s.duePath(), fmt.Sprintf(".corrupt-%d", s.Now().Unix())); err != nil {
			return 0, err
		}
		old = map[string]fsstore.Time{}
	}
	n := indexDiff(old, want, known)
	if n == 0 {
		return 0, nil
	}
	return n, s.writeIndex(want)
}

// indexFromJobs is the index the documents call for, and the jobs there
// are.
func (s *Store) indexFromJobs() (map[string]fsstore.Time, map[string]bool, error) {
	jobs, err := s.List()
	if err != nil {
		return nil, nil, err
	}
	m := make(map[string]fsstore.Time, len(jobs))
	known := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		known[j.ID] = true
		if at := entryOf(j); at != "" {
			m[j.ID] = at
		}
	}
	return m, known, nil
}

// indexDiff counts the entries of want that have lacks or holds later,
// and those it holds for no job: the ones that matter. An entry earlier
// than the document's, or one for a paused job, only costs a tick a read.
func indexDiff(have, want map[string]fsstore.Time, known map[string]bool) int {
	n := 0
	for id, at := range want {
		if old, ok := have[id]; !ok || at.Before(old) {
			n++
		}
	}
	for id := range have {
		if !known[id] {
			n++
		}
	}
	return n
}
