package sessions

import (
	"bufio"
	"bytes"
	"container/heap"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// The activity catalog answers "which sessions were active most recently"
// without opening every document: `sessions list` over 100,000 sessions
// reads a few kilobytes from its end instead of 100,000 files.
//
// It is an append-only JSONL log, .catalog.jsonl, with one line
// {"session_id","at"} for every write to a session (create, append, a
// metadata change), in the order the writes happened. Reading it backwards,
// the first line seen for each session is its latest activity. Appends to
// it are serialized by .catalog.lock, held only for the one write and sync.
// An append's line takes that lock without a holder record
// (fsstore.LockLogUntil: the catalog is a log, fenced by its end); a
// compaction's rename, a document's commit point, takes it with one.
// An append's line (Append) is written after its transcript is synced and
// is not synced itself: a crash can lose it, leaving the catalog behind
// the transcript, never ahead, which Check reports and repair levels. A
// new session's line (Create, Fork) is written before its document and
// not synced either: a crash can lose it, leaving a catalog that lacks
// the session (found by its id, not listed), which Check reports and
// repair levels. The lines of the other writes are synced before their
// document is written.
//
// "at" is the session's activity, which is the moment of the write except
// for an import: a session whose history ended 200 days ago was last
// active then, not when it was imported. Such a line also carries
// "written", the moment of the write. Since every "at" is at most its
// line's write time, and lines are in write order, a reader walking
// backwards knows that no line still unread is more recent than the write
// time of the line it is at: List holds back the sessions of older
// activity until then, so it orders by activity and still stops early.
//
// Its first line, {"catalog":"<16 hex digits>"}, names the file: every
// catalog the store writes whole (a compaction, a rebuild from the
// documents) begins with a name drawn at random for it, so that a cache
// made from one catalog (the value index, values.go) is not taken for
// the cache of a later one, even of the same size and ending in the same
// line, that the file system gave the same inode number (ext4 gives a
// freed inode's number to the next file it makes). It names no session,
// so every walk of the catalog passes it by. A catalog without one (an
// earlier build's, or one written by hand) is read as any other; the
// value index is not used with it, and the first list that would use it
// compacts it, which names it.
//
// The catalog is a cache. The documents are the truth: a line whose session
// has no document is skipped; a missing catalog is rebuilt from the
// documents. A write that fails after its line takes the line back
// (touchCatalogThen), so the catalog does not say what no document says;
// fsck reports a catalog that lacks a session, counts one without a
// document, or gives another state than a document (a crash between the
// two writes), and `fsck --repair` rebuilds it.
//
// It is compacted to the last line of each session it names (sessions
// whose last line says removed are dropped), in their order, by the ratio
// of its size to its size after the last compaction (.catalog.base):
// once it is catalogCompactRatio times that plus catalogCompactMin, so
// that the lines a hot session's appends leave behind stay a bounded
// share of what List walks. The sizes stand in for the counts of lines
// and sessions: every line of one profile is about the same length. The
// ratio is looked at when an append takes the catalog past a multiple of
// catalogCompactMin, so an append reads no more than before. A
// compaction reads the catalog, not the documents, and keeps lines as
// they were written, so List, Idle and Stats read the same answers from
// it. It does not make appends wait: it runs under its own lock
// (.catalog.compact.lock; a writer that finds it taken leaves the
// compaction to its holder), after the write that called for it is
// synced, and for an append or a Save after its session's lock is
// released (another write, rarer, compacts while it holds its locks). It writes the compacted lines
// to a temp file and syncs them without the catalog lock; then, under the
// catalog lock, it checks that the catalog is still the file it read and
// still begins with what it read (a failed write may have taken back its
// last line, fsck may have rebuilt it: then it gives up), copies the lines
// appended meanwhile, syncs, and renames the temp file over the catalog.
// A crash at any step leaves the old catalog or the whole new one.
const (
	catalogName            = ".catalog.jsonl"
	catalogLockName        = ".catalog.lock"
	catalogCompactLockName = ".catalog.compact.lock"
	catalogBaseName        = ".catalog.base"
	catalogCompactMin      = 1 << 20
	catalogCompactRatio    = 2
)

// compactAt is catalogCompactMin, or the store's compactMin when set.
func (s *Store) compactAt() int64 {
	if s.compactMin > 0 {
		return s.compactMin
	}
	return catalogCompactMin
}

type catalogEntry struct {
	SessionID string       `json:"session_id"`
	At        fsstore.Time `json:"at"`
	Written   fsstore.Time `json:"written,omitempty"` // set when it is not At (an import)
	// What `sessions stats` counts, as of this write (see stats.go): the
	// session's state, source, message count and transcript size, or that
	// it was removed. Lines written before stats read the catalog have
	// none of them.
	State        string `json:"state,omitempty"`
	Source       string `json:"source,omitempty"`
	MessageCount int64  `json:"message_count,omitempty"`
	Bytes        int64  `json:"bytes,omitempty"`
	Removed      bool   `json:"removed,omitempty"`
}

// written is when the line was appended.
func (e *catalogEntry) written() fsstore.Time {
	if e.Written != "" {
		return e.Written
	}
	return e.At
}

func (s *Store) catalogPath() string { return filepath.Join(s.Dir, catalogName) }

// CatalogSize returns the activity catalog's size in bytes, 0 when there
// is none yet: a line of a few hundred bytes for each write to a session
// since the catalog was last compacted, so a measure of how many sessions
// a walk of them will read, without reading it.
func (s *Store) CatalogSize() (int64, error) {
	fi, err := os.Stat(s.catalogPath())
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// entryOf is the catalog line of a write to sess at now, recording
// activity at time at (now, but for an import's older history).
func (s *Store) entryOf(sess *Session, at, now time.Time) catalogEntry {
	var size int64
	if fi, err := os.Lstat(s.logPath(sess.ID)); err == nil {
		size = fi.Size()
	}
	return entrySized(sess, at, now, size)
}

// entrySized is entryOf for a writer that knows the transcript's size
// (an append has just taken it from the file it wrote): no stat.
func entrySized(sess *Session, at, now time.Time, size int64) catalogEntry {
	e := catalogEntry{SessionID: sess.ID, At: fsstore.TimeOf(at), State: sess.State, Source: sess.Source, MessageCount: sess.MessageCount, Bytes: size}
	if w := fsstore.TimeOf(now); w != e.At {
		e.Written = w
	}
	return e
}

// touchCatalogThen records a write to sess, active at time at, synced,
// then runs commit, the write of the document. If commit fails, the line
// is taken back (retract), so that the catalog does not say what no
// document says: a failed end leaves no line that says ended.
func (s *Store) touchCatalogThen(sess *Session, at, now time.Time, commit func() error) error {
	e := s.entryOf(sess, at, now)
	if err := s.syncCatalog(e); err != nil {
		return err
	}
	if err := commit(); err != nil {
		s.retract(e)
		return err
	}
	return nil
}

// addCatalogThen is touchCatalogThen for a new session (create, fork),
// whose line is not synced: a power cut may lose it and keep the
// document, leaving a catalog that lacks the session, which Check reports
// and repair levels. The line is taken back if commit fails.
func (s *Store) addCatalogThen(sess *Session, at, now time.Time, commit func() error) error {
	e := s.entryOf(sess, at, now)
	f, due, err := s.appendCatalog(e)
	if err != nil {
		return err
	}
	if f != nil {
		f.Close()
	}
	if err := commit(); err != nil {
		s.retract(e)
		return err
	}
	if due {
		s.compactCatalogIfDue()
	}
	return nil
}

// retract takes back the catalog line e of a write that failed after it
// was appended, unless the session, as it now is, is what e says (a
// document whose rename was done when the directory's sync failed). The
// line is cut off when it is still the catalog's last (a truncation needs
// no free space; a catalog left empty is removed, since List rebuilds a
// missing one from the documents, and an empty one would hide them all),
// else a line that records the session as it now is (removed, when it has
// no document) is appended after it. When neither can be done the catalog
// disagrees with the document until fsck --repair rebuilds it; fsck
// reports it. The caller holds the session's lock.
func (s *Store) retract(e catalogEntry) {
	unlock, err := fsstore.Lock(filepath.Join(s.Dir, catalogLockName), s.LockTimeout)
	if err == nil {
		err = s.retractLocked(e)
		unlock()
	}
	if err != nil {
		s.Warn(fmt.Sprintf("activity catalog: the line of a failed write to session %s stays (%v); hermes fsck --repair rebuilds the catalog", e.SessionID, err))
	}
}

func (s *Store) retractLocked(e catalogEntry) error {
	now := s.Now()
	undo := catalogEntry{SessionID: e.SessionID, At: fsstore.TimeOf(now), Removed: true}
	switch sess, err := s.readSession(e.SessionID, true); {
	case err == nil:
		if sess.State == e.State && sess.MessageCount == e.MessageCount {
			return nil
		}
		at, terr := sess.UpdatedAt.Instant()
		if terr != nil {
			at = now
		}
		undo = s.entryOf(&sess, at, now)
	case !errors.Is(err, fsstore.ErrNotFound):
		return err
	case e.Removed:
		return nil
	}
	f, err := os.OpenFile(s.catalogPath(), os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	line, _ := json.Marshal(e)
	line = append(line, '\n')
	if n := int64(len(line)); size >= n {
		tail := make([]byte, n)
		if _, err := f.ReadAt(tail, size-n); err == nil && bytes.Equal(tail, line) {
			if size == n {
				if err := os.Remove(s.catalogPath()); err != nil {
					return err
				}
				return fsstore.SyncDir(s.Dir)
			}
			if err := f.Truncate(size - n); err != nil {
				return err
			}
			return fsstore.SyncLog(f)
		}
	}
	b, _ := json.Marshal(undo)
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		return err
	}
	if err := fsstore.WriteLines(f, [][]byte{append(b, '\n')}); err != nil {
		return err
	}
	return fsstore.SyncLog(f)
}

// recordRemoval records that session id was removed, synced.
func (s *Store) recordRemoval(id string, now time.Time) error {
	return s.syncCatalog(catalogEntry{SessionID: id, At: fsstore.TimeOf(now), Removed: true})
}

// syncCatalog appends e and syncs it; a line whose sync fails is taken
// back, since the write it records is reported as failed. It reports
// whether a compaction is due (compactCatalogIfDue).
func (s *Store) syncCatalog(e catalogEntry) error {
	f, due, err := s.appendCatalog(e)
	if err != nil || f == nil {
		return err
	}
	err = fsstore.SyncLog(f)
	f.Close()
	if err != nil {
		s.retract(e)
		return err
	}
	if due {
		s.compactCatalogIfDue()
	}
	return nil
}

// appendCatalog appends e. The lock is held for the write only: a sync
// covers whatever other writers appended meanwhile. due says the line
// took the catalog past a multiple of catalogCompactMin: the caller
// calls compactCatalogIfDue once the line is synced and its session's
// lock released.
func (s *Store) appendCatalog(e catalogEntry) (_ *os.File, due bool, _ error) {
	_, err := os.Lstat(s.catalogPath())
	made := errors.Is(err, os.ErrNotExist)
	lock := fsstore.LockLogUntil
	if made {
		lock = fsstore.LockUntil // the catalog made from the documents is renamed into place
	}
	unlock, err := lock(filepath.Join(s.Dir, catalogLockName), s.LockTimeout, s.Cancel)
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	if made {
		// No catalog: make it from the documents first, so that the one
		// this line starts holds every session (makeCatalog).
		if _, err := os.Lstat(s.catalogPath()); errors.Is(err, os.ErrNotExist) {
			if err := s.compactCatalogLocked(); err != nil {
				return nil, false, err
			}
		}
	}
	line, _ := json.Marshal(e)
	now, _ := e.written().Instant()
	f, moved, err := fsstore.OpenAppend(s.catalogPath(), now)
	if err != nil {
		return nil, false, err
	}
	s.warnMoved(moved)
	if err := fsstore.WriteLines(f, [][]byte{append(line, '\n')}); err != nil {
		f.Close()
		if made {
			// An empty catalog would hide every session from List, which
			// rebuilds a missing one from the documents.
			os.Remove(s.catalogPath())
		}
		return nil, false, err
	}
	if fi, err := f.Stat(); err == nil {
		size := fi.Size()
		due = size/s.compactAt() != (size-int64(len(line))-1)/s.compactAt()
	}
	return f, due, nil
}

// compactCatalogIfDue compacts the catalog when it has grown past
// catalogCompactRatio times its size after the last compaction, plus
// catalogCompactMin; a failure is only reported, since the catalog is
// whole without it.
func (s *Store) compactCatalogIfDue() {
	fi, err := os.Lstat(s.catalogPath())
	if err != nil || fi.Size() < catalogCompactRatio*s.catalogBase()+s.compactAt() {
		return
	}
	s.compactCatalogNow()
}

// compactCatalogNow compacts the catalog unless another compaction is
// under way; a failure is only reported (but for a read-only profile's),
// since the catalog is whole without it.
func (s *Store) compactCatalogNow() {
	unlock, err := fsstore.Lock(filepath.Join(s.Dir, catalogCompactLockName), 0)
	var timeout *fsstore.LockTimeoutError
	if errors.As(err, &timeout) {
		return
	}
	if err == nil {
		err = s.compactCatalog()
		unlock()
	}
	if err != nil && !errors.Is(err, errCatalogMoved) && !fsstore.IsReadOnly(err) {
		s.Warn(fmt.Sprintf("activity catalog: not compacted: %v", err))
	}
}

// catalogBase is the catalog's size after its last compaction, 0 when
// unknown.
func (s *Store) catalogBase() int64 {
	b, err := os.ReadFile(filepath.Join(s.Dir, catalogBaseName))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return max(n, 0)
}

// errCatalogMoved ends a compaction whose catalog changed under it other
// than by appends.
var errCatalogMoved = errors.New("the catalog changed during its compaction")

// compactCatalog rewrites the catalog with the last line of each session
// (see the top of this file). The caller holds the compaction lock.
func (s *Store) compactCatalog() error {
	src, size, err := fsstore.OpenSizedFlag(s.catalogPath(), os.O_RDONLY|syscall.O_NOFOLLOW)
	if src == nil || err != nil {
		return err
	}
	defer src.Close()
	// Up to the end of the last whole line: a torn tail is the next
	// writer's to move aside.
	whole := int64(-1)
	if err := fsstore.EachLineBackward(src, size, func(line []byte, off int64) bool {
		whole = off + int64(len(line)) + 1
		return false
	}); err != nil || whole < 0 {
		return err
	}
	size = whole
	// The offset of each session's last line.
	last := map[string]int64{}
	if _, err := fsstore.ScanLines(src, size, func(line []byte, off int64) error {
		if id, ok := lineSession(line); ok {
			last[id] = off
		}
		return nil
	}); err != nil {
		return err
	}
	var kept int64
	unlock := func() {}
	defer func() { unlock() }()
	err = fsstore.WriteAtomic(s.catalogPath(), func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 256<<10)
		bw.Write(catalogHeader())
		if _, err := fsstore.ScanLines(src, size, func(line []byte, off int64) error {
			if id, ok := lineSession(line); ok && last[id] == off && !bytes.Contains(line, []byte(`"removed":true`)) {
				bw.Write(line)
				bw.WriteByte('\n')
			}
			return nil
		}); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		tmp := w.(*os.File)
		// The bulk is synced before the catalog lock is taken, so that
		// appends wait only for the lines they added meanwhile.
		if err := fsstore.SyncLog(tmp); err != nil {
			return err
		}
		fi, err := tmp.Stat()
		if err != nil {
			return err
		}
		kept = fi.Size()
		if unlock, err = fsstore.LockUntil(filepath.Join(s.Dir, catalogLockName), s.LockTimeout, s.Cancel); err != nil {
			unlock = func() {}
			return err
		}
		return s.copyCatalogTail(src, size, tmp)
	})
	if err != nil {
		return err
	}
	return fsstore.WriteCacheFile(filepath.Join(s.Dir, catalogBaseName), []byte(strconv.FormatInt(kept, 10)+"\n"))
}

