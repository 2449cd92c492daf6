package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hermes/hermes/fsstore"
)

// The two files of a profile's memory, as the tool and the command line
// name them (target) and as they are written.
const (
	Memory = "memory" // MEMORY.md: what the agent notes about the work
	User   = "user"   // USER.md: what it notes about the user
)

// Default bounds, in characters (runes) of a file's entries joined by
// Separator: about 2,000 and 1,000 tokens. The peers' 2,200 and 1,375 are
// what their users found too small to be useful.
const (
	DefaultMaxChars     = 8000
	DefaultUserMaxChars = 4000
)

// NoticeAt is the share of its bound at which a file is called nearly
// full: every change that leaves it there says so.
const NoticeAt = 0.9

// Separator goes between two entries of a file: a line holding only "§",
// the Python hermes's delimiter, so that its MEMORY.md reads the same. An
// entry may not hold such a line itself.
const Separator = "\n§\n"

// Operations of a change.
const (
	OpAdd     = "add"
	OpReplace = "replace"
	OpRemove  = "remove"
)

// Who made a change.
const (
	ByAgent = "agent"
	ByUser  = "user"
)

// Change is one line of the log: one add, replace or remove of one entry
// of one file. Old is the whole entry replaced or removed, New the entry
// added or put in its place. A revert is a change like any other, whose
// reverts names the change it undoes.
type Change struct {
	Seq       int64        `json:"seq"`
	TS        fsstore.Time `json:"ts"`
	Target    string       `json:"target"`
	Op        string       `json:"op"`
	Old       string       `json:"old,omitempty"`
	New       string       `json:"new,omitempty"`
	By        string       `json:"by"`
	SessionID string       `json:"session_id,omitempty"`
	Reverts   int64        `json:"reverts,omitempty"`
}

// Entry is one entry of a file, with the change that last set it.
type Entry struct {
	Text string `json:"text"`
	Seq  int64  `json:"seq"`
	By   string `json:"by"`
}

// State is both files as the log makes them, and the last change's seq.
type State struct {
	Memory []Entry `json:"memory"`
	User   []Entry `json:"user"`
	Seq    int64   `json:"seq"`
}

// Entries is the entries of target.
func (st *State) Entries(target string) []Entry {
	if target == User {
		return st.User
	}
	return st.Memory
}

func (st *State) set(target string, entries []Entry) {
	if target == User {
		st.User = entries
	} else {
		st.Memory = entries
	}
}

// Render is a file's text: its entries joined by Separator, with a final
// newline; "" for none.
func Render(entries []Entry) string {
	if len(entries) == 0 {
		return ""
	}
	var b strings.Builder
	for i, e := range entries {
		if i > 0 {
			b.WriteString(Separator)
		}
		b.WriteString(e.Text)
	}
	b.WriteByte('\n')
	return b.String()
}

// Chars is the size of entries that the bound counts: the characters of
// the entries and of the separators between them.
func Chars(entries []Entry) int {
	n := 0
	for i, e := range entries {
		if i > 0 {
			n += utf8.RuneCountInString(Separator)
		}
		n += utf8.RuneCountInString(e.Text)
	}
	return n
}

// FileName is the name of target's file.
func FileName(target string) string {
	if target == User {
		return "USER.md"
	}
	return "MEMORY.md"
}

// CheckTarget refuses a target other than memory and user.
func CheckTarget(target string) error {
	if target != Memory && target != User {
		return fsstore.Invalidf("unknown memory target %q (use memory or user)", target)
	}
	return nil
}

// Store keeps a profile's memory in Dir:
//
//	log.jsonl   every change (Change), append-only: the truth
//	log.lock    its lock, held by every change
//	MEMORY.md   the memory entries, written from the log after each change
//	USER.md     the user entries, likewise
type Store struct {
	Dir         string
	LockTimeout time.Duration
	// Cancel, when it closes, ends a wait for the lock (a tool call's
	// context).
	Cancel <-chan struct{}
	Now    func() time.Time
	Warn   func(string)
	// MaxChars and UserMaxChars bound MEMORY.md and USER.md.
	MaxChars, UserMaxChars int
}

// NewStore returns the memory store of the profile whose directory is
// profileDir, with the default bounds. Nothing is created until the first
// change.
func NewStore(profileDir string, lockTimeout time.Duration, warn func(string)) *Store {
	return &Store{Dir: filepath.Join(profileDir, "memory"), LockTimeout: lockTimeout, Now: time.Now, Warn: warn,
		MaxChars: DefaultMaxChars, UserMaxChars: DefaultUserMaxChars}
}

