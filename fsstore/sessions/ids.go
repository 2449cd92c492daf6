package sessions

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/hermes/hermes/fsstore"
)

// The id index answers "which sessions have an id starting with PREFIX"
// without listing the directory, as git resolves a short hash: `sessions
// show PREFIX`, `chat --resume PREFIX` and a name that matches nothing
// cost the same at 100,000 sessions as at 100.
//
// It is two files. .ids holds every id, one a line, in byte order, and is
// only ever replaced whole (atomically); a lookup binary-searches it
// (about 17 small reads at 100,000 ids). .ids-recent is an append-only log
// of what happened since: "+ID" for a new session, "-ID" for a removed
// one. When the log passes idsRecentMax bytes, the writer that made it
// pass merges it into .ids and removes it, both under .ids.lock, which
// guards every write of the index and is taken last (never with another
// lock taken after it).
//
// A new session's "+ID" is written before its document (Create,
// CreateWith, Fork), so every document hermes writes has its entry: a
// lookup trusts the index for a miss and never lists the directory. The
// line is not synced (the index is a cache, and a new session's first
// turn in the gateway makes no sync it can spare): a power cut may lose
// it with its document kept, which is then found by its exact id but not
// by a prefix until fsck --repair, which reports it and rebuilds the
// index.
// A create that fails after its entry takes it back; a crash between the
// two leaves an entry without a document; a removal's
// "-ID" is not synced, and a crash may lose it. Both leave a stale
// entry, which is harmless: a lookup counts an id only when its document
// exists (one stat per candidate, from the newest down, stopping at
// eleven, which is all an ambiguity error shows). A merge drops the ids
// removed.
//
// A reader reads the log before it opens .ids: a merge writes the new
// .ids before it removes the log, so a reader sees every entry in one of
// the two. A profile from before the index has no .ids: its first new
// session builds it from a listing of the directory (and the log: a
// session being created has its entry there but no document yet), and
// until then a lookup lists the directory. A document that arrives by
// another way (copied in by hand, written by a hermes from before the
// index) is found by its exact id but not by a prefix; fsck reports it
// ("id index lacks session ID") and --repair rebuilds the index, as it
// does an .ids whose lines are out of order.
const (
	idsName       = ".ids"
	idsRecentName = ".ids-recent"
	idsLockName   = ".ids.lock"
	idsRecentMax  = 64 << 10
	// ambiguousShown is how many candidates an ambiguous prefix needs:
	// fsstore.Ambiguous names ten and says whether there are more.
	ambiguousShown = 11
)

func (s *Store) idsPath() string       { return filepath.Join(s.Dir, idsName) }
func (s *Store) idsRecentPath() string { return filepath.Join(s.Dir, idsRecentName) }

func (s *Store) lockIDs() (func(), error) {
	if err := fsstore.EnsureDir(s.Dir); err != nil {
		return nil, err
	}
	return fsstore.LockUntil(filepath.Join(s.Dir, idsLockName), s.LockTimeout, s.Cancel)
}

// indexNewID records the new session id in the index, unsynced, building
// the index first on a profile from before it. The caller holds the
// session's lock and writes the document after it; if that fails, it
// calls undo, which takes the entry back, so that a failed create (a full
// disk) leaves the profile as it was.
func (s *Store) indexNewID(id string) (undo func(), err error) {
	unlock, err := s.lockIDs()
	if err != nil {
		return nil, err
	}
	defer unlock()
	built := false
	if _, err := os.Lstat(s.idsPath()); errors.Is(err, os.ErrNotExist) {
		if err := s.rebuildIDsLocked(); err != nil {
			return nil, err
		}
		built = true
	}
	_, err = os.Lstat(s.idsRecentPath())
	made := errors.Is(err, os.ErrNotExist)
	if err := s.appendIDLocked('+', id); err != nil {
		s.takeBackIDLocked(id, built, made)
		return nil, err
	}
	return func() { s.takeBackID(id, built, made) }, nil
}

// takeBackID takes back the entry "+ID" of a create that failed: the
// index this create built is removed (a lookup lists the directory until
// the next create builds it again), else the line is cut off while it is
// the log's last (the log removed if this create made it). An entry that
// stays is stale, which lookups skip.
func (s *Store) takeBackID(id string, built, made bool) {
	unlock, err := s.lockIDs()
	if err != nil {
		return
	}
	defer unlock()
	s.takeBackIDLocked(id, built, made)
}