// copyCatalogTail appends to tmp the lines written to the catalog after
// its first size bytes, which src read; errCatalogMoved when the catalog
// is no longer src, or no longer ends its first size bytes as src did.
// The caller holds the catalog lock.
func (s *Store) copyCatalogTail(src *os.File, size int64, tmp *os.File) error {
	cur, err := os.OpenFile(s.catalogPath(), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer cur.Close()
	a, err1 := src.Stat()
	b, err2 := cur.Stat()
	if err1 != nil || err2 != nil || !os.SameFile(a, b) || b.Size() < size {
		return errCatalogMoved
	}
	// Only the last line can have been taken back (retract): the line
	// that ends the part read must still be there, byte for byte.
	n := min(size, 64<<10)
	was, now := make([]byte, n), make([]byte, n)
	if _, err := src.ReadAt(was, size-n); err != nil {
		return err
	}
	if _, err := cur.ReadAt(now, size-n); err != nil {
		return err
	}
	if !bytes.Equal(was, now) {
		return errCatalogMoved
	}
	if _, err := io.Copy(tmp, io.NewSectionReader(cur, size, b.Size()-size)); err != nil {
		return err
	}
	return nil
}

// catalogHeaderPrefix begins a catalog's first line, which names it (see
// the top of this file): {"catalog":"<16 hex digits>"}.
var catalogHeaderPrefix = []byte(`{"catalog":"`)

// catalogHeaderLen is the length of that line, its newline included.
const catalogHeaderLen = len(`{"catalog":"`) + 16 + len(`"}`) + 1

// catalogHeader is the first line of a catalog about to be written whole:
// a name drawn at random for it.
func catalogHeader() []byte {
	var n [8]byte
	rand.Read(n[:])
	return fmt.Appendf(nil, "{\"catalog\":\"%x\"}\n", n)
}

// catalogID returns the name the catalog f's first line gives it; ""
// when it has none.
func catalogID(f *os.File) string {
	var b [catalogHeaderLen]byte
	if _, err := f.ReadAt(b[:], 0); err != nil {
		return ""
	}
	rest, ok := bytes.CutPrefix(b[:], catalogHeaderPrefix)
	if !ok || !bytes.HasSuffix(rest, []byte("\"}\n")) {
		return ""
	}
	id := rest[:16]
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return ""
		}
	}
	return string(id)
}