// LogPath is the path of the log.
func (s *Store) LogPath() string { return filepath.Join(s.Dir, "log.jsonl") }

// CachePath is the path of the cache of the state the log makes.
func (s *Store) CachePath() string { return filepath.Join(s.Dir, "state.cache") }

func (s *Store) lockPath() string { return filepath.Join(s.Dir, "log.lock") }

// Path is the path of target's file.
func (s *Store) Path(target string) string { return filepath.Join(s.Dir, FileName(target)) }

// Max is target's bound.
func (s *Store) Max(target string) int {
	if target == User {
		return s.UserMaxChars
	}
	return s.MaxChars
}

func (s *Store) warn(msg string) {
	if s.Warn != nil {
		s.Warn(msg)
	}
}

// Read returns the files as the log makes them, under a shared lock so
// that an append in progress is not taken for a torn tail.
func (s *Store) Read() (State, error) {
	if _, err := os.Lstat(s.LogPath()); errors.Is(err, os.ErrNotExist) {
		return State{}, nil
	}
	unlock, err := fsstore.RLockUntil(s.lockPath(), s.LockTimeout, s.Cancel)
	if err != nil {
		return State{}, err
	}
	defer unlock()
	if st, ok := s.cached(); ok {
		return st, nil
	}
	st, err := s.fold(nil)
	if err != nil {
		return st, err
	}
	// No writer appends while the lock is held: the size is the one
	// folded.
	if f, size, err := fsstore.OpenSized(s.LogPath()); err == nil && f != nil {
		f.Close()
		s.writeCache(st, size)
	}
	return st, nil
}

// cache is the state the log makes, as of a log of LogSize bytes: written
// after each change without a sync, and used only while the log has that
// size, so that a session's start and a change read one small file
// rather than the whole log. A cache that is missing, does not parse
// (a power cut), or was written for another size is passed over, and
// the log folded.
type cache struct {
	LogSize int64 `json:"log_size"`
	State
}

// cached returns the state from the cache, when it is the log's as it is.
func (s *Store) cached() (State, bool) {
	f, size, err := fsstore.OpenSized(s.LogPath())
	if err != nil || f == nil {
		return State{}, false
	}
	f.Close()
	c, ok := s.readCache()
	if !ok || c.LogSize != size {
		return State{}, false
	}
	return c.State, true
}

// cacheMagic begins the cache; another version's cache does not decode.
const cacheMagic = "hermes memory cache 1\n"

// readCache reads the cache, in the engine's cache format
// (fsstore.CacheDecoder: gob's decoding was most of a session's start):
// the log's size, the last seq, then MEMORY.md's entries and USER.md's,
// each a count then each entry's text, seq and author.
func (s *Store) readCache() (cache, bool) {
	b, err := os.ReadFile(s.CachePath())
	if err != nil {
		return cache{}, false
	}
	d := fsstore.NewCacheDecoder(b, cacheMagic)
	c := cache{LogSize: d.Int()}
	c.Seq = d.Int()
	c.Memory = readEntries(d)
	c.User = readEntries(d)
	if !d.Done() {
		return cache{}, false
	}
	return c, true
}

func readEntries(d *fsstore.CacheDecoder) []Entry {
	n := d.Count()
	if n == 0 {
		return nil
	}
	out := make([]Entry, n)
	for i := range out {
		out[i] = Entry{Text: d.Text(), Seq: d.Int(), By: d.Text()}
	}
	return out
}

// writeCache writes the cache of st for a log of size bytes. A cache
// that cannot be written is only slower reads: the error is dropped.
func (s *Store) writeCache(st State, size int64) {
	e := fsstore.NewCacheEncoder(cacheMagic)
	e.Int(size)
	e.Int(st.Seq)
	for _, entries := range [][]Entry{st.Memory, st.User} {
		e.Uint(uint64(len(entries)))
		for _, x := range entries {
			e.Text(x.Text)
			e.Int(x.Seq)
			e.Text(x.By)
		}
	}
	fsstore.WriteCacheFile(s.CachePath(), e.Bytes())
}

// Log calls fn with each change, oldest first.
func (s *Store) Log(fn func(Change)) error {
	_, err := s.scan(fn)
	return err
}