// takeBackIDLocked is takeBackID for a caller that holds the ids lock.
func (s *Store) takeBackIDLocked(id string, built, made bool) {
	if built {
		os.Remove(s.idsPath())
		os.Remove(s.idsRecentPath())
		return
	}
	f, err := fsstore.OpenFile(s.idsRecentPath(), os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	line := "+" + id + "\n"
	n := int64(len(line))
	if err != nil || fi.Size() < n {
		return
	}
	tail := make([]byte, n)
	if _, err := f.ReadAt(tail, fi.Size()-n); err != nil || string(tail) != line {
		return
	}
	if fi.Size() == n && made {
		os.Remove(s.idsRecentPath())
		return
	}
	f.Truncate(fi.Size() - n)
}

// unindexID records the removal of session id, unsynced: a lost line
// leaves a stale entry, which lookups skip. A failure is only reported.
// The caller holds the session's lock, so the line follows any "+ID" of
// the same id and precedes that of a new session with it.
func (s *Store) unindexID(id string) {
	if _, err := os.Lstat(s.idsPath()); err != nil {
		return
	}
	unlock, err := s.lockIDs()
	if err == nil {
		err = s.appendIDLocked('-', id)
		unlock()
	}
	if err != nil {
		s.Warn(fmt.Sprintf("id index: the removal of session %s is not recorded (%v); its entry is stale, which lookups skip", id, err))
	}
}

// appendIDLocked appends op and id to the log, unsynced, and merges the
// log into .ids once it passes idsRecentMax. The caller holds the ids
// lock.
func (s *Store) appendIDLocked(op byte, id string) error {
	f, moved, err := fsstore.OpenAppend(s.idsRecentPath(), s.Now())
	if err != nil {
		return err
	}
	defer f.Close()
	s.warnMoved(moved)
	if err := fsstore.WriteLines(f, [][]byte{[]byte(string(op) + id + "\n")}); err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() <= idsRecentMax {
		return err
	}
	return s.mergeIDsLocked()
}

// recentIDs reads the log: for each id it names, whether its last line
// adds it (true) or removes it. Only whole lines count.
func (s *Store) recentIDs() (map[string]bool, error) {
	b, err := os.ReadFile(s.idsRecentPath())
	if errors.Is(err, os.ErrNotExist) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, err
	}
	recent := map[string]bool{}
	for len(b) > 0 {
		line, rest, whole := bytes.Cut(b, []byte{'\n'})
		if !whole {
			break
		}
		b = rest
		if len(line) > 1 && (line[0] == '+' || line[0] == '-') {
			recent[string(line[1:])] = line[0] == '+'
		}
	}
	return recent, nil
}

// mergeIDsLocked writes .ids as itself with the log applied (a rebuild
// when there is no .ids), then removes the log. A crash between the two leaves a log whose lines are already
// in .ids, which a second merge applies again to the same result. The
// caller holds the ids lock.
func (s *Store) mergeIDsLocked() error {
	recent, err := s.recentIDs()
	if err != nil {
		return err
	}
	f, size, err := fsstore.OpenSized(s.idsPath())
	if err != nil {
		return err
	}
	if f == nil {
		return s.rebuildIDsLocked()
	}
	var ids []string
	_, err = fsstore.ScanLines(f, size, func(line []byte, _ int64) error {
		if id := string(line); recent[id] || !hasKey(recent, id) {
			ids = append(ids, id)
		}
		return nil
	})
	f.Close()
	if err != nil {
		return err
	}
	for id, added := range recent {
		if added {
			ids = append(ids, id)
		}
	}
	return s.writeIDs(ids)
}

func hasKey(m map[string]bool, k string) bool {
	_, ok := m[k]
	return ok
}

// rebuildIDsLocked writes .ids from a listing of the directory and the
// log's additions (a session being created has its entry there and no
// document yet), then removes the log. The caller holds the ids lock.
func (s *Store) rebuildIDsLocked() error {
	recent, err := s.recentIDs()
	if err != nil {
		return err
	}
	ids, err := s.IDs()
	if err != nil {
		return err
	}
	for id, added := range recent {
		if added {
			ids = append(ids, id)
		}
	}
	return s.writeIDs(ids)
}

