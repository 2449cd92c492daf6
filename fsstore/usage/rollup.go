package usage

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/sessions"
)

// Rollup is a profile's usage roll-up, <profile>/usage: the calls the
// transcripts hold, filed by day, so that a report reads the days it
// covers rather than every transcript. It is a cache: the transcripts are
// the truth, and it is brought up to date from them (see the package doc).
type Rollup struct {
	Dir         string
	Sessions    *sessions.Store
	LockTimeout time.Duration
	Warn        func(string)
}

// NewRollup returns the roll-up of the profile whose directory is
// profileDir, of its sessions st.
func NewRollup(profileDir string, st *sessions.Store, lockTimeout time.Duration, warn func(string)) *Rollup {
	return &Rollup{Dir: filepath.Join(profileDir, "usage"), Sessions: st, LockTimeout: lockTimeout, Warn: warn}
}

const (
	rollupVersion = 1
	stateName     = "state.json"
	lockName      = ".lock"
	daysName      = "days"
	// syncMargin is how far before the last sync a catch-up looks in the
	// catalog: the hosts sharing a profile write it with their own
	// clocks. Going over a session again costs a read, never a count.
	syncMargin = 5 * time.Minute
)

// rollupState is state.json: every session the catalog says was written
// before Synced has its calls in the day files.
type rollupState struct {
	Version int          `json:"version"`
	Synced  fsstore.Time `json:"synced"`
	// Catalog is where in the activity catalog the last sync read to.
	Catalog sessions.CatalogMark `json:"catalog"`
}

// dayLine is a day file's line: one call held by one session (a call
// copied into several sessions has a line for each, in the same file:
// a copy keeps its time).
type dayLine struct {
	Session string       `json:"session_id"`
	Source  string       `json:"source"`
	TS      fsstore.Time `json:"ts"`
	Usage   Call         `json:"usage"`
}

func (r *Rollup) daysDir() string           { return filepath.Join(r.Dir, daysName) }
func (r *Rollup) dayPath(day string) string { return filepath.Join(r.daysDir(), day+".jsonl") }
func (r *Rollup) statePath() string         { return filepath.Join(r.Dir, stateName) }
func dayOf(t time.Time) string              { return t.UTC().Format(time.DateOnly) }
func lineKey(session, call string) string   { return session + "\x00" + call }
func (l dayLine) key() string               { return lineKey(l.Session, l.Usage.ID) }
func (r *Rollup) now() time.Time            { return r.Sessions.Now() }
func (r *Rollup) lock() (func(), error) {
	return fsstore.LockUntil(filepath.Join(r.Dir, lockName), r.LockTimeout, nil)
}

// Sync brings the roll-up up to date, under its lock (a profile without
// sessions has none, and gets none): the sessions the
// catalog says were written since the last sync are read again and their
// calls not yet filed are appended to their days. A state that is missing,
// does not parse or is of another version is rebuilt from every
// transcript (Rebuild).
func (r *Rollup) Sync() error {
	if _, err := os.Stat(r.Sessions.Dir); errors.Is(err, os.ErrNotExist) {
		return nil // no session yet: nothing to file, and nothing is made
	}
	if err := fsstore.EnsureDir(r.Dir); err != nil {
		return err
	}
	unlock, err := r.lock()
	if err != nil {
		return err
	}
	defer unlock()
	var st rollupState
	err = fsstore.ReadDoc(r.statePath(), &st)
	var corrupt *fsstore.CorruptError
	if errors.As(err, &corrupt) {
		r.Warn(fmt.Sprintf("usage roll-up state %s does not parse; rebuilding the roll-up from the transcripts", r.statePath()))
	}
	synced, terr := st.Synced.Instant()
	if err != nil || st.Version != rollupVersion || terr != nil {
		return r.rebuildLocked()
	}
	start := r.now()
	ids, mark, err := r.Sessions.WrittenAfter(st.Catalog, synced.Add(-syncMargin))
	if err != nil {
		return err
	}
	f := newFiler(r)
	for _, id := range ids {
		if err = f.session(id); err != nil {
			break
		}
	}
	if err == nil {
		err = f.flush()
	}
	if errors.As(err, &corrupt) {
		r.Warn(fmt.Sprintf("usage roll-up: %v; rebuilding it from the transcripts", err))
		return r.rebuildLocked()
	}
	if err != nil || (len(ids) == 0 && mark == st.Catalog) {
		return err
	}
	return r.writeState(start, mark)
}

// writeState records that every session written before synced is filed.
// The state is a cache's (WriteCacheFile, no sync): a power cut that
// loses it makes the next Sync go over the same sessions again, or
// rebuild, which adds nothing twice. A Sync that found nothing written
// leaves it: the catalog has no line past it.
func (r *Rollup) writeState(synced time.Time, mark sessions.CatalogMark) error {
	b, err := fsstore.EncodeDoc(r.statePath(), rollupState{Version: rollupVersion, Synced: fsstore.TimeOf(synced), Catalog: mark})
	if err != nil {
		return err
	}
	return fsstore.WriteCacheFile(r.statePath(), b)
}