// fold reads the log and applies each change; fn, when set, is told of
// each. A change that does not apply (the log was edited by hand) is
// skipped and said through Warn.
func (s *Store) fold(fn func(Change)) (State, error) {
	var st State
	_, err := s.scan(func(c Change) {
		if fn != nil {
			fn(c)
		}
		if err := apply(&st, c); err != nil {
			s.warn(fmt.Sprintf("%s: change %d: %v; skipped", s.LogPath(), c.Seq, err))
		}
		st.Seq = c.Seq
	})
	return st, err
}

// scan calls fn with each complete line of the log that parses. A torn
// tail is said and skipped; a line that does not parse is said and
// skipped (fsck reports it). It returns the log's size as read.
func (s *Store) scan(fn func(Change)) (int64, error) {
	return fsstore.ScanRecords(s.LogPath(), s.warn, fn)
}

// apply makes change c on st.
func apply(st *State, c Change) error {
	if err := CheckTarget(c.Target); err != nil {
		return err
	}
	entries := st.Entries(c.Target)
	at := -1
	if c.Op != OpAdd {
		at = indexOf(entries, c.Old)
		if at < 0 {
			return fmt.Errorf("%s has no entry %q to %s", FileName(c.Target), clip(c.Old), c.Op)
		}
	}
	switch c.Op {
	case OpAdd:
		entries = append(entries, Entry{Text: c.New, Seq: c.Seq, By: c.By})
	case OpReplace:
		entries = append([]Entry(nil), entries...)
		entries[at] = Entry{Text: c.New, Seq: c.Seq, By: c.By}
	case OpRemove:
		entries = append(entries[:at:at], entries[at+1:]...)
	default:
		return fmt.Errorf("unknown operation %q", c.Op)
	}
	st.set(c.Target, entries)
	return nil
}

func indexOf(entries []Entry, text string) int {
	for i, e := range entries {
		if e.Text == text {
			return i
		}
	}
	return -1
}

// clip shortens text for a message.
func clip(text string) string {
	const max = 60
	if utf8.RuneCountInString(text) <= max {
		return text
	}
	return string([]rune(text)[:max]) + "…"
}

// Result is what a change did: the change (Seq 0 when nothing changed:
// an entry added again), and its file as it is now.
type Result struct {
	Change  Change  `json:"change"`
	Entries []Entry `json:"entries"`
	Chars   int     `json:"chars"`
	Max     int     `json:"max_chars"`
}

// Notice is the warning a change that leaves its file at NoticeAt of its
// bound or more comes with, "" below it.
func (r Result) Notice() string {
	return notice(r.Change.Target, r.Chars, r.Max)
}

func notice(target string, chars, max int) string {
	if max <= 0 || float64(chars) < NoticeAt*float64(max) {
		return ""
	}
	return fmt.Sprintf("%s is %d%% full (%d of %d characters): replace or remove entries before adding more",
		FileName(target), chars*100/max, chars, max)
}

// Usage says how full target is in st, with Notice's warning when it is
// nearly full.
func (s *Store) Usage(st State, target string) string {
	chars, max := Chars(st.Entries(target)), s.Max(target)
	u := fmt.Sprintf("%s: %d of %d characters (%d%%), %d entries", FileName(target), chars, max, percent(chars, max), len(st.Entries(target)))
	if n := notice(target, chars, max); n != "" {
		u += "; " + n
	}
	return u
}

func percent(n, max int) int {
	if max <= 0 {
		return 0
	}
	return n * 100 / max
}

// Who is the author of a change: ByAgent (with the session it ran in) or
// ByUser.
type Who struct {
	By        string
	SessionID string
}

// Add adds text as a new entry of target. An entry equal to one there is
// not added again (Seq 0): a retried add is a no-op.
func (s *Store) Add(target, text string, who Who) (Result, error) {
	if err := CheckTarget(target); err != nil {
		return Result{}, err
	}
	text, err := checkEntry(text)
	if err != nil {
		return Result{}, err
	}
	return s.change(target, func(st State) (Change, error) {
		if indexOf(st.Entries(target), text) >= 0 {
			return Change{}, nil
		}
		return Change{Op: OpAdd, New: text}, nil
	}, who)
}