// lineSession returns the session id a catalog line names, read from its
// start as seenLine does, or by decoding a line of another form.
func lineSession(line []byte) (string, bool) {
	id, ok := lineSessionBytes(line)
	return string(id), ok
}

// lineSessionBytes is lineSession without making a string: a walk that
// meets the lines of many sessions makes one only for those it keeps.
func lineSessionBytes(line []byte) ([]byte, bool) {
	if rest, ok := bytes.CutPrefix(line, catalogLinePrefix); ok {
		if end := bytes.IndexByte(rest, '"'); end >= 0 && bytes.IndexByte(rest[:end], '\\') < 0 {
			return rest[:end], true
		}
	}
	if bytes.HasPrefix(line, catalogHeaderPrefix) {
		return nil, false
	}
	var e catalogEntry
	if json.Unmarshal(line, &e) != nil || fsstore.CheckID("session id", e.SessionID) != nil {
		return nil, false
	}
	return []byte(e.SessionID), true
}

// ListOptions filter List.
type ListOptions struct {
	Limit  int // 0: no limit
	Source string
	State  string
	// Parent keeps the sessions whose parent_session_id it is: the
	// catalog does not hold it, so each session's document decides.
	Parent string
}

// List returns sessions by most recent activity first. It walks the
// catalog backwards and opens only the documents it returns, so its cost
// follows the limit, not the number of sessions. A session whose line says
// it was last active before the line was written (an import) is held back
// until the walk reaches lines written before that activity. Message
// counts are checked against the transcripts.
//
// A filter on state or source is applied to each session's last catalog
// line first (filterRejects), then to the document of each session the
// line lets through, which is the truth: a list never holds a session
// whose document does not match. The line records the session as of its
// last write through the store, so a session is missing from a filtered
// list only when its document was changed otherwise (by hand), or after a
// crash between a write's line and its document, which fsck reports and
// `fsck --repair` rebuilds (see doc.go). A filter that few sessions pass
// is read from a value index instead of the whole catalog (values.go).
func (s *Store) List(opts ListOptions) ([]Session, error) {
	f, size, err := s.openCatalog()
	if f == nil || err != nil {
		return nil, err
	}
	defer f.Close()
	budget := 0
	if opts.State != "" || opts.Source != "" {
		budget = filterWalkLines
	}
	out, rare, err := s.listFrom(f, size, opts, budget)
	if !rare || err != nil {
		return out, err
	}
	if vf, vsize := s.valueIndex(f, size, opts); vf != nil {
		defer vf.Close()
		out, _, err = s.listFrom(vf, vsize, opts, 0)
		return out, err
	}
	out, _, err = s.listFrom(f, size, opts, 0)
	return out, err
}