// writeIDs replaces .ids with ids, sorted and without duplicates, and then
// removes the log.
func (s *Store) writeIDs(ids []string) error {
	sort.Strings(ids)
	err := fsstore.WriteAtomic(s.idsPath(), func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 64<<10)
		for i, id := range ids {
			if i > 0 && id == ids[i-1] {
				continue
			}
			bw.WriteString(id)
			bw.WriteByte('\n')
		}
		return bw.Flush()
	})
	if err != nil {
		return err
	}
	if err := os.Remove(s.idsRecentPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return fsstore.SyncDir(s.Dir)
}

// RebuildIDs rebuilds the id index from the documents (fsck --repair;
// scripts/gendata after writing sessions).
func (s *Store) RebuildIDs() error {
	unlock, err := s.lockIDs()
	if err != nil {
		return err
	}
	defer unlock()
	return s.rebuildIDsLocked()
}

// IDsWithPrefix returns at most limit sessions whose id starts with
// prefix, newest first, from the id index alone (shell completion): none
// when the index is not built, rather than a listing of the directory.
func (s *Store) IDsWithPrefix(prefix string, limit int) ([]string, error) {
	ids, _, err := s.prefixIDs(prefix, limit)
	return ids, err
}

// prefixIDs returns the sessions whose id starts with prefix, newest
// first, at most limit of them; ok is false when the index is not built
// (the caller lists the directory). It reads the log, binary-searches
// .ids for the end of the prefix's range, and walks back from there,
// stat-ing each candidate's document.
func (s *Store) prefixIDs(prefix string, limit int) (ids []string, ok bool, err error) {
	recent, err := s.recentIDs()
	if err != nil {
		return nil, false, err
	}
	f, size, err := fsstore.OpenSizedFlag(s.idsPath(), os.O_RDONLY|syscall.O_NOFOLLOW)
	if f == nil || err != nil {
		return nil, false, err
	}
	defer f.Close()
	exists := func(id string) bool {
		_, err := os.Lstat(s.docPath(id))
		return err == nil
	}
	end := size
	if after, ok := prefixEnd(prefix); ok {
		if end, err = lowerBound(f, size, after); err != nil {
			return nil, false, err
		}
	}
	err = fsstore.EachLineBackward(f, end, func(line []byte, _ int64) bool {
		if !bytes.HasPrefix(line, []byte(prefix)) {
			return false
		}
		id := string(line)
		if added, ok := recent[id]; (!ok || added) && exists(id) {
			ids = append(ids, id)
		}
		return len(ids) < limit
	})
	if err != nil {
		return nil, false, err
	}
	for id, added := range recent {
		if added && strings.HasPrefix(id, prefix) && exists(id) {
			ids = append(ids, id)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(ids)))
	ids = compactStrings(ids)
	if len(ids) > limit {
		ids = ids[:limit]
	}
	return ids, true, nil
}

// compactStrings drops adjacent duplicates of a sorted slice.
func compactStrings(ids []string) []string {
	out := ids[:0]
	for i, id := range ids {
		if i == 0 || id != ids[i-1] {
			out = append(out, id)
		}
	}
	return out
}

// prefixEnd is the least string greater than every string that starts
// with prefix; false when there is none (prefix is all 0xff bytes).
func prefixEnd(prefix string) (string, bool) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

// lowerBound returns the offset of the first line of the sorted file f
// (size bytes, each line ending in '\n') that is not less than key; size
// when there is none. It reads O(log size) lines.
func lowerBound(f *os.File, size int64, key string) (int64, error) {
	// lo is the start of a line, and every line before it is less than
	// key; hi is the start of a line not less than key, or size.
	lo, hi := int64(0), size
	buf := make([]byte, 512)
	for lo < hi {
		p := lo
		if mid := lo + (hi-lo)/2; mid > lo {
			start, err := nextLineStart(f, mid, hi, buf)
			if err != nil {
				return 0, err
			}
			if start < hi {
				p = start
			}
		}
		line, err := lineAt(f, p, size, buf)
		if err != nil {
			return 0, err
		}
		if string(line) < key {
			lo = p + int64(len(line)) + 1
		} else {
			hi = p
		}
	}
	return lo, nil
}