// Replace puts text in place of the one entry of target that contains
// old. An old found in no entry is ErrNotFound; in several, ErrInvalid
// naming them.
func (s *Store) Replace(target, old, text string, who Who) (Result, error) {
	if err := CheckTarget(target); err != nil {
		return Result{}, err
	}
	text, err := checkEntry(text)
	if err != nil {
		return Result{}, err
	}
	return s.change(target, func(st State) (Change, error) {
		e, err := unique(st.Entries(target), target, old)
		if err != nil {
			return Change{}, err
		}
		if e.Text == text {
			return Change{}, nil
		}
		if indexOf(st.Entries(target), text) >= 0 {
			return Change{}, fsstore.Invalidf("%s already has the entry %q; remove this one instead", FileName(target), clip(text))
		}
		return Change{Op: OpReplace, Old: e.Text, New: text}, nil
	}, who)
}

// Remove removes the one entry of target that contains old (see Replace).
func (s *Store) Remove(target, old string, who Who) (Result, error) {
	if err := CheckTarget(target); err != nil {
		return Result{}, err
	}
	return s.change(target, func(st State) (Change, error) {
		e, err := unique(st.Entries(target), target, old)
		if err != nil {
			return Change{}, err
		}
		return Change{Op: OpRemove, Old: e.Text}, nil
	}, who)
}

// Revert undoes change seq with a new change: an add is removed, a
// removed entry added back (at the end), a replaced one put back. It is
// refused when the entry it undoes has changed since (ErrRefused, naming
// what to do), and bounded as any change.
func (s *Store) Revert(seq int64, who Who) (Result, error) {
	if seq <= 0 {
		return Result{}, fsstore.Invalidf("change %d: changes are numbered from 1 (hermes memory log)", seq)
	}
	var target string
	return s.changeOf(true, func(st State, log []Change) (string, Change, error) {
		if seq > int64(len(log)) || log[seq-1].Seq != seq {
			return "", Change{}, fsstore.NotFoundf("memory change %d not found (hermes memory log lists them)", seq)
		}
		c := log[seq-1]
		target = c.Target
		inv := Change{Reverts: seq}
		entries := st.Entries(c.Target)
		switch c.Op {
		case OpAdd:
			inv.Op, inv.Old = OpRemove, c.New
		case OpRemove:
			inv.Op, inv.New = OpAdd, c.Old
			if indexOf(entries, c.Old) >= 0 {
				return "", Change{}, fsstore.Refusedf("change %d removed an entry that %s holds again; nothing to revert", seq, FileName(c.Target))
			}
			return target, inv, nil
		case OpReplace:
			inv.Op, inv.Old, inv.New = OpReplace, c.New, c.Old
		default:
			return "", Change{}, fsstore.Invalidf("change %d has unknown operation %q", seq, c.Op)
		}
		if indexOf(entries, inv.Old) < 0 {
			return "", Change{}, fsstore.Refusedf("change %d's entry %q is no longer in %s (a later change made it otherwise); revert that one first", seq, clip(inv.Old), FileName(c.Target))
		}
		return target, inv, nil
	}, who)
}

// unique finds the one entry of target that contains old.
func unique(entries []Entry, target, old string) (Entry, error) {
	if strings.TrimSpace(old) == "" {
		return Entry{}, fsstore.Invalidf("name the entry by some of its text")
	}
	var found []Entry
	for _, e := range entries {
		if strings.Contains(e.Text, old) {
			found = append(found, e)
		}
	}
	switch len(found) {
	case 0:
		return Entry{}, fsstore.NotFoundf("no entry of %s contains %q", FileName(target), clip(old))
	case 1:
		return found[0], nil
	}
	quoted := make([]string, len(found))
	for i, e := range found {
		quoted[i] = fmt.Sprintf("%q", clip(e.Text))
	}
	return Entry{}, fsstore.Invalidf("%q is in %d entries of %s (%s); give more of the one you mean", clip(old), len(found), FileName(target), strings.Join(quoted, ", "))
}

// checkEntry trims text and refuses what cannot be an entry: nothing,
// bytes that are not UTF-8, control characters other than newline and
// tab, a line holding only the separator.
func checkEntry(text string) (string, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return "", fsstore.Invalidf("an entry needs some text")
	}
	if !utf8.ValidString(text) {
		return "", fsstore.Invalidf("an entry must be UTF-8 text")
	}
	for _, r := range text {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return "", fsstore.Invalidf("an entry may not hold control character %U", r)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "§" {
			return "", fsstore.Invalidf("an entry may not hold a line of only §, which separates entries")
		}
	}
	return text, nil
}