// listFrom is List's walk of the catalog f, or of a value file, which
// holds catalog lines in the same order. With a budget, it stops after
// that many lines when fewer than one in filterRareShare passed the
// filter and the page is not full, and says the filter is rare: the
// caller reads the list from the value index.
func (s *Store) listFrom(f *os.File, size int64, opts ListOptions, budget int) (out []Session, rare bool, err error) {
	seen := map[string]bool{}
	var held heldSessions
	lines, passed := 0, 0
	// emit lists held sessions active at or after bound; false when the
	// limit is reached.
	emit := func(bound fsstore.Time) bool {
		for len(held) > 0 && !held[0].at.Before(bound) {
			id := heap.Pop(&held).(heldSession).id
			sess, err := s.readDocument(id, false)
			if err != nil {
				if !errors.Is(err, fsstore.ErrNotFound) {
					s.Warn(err.Error())
				}
				// A document damaged or lost beside its transcript: the
				// session is listed, marked so (see Inspect).
				if sess, err = s.damagedEntry(id); err != nil {
					continue
				}
			} else {
				// A transcript whose last line is damaged leaves the
				// document's own count: the session is still listed, and
				// fsck names it.
				s.current(&sess)
			}
			if (opts.Source != "" && sess.Source != opts.Source) || (opts.State != "" && sess.State != opts.State) ||
				(opts.Parent != "" && sess.ParentSessionID != opts.Parent) {
				continue
			}
			out = append(out, sess)
			if opts.Limit > 0 && len(out) >= opts.Limit {
				return false
			}
		}
		return true
	}
	err = fsstore.EachLineBackward(f, size, func(line []byte, _ int64) bool {
		if lines++; lines == budget && passed*filterRareShare < lines {
			rare = true
			return false
		}
		if seenLine(line, seen) {
			return true
		}
		if (opts.State != "" || opts.Source != "") && filterRejects(line, opts, seen) {
			return true
		}
		var e catalogEntry
		if json.Unmarshal(line, &e) != nil || seen[e.SessionID] || fsstore.CheckID("session id", e.SessionID) != nil {
			return true
		}
		seen[e.SessionID] = true
		passed++
		heap.Push(&held, heldSession{id: e.SessionID, at: e.At, n: len(seen)})
		return emit(e.written())
	})
	if err == nil && !rare && (opts.Limit <= 0 || len(out) < opts.Limit) {
		emit("")
	}
	return out, rare, err
}