// Rebuild files every call of every transcript again, from scratch, under
// the roll-up's lock.
func (r *Rollup) Rebuild() error {
	if err := fsstore.EnsureDir(r.Dir); err != nil {
		return err
	}
	unlock, err := r.lock()
	if err != nil {
		return err
	}
	defer unlock()
	return r.rebuildLocked()
}

// rebuildLocked removes the state, then the day files, files every
// session's calls, and writes the state last: a crash on the way leaves no
// state, and the next Sync rebuilds.
func (r *Rollup) rebuildLocked() error {
	start := r.now()
	// The catalog's end before the sessions are read: what is written
	// while they are is read again by the next Sync.
	_, mark, err := r.Sessions.WrittenAfter(sessions.CatalogMark{}, start)
	if err != nil {
		return err
	}
	if err := os.Remove(r.statePath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.RemoveAll(r.daysDir()); err != nil {
		return err
	}
	ids, err := r.Sessions.IDs()
	if err != nil {
		return err
	}
	f := newFiler(r)
	f.fresh = true
	for _, id := range ids {
		if err := f.session(id); err != nil {
			return err
		}
		if f.pending > flushAt {
			if err := f.flush(); err != nil {
				return err
			}
		}
	}
	if err := f.flush(); err != nil {
		return err
	}
	return r.writeState(start, mark)
}

// flushAt is how many bytes of lines a rebuild holds before it appends
// them.
const flushAt = 4 << 20

// filer appends the calls of sessions to their day files, each line once.
type filer struct {
	r       *Rollup
	fresh   bool                       // a rebuild: the day files hold nothing yet but what this filer wrote
	have    map[string]map[string]bool // by day, the keys of its lines
	add     map[string][][]byte        // by day, lines to append
	pending int                        // bytes in add
}

func newFiler(r *Rollup) *filer {
	return &filer{r: r, have: map[string]map[string]bool{}, add: map[string][][]byte{}}
}

// session files the calls of session id; a session removed meanwhile has
// none.
func (f *filer) session(id string) error {
	sess, err := f.r.Sessions.Get(id)
	if errors.Is(err, fsstore.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return walkSession(f.r.Sessions, sess, map[string]bool{}, func(e Entry) error {
		day := dayOf(e.Time)
		keys, err := f.keys(day)
		if err != nil {
			return err
		}
		l := dayLine{Session: e.Session, Source: e.Source, TS: fsstore.TimeOf(e.Time), Usage: e.Call}
		if keys[l.key()] {
			return nil
		}
		keys[l.key()] = true
		b, err := json.Marshal(l)
		if err != nil {
			return err
		}
		f.add[day] = append(f.add[day], append(b, '\n'))
		f.pending += len(b) + 1
		return nil
	})
}

// keys returns the keys of day's lines, reading its file the first time.
func (f *filer) keys(day string) (map[string]bool, error) {
	if k, ok := f.have[day]; ok {
		return k, nil
	}
	k := map[string]bool{}
	f.have[day] = k
	if f.fresh {
		return k, nil
	}
	err := f.r.eachLine(day, func(l dayLine) error {
		k[l.key()] = true
		return nil
	})
	return k, err
}

// flush appends the lines held, synced, day by day.
func (f *filer) flush() error {
	if len(f.add) == 0 {
		return nil
	}
	if err := fsstore.EnsureDir(f.r.daysDir()); err != nil {
		return err
	}
	for _, day := range sortedDays(f.add) {
		file, moved, err := fsstore.OpenAppend(f.r.dayPath(day), f.r.now())
		if err != nil {
			return err
		}
		if moved != "" {
			f.r.Warn(fmt.Sprintf("usage roll-up %s ended in a torn line, moved to %s", f.r.dayPath(day), moved))
		}
		err = fsstore.AppendLines(file, f.add[day])
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	f.add, f.pending = map[string][][]byte{}, 0
	return nil
}

func sortedDays[V any](m map[string]V) []string {
	days := make([]string, 0, len(m))
	for d := range m {
		days = append(days, d)
	}
	slices.Sort(days)
	return days
}

// eachLine calls fn with each line of day's file; a missing file has
// none. A torn last line is skipped and reported; a line that does not
// parse is an error naming the file and its offset.
func (r *Rollup) eachLine(day string, fn func(dayLine) error) error {
	f, size, err := fsstore.OpenSized(r.dayPath(day))
	if f == nil || err != nil {
		return err
	}
	defer f.Close()
	torn, err := fsstore.ScanLines(f, size, func(line []byte, off int64) error {
		var l dayLine
		if err := json.Unmarshal(line, &l); err != nil {
			return &fsstore.CorruptError{Path: f.Name(), Offset: off, Err: err}
		}
		return fn(l)
	})
	if torn != nil {
		r.Warn(torn.String())
	}
	return err
}

// days returns the days that have a file, in order.
func (r *Rollup) days() ([]string, error) {
	entries, err := os.ReadDir(r.daysDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if day, ok := strings.CutSuffix(e.Name(), ".jsonl"); ok && e.Type().IsRegular() {
			if _, err := time.Parse(time.DateOnly, day); err == nil {
				out = append(out, day)
			}
		}
	}
	return out, nil
}

// Each calls fn with each call filed between since and until (zero: no
// bound; the days of the files around them, the calls' own times are the
// caller's to filter), once: a call held by several sessions goes to the
// oldest (least id) of those that still exist, as Walk yields it. It does
// not Sync.
func (r *Rollup) Each(since, until time.Time, fn func(Entry) error) error {
	days, err := r.days()
	if err != nil {
		return err
	}
	first, last := "", "\xff"
	if !since.IsZero() {
		first = dayOf(since.Add(-24 * time.Hour))
	}
	if !until.IsZero() {
		last = dayOf(until.Add(24 * time.Hour))
	}
	alive := map[string]bool{}
	exists := func(id string) bool {
		ok, seen := alive[id]
		if !seen {
			ok = r.Sessions.Exists(id)
			alive[id] = ok
		}
		return ok
	}
	for _, day := range days {
		if day < first || day > last {
			continue
		}
		owner := map[string]dayLine{}
		var order []string
		err := r.eachLine(day, func(l dayLine) error {
			if !exists(l.Session) {
				return nil
			}
			o, ok := owner[l.Usage.ID]
			if !ok {
				order = append(order, l.Usage.ID)
			}
			if !ok || l.Session < o.Session {
				owner[l.Usage.ID] = l
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, id := range order {
			l := owner[id]
			at, err := l.TS.Instant()
			if err != nil {
				return &fsstore.CorruptError{Path: r.dayPath(day), Err: fmt.Errorf("call %s: ts %q is not a time", id, l.TS)}
			}
			if err := fn(Entry{Call: l.Usage, Time: at, Session: l.Session, Source: l.Source}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Check compares the roll-up with the transcripts: a call a transcript
// holds that the roll-up lacks, or one it files for a session that no
// longer holds it, is a problem; with repair the roll-up is rebuilt. It
// syncs first, so that what a report would read is what is checked. A
// profile without a roll-up (no report made one yet) has nothing to
// check; nor has one that cannot be written (a read-only mount).
func (r *Rollup) Check(repair bool, _ string) ([]fsstore.Finding, error) {
	if _, err := os.Lstat(r.statePath()); errors.Is(err, os.ErrNotExist) && !repair {
		return nil, nil
	}
	if err := r.Sync(); fsstore.IsReadOnly(err) {
		return nil, nil
	} else if err != nil {
		var corrupt *fsstore.CorruptError
		if !errors.As(err, &corrupt) {
			return nil, err
		}
		return r.finding(repair, corrupt.Error())
	}
	truth := map[string]bool{}
	ids, err := r.Sessions.IDs()
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		sess, err := r.Sessions.Get(id)
		if errors.Is(err, fsstore.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		err = walkSession(r.Sessions, sess, map[string]bool{}, func(e Entry) error {
			truth[lineKey(e.Session, e.ID)+"\x00"+dayOf(e.Time)] = true
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	days, err := r.days()
	if err != nil {
		return nil, err
	}
	extra := 0
	for _, day := range days {
		err := r.eachLine(day, func(l dayLine) error {
			k := l.key() + "\x00" + day
			switch {
			case truth[k]:
				delete(truth, k)
			case r.Sessions.Exists(l.Session):
				extra++
			}
			return nil
		})
		var corrupt *fsstore.CorruptError
		if errors.As(err, &corrupt) {
			return r.finding(repair, corrupt.Error())
		}
		if err != nil {
			return nil, err
		}
	}
	if len(truth) == 0 && extra == 0 {
		return nil, nil
	}
	return r.finding(repair, fmt.Sprintf("usage roll-up lacks %d calls the transcripts hold and files %d calls for sessions that do not hold them", len(truth), extra))
}

// finding reports the roll-up wrong, rebuilding it with repair.
func (r *Rollup) finding(repair bool, what string) ([]fsstore.Finding, error) {
	f := fsstore.Finding{Path: r.Dir, What: what + " (a report would count them wrong; --repair rebuilds it)", Problem: true}
	if repair {
		if err := r.Rebuild(); err != nil {
			return nil, err
		}
		f.Repaired = true
	}
	return []fsstore.Finding{f}, nil
}