// change makes the change decide returns on target (none when it returns
// a Change with no Op).
func (s *Store) change(target string, decide func(State) (Change, error), who Who) (Result, error) {
	return s.changeOf(false, func(st State, _ []Change) (string, Change, error) {
		c, err := decide(st)
		return target, c, err
	}, who)
}

// changeOf makes a change under the log's lock: it reads the state (the
// cache, or the log folded; the whole log when withLog, for decide), asks
// decide for the change (and its target), checks the bound, appends the
// change (synced: the commit point) and writes the target's file and the
// cache again from the state after it. A change that would pass the
// bound is refused with the sizes; one that shrinks a file already past
// it (the bound was lowered) is let through.
func (s *Store) changeOf(withLog bool, decide func(State, []Change) (string, Change, error), who Who) (Result, error) {
	if err := fsstore.EnsureDir(s.Dir); err != nil {
		return Result{}, err
	}
	unlock, err := fsstore.LockUntil(s.lockPath(), s.LockTimeout, s.Cancel)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	var log []Change
	st, ok := State{}, false
	if !withLog {
		st, ok = s.cached()
	}
	if !ok {
		var err error
		if st, err = s.fold(func(c Change) {
			if withLog {
				log = append(log, c)
			}
		}); err != nil {
			return Result{}, err
		}
	}
	target, c, err := decide(st, log)
	if err != nil {
		return Result{}, err
	}
	max := s.Max(target)
	if c.Op == "" {
		entries := st.Entries(target)
		return Result{Change: Change{Target: target}, Entries: entries, Chars: Chars(entries), Max: max}, nil
	}
	before := st.Entries(target)
	c.Seq, c.TS, c.Target, c.By, c.SessionID = st.Seq+1, fsstore.TimeOf(s.Now()), target, who.By, who.SessionID
	if c.By == "" {
		c.By = ByUser
	}
	after := st
	if err := apply(&after, c); err != nil {
		return Result{}, err
	}
	entries := after.Entries(target)
	chars, was := Chars(entries), Chars(before)
	if chars > max && chars > was {
		return Result{}, fsstore.Refusedf("%s would hold %d characters, over its limit of %d (now %d, this change %+d): replace or remove entries first (hermes memory show lists them)",
			FileName(target), chars, max, was, chars-was)
	}
	line, err := json.Marshal(c)
	if err != nil {
		return Result{}, err
	}
	f, err := fsstore.AppendLog(s.LogPath(), s.Now(), s.warn, [][]byte{append(line, '\n')}, func() error { return nil })
	if err != nil {
		return Result{}, err
	}
	defer f.Close()
	after.Seq = c.Seq
	if size, err := fsstore.FreshSize(f); err == nil {
		s.writeCache(after, size)
	}
	// The change is committed; its file is a view of the log, and one
	// that cannot be written now is written by the next change or fsck.
	if err := s.writeView(target, before, entries); err != nil {
		s.warn(fmt.Sprintf("%s not written (the change is stored in %s; fsck --repair writes the file): %v", s.Path(target), s.LogPath(), err))
	}
	return Result{Change: c, Entries: entries, Chars: chars, Max: max}, nil
}

// writeView writes target's file for entries. A file that does not say
// what the log said before this change (edited outside hermes, or left
// behind by a crash) is first copied aside as <file>.replaced-<unix>, so
// that nothing a user wrote there is lost. The file is a view of the log,
// which holds the change already (synced: the commit point), so it is
// written like a cache: renamed into place whole, neither it nor its
// directory synced. A power cut may give back the version before, or an
// empty file; the next change writes it again (copying the version
// before aside), as fsck --repair does.
func (s *Store) writeView(target string, before, entries []Entry) error {
	path := s.Path(target)
	if err := s.keepEdited(path, Render(before)); err != nil {
		return err
	}
	return fsstore.WriteCacheFile(path, []byte(Render(entries)))
}

// keepEdited copies the file at path aside when it holds other than want;
// an empty file holds nothing to keep.
func (s *Store) keepEdited(path, want string) error {
	have, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || err == nil && (string(have) == want || len(have) == 0) {
		return nil
	}
	if err != nil {
		return err
	}
	dst, err := fsstore.CopyAside(path, fmt.Sprintf(".replaced-%d", s.Now().Unix()))
	if err != nil {
		return err
	}
	s.warn(fmt.Sprintf("%s did not hold what %s says; kept aside as %s (add what it holds with hermes memory add)", path, s.LogPath(), dst))
	return nil
}