// catalogLinePrefix is how every catalog line the store writes begins:
// session_id is catalogEntry's first field.
var catalogLinePrefix = []byte(`{"session_id":"`)

// seenLine reports whether the catalog line is one of a session in seen,
// read from the line's start without decoding it. A walk of the catalog
// from its end skips the older lines of the sessions it has met this way:
// a session that took many appends since the last compaction leaves as
// many lines, and decoding each cost List about 1.6 µs. A line of any
// other form is false, left to the decoder; an id cut short by an escaped
// quote holds a backslash, which no valid id does, so it is never seen.
func seenLine(line []byte, seen map[string]bool) bool {
	rest, ok := bytes.CutPrefix(line, catalogLinePrefix)
	if !ok {
		return false
	}
	end := bytes.IndexByte(rest, '"')
	return end >= 0 && seen[string(rest[:end])]
}

// filterRejects reports whether the catalog line, the last of its
// session, rules the session out of a list filtered by opts
// (lineRulesOut), and then marks the session seen.
func filterRejects(line []byte, opts ListOptions, seen map[string]bool) bool {
	id, out := lineRulesOut(line, opts)
	if out {
		seen[string(id)] = true
	}
	return out
}

// lineRulesOut reports whether the catalog line, the last of its
// session, rules the session out of a list filtered by opts, and the
// session it names. It reads the line's fields without decoding it,
// since a filter that few sessions pass walks many lines: the store
// writes every line with json.Marshal, in catalogEntry's field order, so
// `"state":"` can only begin the state field (a quote within a string is
// escaped), and an empty source is left out. A removed session has no
// document to list; a line without a state (written before it was
// recorded), or whose value holds an escape, rules nothing out: the
// document decides.
func lineRulesOut(line []byte, opts ListOptions) (id []byte, out bool) {
	id, ok := lineSessionBytes(line)
	if !ok {
		return nil, false
	}
	if bytes.Contains(line, removedField) {
		return id, true
	}
	state, okState := lineString(line, stateField)
	// A line with a state has a source too, left out when empty.
	source, okSource := lineString(line, sourceField)
	if !okState || (!okSource && bytes.Contains(line, sourceField)) {
		return id, false
	}
	return id, (opts.State != "" && string(state) != opts.State) || (opts.Source != "" && string(source) != opts.Source)
}