// nextLineStart returns the start of the first line that begins at or
// after off (off > 0), or limit when none begins before it.
func nextLineStart(f *os.File, off, limit int64, buf []byte) (int64, error) {
	for pos := off; pos < limit; {
		n := min(int64(len(buf)), limit-pos)
		if _, err := f.ReadAt(buf[:n], pos-1); err != nil && err != io.EOF {
			return 0, fsstore.PathErr("read", f.Name(), err)
		}
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return pos + int64(i), nil
		}
		pos += n
	}
	return limit, nil
}

// lineAt returns the line that starts at off, without its '\n'.
func lineAt(f *os.File, off, size int64, buf []byte) ([]byte, error) {
	var line []byte
	for pos := off; pos < size; {
		n := min(int64(len(buf)), size-pos)
		if _, err := f.ReadAt(buf[:n], pos); err != nil && err != io.EOF {
			return nil, fsstore.PathErr("read", f.Name(), err)
		}
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return append(line, buf[:i]...), nil
		}
		line = append(line, buf[:n]...)
		pos += n
	}
	return line, nil
}

// checkIDIndex compares the id index with ids, the sorted ids of the
// documents Check found (by name, as a listing finds them), walking .ids
// and ids side by side. A document without an entry, or an .ids out of
// order, is a problem (a prefix lookup would miss the session), repaired
// by a rebuild; entries without a document are a note (lookups skip
// them).
func (s *Store) checkIDIndex(ids []string, repair bool) []fsstore.Finding {
	path := s.idsPath()
	f, size, err := fsstore.OpenSized(path)
	if err != nil {
		return []fsstore.Finding{{Path: path, What: "id index unreadable: " + err.Error(), Problem: true}}
	}
	if f == nil {
		if len(ids) == 0 {
			return nil
		}
		// A profile from before the index: the first new session builds it.
		fd := fsstore.Finding{Path: path, What: "id index not built yet"}
		if repair {
			fd.Repaired, fd.What = s.rebuildIDs(fd.What)
		}
		return []fsstore.Finding{fd}
	}
	defer f.Close()
	recent, err := s.recentIDs()
	if err != nil {
		return []fsstore.Finding{{Path: s.idsRecentPath(), What: "id index log unreadable: " + err.Error(), Problem: true}}
	}
	var out []fsstore.Finding
	lacks := func(id string) {
		if !recent[id] {
			out = append(out, fsstore.Finding{Path: path, What: "id index lacks session " + id, Problem: true})
		}
	}
	i, stale, prev, ordered := 0, 0, "", true
	_, err = fsstore.ScanLines(f, size, func(line []byte, off int64) error {
		id := string(line)
		if off > 0 && id <= prev {
			ordered = false
		}
		prev = id
		for i < len(ids) && ids[i] < id {
			lacks(ids[i])
			i++
		}
		switch {
		case i < len(ids) && ids[i] == id:
			if added, ok := recent[id]; ok && !added {
				out = append(out, fsstore.Finding{Path: path, What: "id index says session " + id + " was removed; it has a document", Problem: true})
			}
			i++
		case !recent[id]:
			stale++
		}
		return nil
	})
	if err != nil {
		return []fsstore.Finding{{Path: path, What: "id index unreadable: " + err.Error(), Problem: true}}
	}
	for ; i < len(ids); i++ {
		lacks(ids[i])
	}
	for id, added := range recent {
		if _, found := slices.BinarySearch(ids, id); added && !found {
			stale++
		}
	}
	if !ordered {
		// Whatever else a binary search over it would miss.
		out = []fsstore.Finding{{Path: path, What: "id index is not in order", Problem: true}}
	}
	if repair && len(out) > 0 {
		repaired, what := s.rebuildIDs("id index rebuilt from the directory")
		for i := range out {
			out[i].Repaired = repaired
		}
		if !repaired {
			out = append(out, fsstore.Finding{Path: path, What: what, Problem: true})
		}
	}
	if stale > 0 {
		out = append(out, fsstore.Finding{Path: path, What: fmt.Sprintf("id index has %d entries of sessions without a document (a crash between an entry and its document, or a lost removal); lookups skip them", stale)})
	}
	return out
}

func (s *Store) rebuildIDs(what string) (bool, string) {
	if err := s.RebuildIDs(); err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	return true, what + "; rebuilt"
}