var (
	stateField   = []byte(`,"state":"`)
	sourceField  = []byte(`,"source":"`)
	removedField = []byte(`,"removed":true`)
)

// lineString returns the string value that follows field in line; false
// when field is absent or the value holds an escape.
func lineString(line, field []byte) ([]byte, bool) {
	i := bytes.Index(line, field)
	if i < 0 {
		return nil, false
	}
	rest := line[i+len(field):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return nil, false
	}
	return rest[:end], true
}

// heldSession is a session List has seen in the catalog and not yet
// listed: its activity, and n, the order it was seen in, which breaks ties
// (the line written later first).
type heldSession struct {
	id string
	at fsstore.Time
	n  int
}

// heldSessions is a container/heap, most recent activity first.
type heldSessions []heldSession

func (h heldSessions) Len() int { return len(h) }
func (h heldSessions) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[j].at.Before(h[i].at)
	}
	return h[i].n < h[j].n
}
func (h heldSessions) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *heldSessions) Push(x any)   { *h = append(*h, x.(heldSession)) }
func (h *heldSessions) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// openCatalog opens the catalog and returns its size, rebuilding it from
// the documents when it is missing; (nil, 0, nil) when there are no
// sessions.
func (s *Store) openCatalog() (*os.File, int64, error) {
	f, size, err := fsstore.OpenSized(s.catalogPath())
	if f != nil || err != nil {
		return f, size, err
	}
	if err := s.makeCatalog(); err != nil {
		return nil, 0, err
	}
	return fsstore.OpenSized(s.catalogPath())
}

// compactCatalogLocked rewrites the catalog atomically with one line per
// session that has a document, oldest activity first. The caller holds the
// catalog lock.
func (s *Store) compactCatalogLocked() error {
	all, err := s.All()
	if err != nil {
		return err
	}
	// UpdatedAt comes from current(), through Later: TimeLayout, which
	// sorts as the instants do.
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].UpdatedAt != all[j].UpdatedAt {
			return all[i].UpdatedAt < all[j].UpdatedAt
		}
		return all[i].ID < all[j].ID
	})
	var b bytes.Buffer
	b.Write(catalogHeader())
	for _, sess := range all {
		e := s.entryOf(&sess, time.Time{}, time.Time{})
		e.At, e.Written = sess.UpdatedAt, ""
		line, _ := json.Marshal(e)
		b.Write(line)
		b.WriteByte('\n')
	}
	return fsstore.WriteFileAtomic(s.catalogPath(), b.Bytes())
}

// RebuildCatalog writes a catalog from the documents, ordered by their
// updated_at, over the one there is (fsck --repair).
func (s *Store) RebuildCatalog() error { return s.catalogFromDocuments(false) }

// makeCatalog writes a catalog from the documents where openCatalog found
// none. It looks again under the lock: an append may have made one
// meanwhile (appendCatalog makes it from the documents, then adds a new
// session's line before that session's document is written), and a
// catalog made from the documents over it would drop that line.
func (s *Store) makeCatalog() error { return s.catalogFromDocuments(true) }

// catalogFromDocuments writes the catalog from the documents under the
// catalog lock (compactCatalogLocked); only when there is none, when
// missing is set.
func (s *Store) catalogFromDocuments(missing bool) error {
	if _, err := os.Stat(s.Dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	unlock, err := fsstore.LockUntil(filepath.Join(s.Dir, catalogLockName), s.LockTimeout, s.Cancel)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Lstat(s.catalogPath()); missing && !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return s.compactCatalogLocked()
}

// damagedEntry is the listing of id whose document could not be read: its
// damaged view, or ErrNotFound when it has no transcript either (a line
// of a removed session).
func (s *Store) damagedEntry(id string) (Session, error) {
	if sess, ok := s.damaged(id); ok {
		return sess, nil
	}
	return Session{}, fsstore.NotFoundf("session %s", id)
}
