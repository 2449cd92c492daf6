package sessions

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/text/unicode/norm"

	"github.com/hermes/hermes/fsstore"
)

// The title index answers "which session has this title" by opening one
// small file and the one document it names, so that `show TITLE`,
// `rename`, `new --title` and `chat --resume TITLE` cost the same at
// 100,000 sessions as at 10.
//
// It is the directory .titles/ with one file per bucket: the first three
// hex digits of the SHA-256 of a title name it (4,096 buckets), and it
// holds the sorted {title, session_id} pairs of the titles that hash to
// it, as a JSON document rewritten atomically. The file "complete" says
// the index holds an entry for every titled document. A new profile's
// first create writes it; a profile from before the index has none, and
// its first create or title write after the upgrade rebuilds the index
// from the documents (one scan) under the titles lock. Until then a
// lookup reads the documents, and writes nothing.
//
// Every write of a title (Create with a title, Rename, fsck's retitle)
// holds .titles.lock across the check and the writes, and writes the
// entry, synced, before the document. So a titled document always has its
// entry; a crash between the two leaves an entry whose document does not
// (yet) have that title: a stale entry. Stale entries are expected (a
// rename leaves one until it removes it, a delete leaves one), never
// trusted, and dropped when met: a lookup reads the document each entry
// names and keeps only those whose title is the one asked for, and
// rewrites the bucket without the others under the lock. An index that is
// incomplete (no "complete", or a bucket that does not parse) is never
// taken to mean "no such title": a writer rebuilds it, a lookup scans the
// documents.
const (
	titlesDirName      = ".titles"
	titlesCompleteName = "complete"
	titleBucketDigits  = 3
)

type titleEntry struct {
	Title     string `json:"title"`
	SessionID string `json:"session_id"`
}

func (s *Store) titlesDir() string { return filepath.Join(s.Dir, titlesDirName) }

func (s *Store) titlesCompletePath() string {
	return filepath.Join(s.titlesDir(), titlesCompleteName)
}

// bucketOf is the name of the bucket that holds title.
func bucketOf(title string) string {
	h := sha256.Sum256([]byte(title))
	return hex.EncodeToString(h[:])[:titleBucketDigits]
}

func isBucketName(name string) bool {
	if len(name) != titleBucketDigits {
		return false
	}
	_, err := hex.DecodeString(name + "0")
	return err == nil && strings.ToLower(name) == name
}

// errTitlesIncomplete says the index cannot answer: it lacks its
// "complete" marker, or a bucket does not parse.
var errTitlesIncomplete = errors.New("title index incomplete")

// readBucket returns the entries of bucket name; a missing bucket holds
// none. It is errTitlesIncomplete when the index is not complete or the
// bucket does not parse.
func (s *Store) readBucket(name string) ([]titleEntry, error) {
	if _, err := os.Stat(s.titlesCompletePath()); errors.Is(err, os.ErrNotExist) {
		return nil, errTitlesIncomplete
	} else if err != nil {
		return nil, err
	}
	var entries []titleEntry
	err := fsstore.ReadDoc(filepath.Join(s.titlesDir(), name), &entries)
	var corrupt *fsstore.CorruptError
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case errors.As(err, &corrupt):
		return nil, errTitlesIncomplete
	}
	return entries, err
}

// writeBucket stores entries as bucket name, synced; no entries removes
// it.
func (s *Store) writeBucket(name string, entries []titleEntry) error {
	path := filepath.Join(s.titlesDir(), name)
	if len(entries) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return fsstore.SyncDir(s.titlesDir())
	}
	sortEntries(entries)
	return fsstore.WriteDoc(path, entries)
}

func sortEntries(entries []titleEntry) {
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].Title != entries[j].Title {
			return entries[i].Title < entries[j].Title
		}
		return entries[i].SessionID < entries[j].SessionID
	})
}

// verify splits the entries of title into the sessions whose document has
// that title (newest first) and a count of stale entries: an entry whose
// document is gone, unreadable (quarantined by the read), or has another
// title. It reads only the documents the entries name.
func (s *Store) verify(entries []titleEntry, title string) (ids []string, stale int, err error) {
	for _, e := range entries {
		if e.Title != title {
			continue
		}
		if fsstore.CheckID("session id", e.SessionID) != nil {
			stale++
			continue
		}
		sess, err := s.readDocument(e.SessionID, false)
		var corrupt *fsstore.CorruptError
		switch {
		case err == nil && sess.Title == title:
			ids = append(ids, e.SessionID)
		case err == nil, errors.Is(err, fsstore.ErrNotFound):
			stale++
		case errors.As(err, &corrupt):
			s.Warn(err.Error())
			stale++
		default:
			return nil, 0, err
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(ids)))
	return ids, stale, nil
}

// titleIDs returns the sessions whose title is title in NFC, newest first (one,
// unless titles were shared before they were unique): the read path of a
// title lookup, which takes no lock while the index is complete and has
// no stale entry for title. It reads one bucket and the documents of its
// entries for title.
func (s *Store) titleIDs(title string) ([]string, error) {
	if nfc := norm.NFC.String(title); nfc != title {
		// A title stored before titles were kept in NFC is found as it
		// was typed.
		if ids, err := s.titleIDsAsIs(nfc); err != nil || len(ids) > 0 {
			return ids, err
		}
	}
	return s.titleIDsAsIs(title)
}

// titleIDsAsIs is titleIDs for title byte for byte.
func (s *Store) titleIDsAsIs(title string) ([]string, error) {
	if _, err := os.Stat(s.Dir); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	entries, err := s.readBucket(bucketOf(title))
	if err == nil {
		ids, stale, err := s.verify(entries, title)
		if err != nil || stale == 0 {
			return ids, err
		}
		// The answer stands without the repair, which a read-only copy
		// or a stuck writer prevents; the next writer of the bucket
		// drops the stale entries then.
		if repaired, err := s.titleIDsRepaired(title); err == nil {
			return repaired, nil
		}
		return ids, nil
	}
	if !errors.Is(err, errTitlesIncomplete) {
		return nil, err
	}
	// A lookup writes nothing but the removal of stale entries: the
	// documents answer, and the next write rebuilds the index.
	return s.scanTitle(title)
}

// ensureTitles builds the index if it is not complete: on a new profile,
// the first create writes its (empty) index; on one from before the
// index, the first create after the upgrade rebuilds it.
func (s *Store) ensureTitles() error {
	if _, err := os.Stat(s.titlesCompletePath()); err == nil {
		return nil
	}
	unlock, err := s.lockTitles()
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(s.titlesCompletePath()); err == nil {
		return nil
	}
	return s.rebuildTitlesLocked()
}

// titleIDsRepaired is titleIDs under the titles lock, which rebuilds an
// incomplete index and drops stale entries.
func (s *Store) titleIDsRepaired(title string) ([]string, error) {
	unlock, err := s.lockTitles()
	if err != nil {
		return nil, err
	}
	defer unlock()
	return s.titleIDsLocked(title)
}

// titleIDsLocked is titleIDs for a caller that holds the titles lock: it
// rebuilds an incomplete index and rewrites the bucket of title without
// its stale entries.
func (s *Store) titleIDsLocked(title string) ([]string, error) {
	name := bucketOf(title)
	entries, err := s.readBucket(name)
	if errors.Is(err, errTitlesIncomplete) {
		if err := s.rebuildTitlesLocked(); err != nil {
			return nil, err
		}
		entries, err = s.readBucket(name)
	}
	if err != nil {
		return nil, err
	}
	ids, stale, err := s.verify(entries, title)
	if err != nil || stale == 0 {
		return ids, err
	}
	return ids, s.writeBucket(name, keepTitle(entries, title, ids))
}

// keepTitle returns entries with those of title cut to ids.
func keepTitle(entries []titleEntry, title string, ids []string) []titleEntry {
	out := make([]titleEntry, 0, len(entries))
	for _, e := range entries {
		if e.Title != title {
			out = append(out, e)
		}
	}
	for _, id := range ids {
		out = append(out, titleEntry{Title: title, SessionID: id})
	}
	return out
}

// scanTitle reads every document for the sessions titled title, newest
// first: the answer when the index can be neither trusted nor rebuilt.
func (s *Store) scanTitle(title string) ([]string, error) {
	all, err := s.all(s.readDocument)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, sess := range all {
		if sess.Title == title {
			ids = append(ids, sess.ID)
		}
	}
	return ids, nil
}

// claimTitle gives title to session self in the index, or refuses it
// (ErrRefused) when another session's document has it. The caller holds
// the titles lock, and writes the document after it: the entry is synced
// first, so that a titled document always has one.
func (s *Store) claimTitle(title, self string) error {
	if err := fsstore.CheckTitle(title); err != nil {
		return err
	}
	ids, err := s.titleIDsLocked(title)
	if err != nil {
		return err
	}
	if nfd := norm.NFD.String(title); nfd != title {
		// A session titled before titles were kept in NFC may hold the
		// title decomposed.
		old, err := s.titleIDsLocked(nfd)
		if err != nil {
			return err
		}
		if err := takenBy(title, old, self); err != nil {
			return err
		}
	}
	if err := takenBy(title, ids, self); err != nil {
		return err
	}
	if len(ids) > 0 {
		return nil
	}
	name := bucketOf(title)
	entries, err := s.readBucket(name)
	if err != nil {
		return err
	}
	return s.writeBucket(name, append(entries, titleEntry{Title: title, SessionID: self}))
}

// takenBy refuses title when a session of ids other than self has it.
func takenBy(title string, ids []string, self string) error {
	for _, other := range ids {
		if other != self {
			return fsstore.Refusedf("title %q is taken by session %s", title, other)
		}
	}
	return nil
}

// dropTitle removes the entry {title, id} once the document of id no
// longer has title (a rename, a delete): a tidy-up, since a stale entry
// is harmless, so a failure is only reported. The caller holds the
// titles lock.
func (s *Store) dropTitle(title, id string) {
	name := bucketOf(title)
	entries, err := s.readBucket(name)
	if errors.Is(err, errTitlesIncomplete) {
		return
	}
	if err == nil {
		out := entries[:0]
		for _, e := range entries {
			if e != (titleEntry{Title: title, SessionID: id}) {
				out = append(out, e)
			}
		}
		if len(out) == len(entries) {
			return
		}
		err = s.writeBucket(name, out)
	}
	if err != nil {
		s.Warn(fmt.Sprintf("title index: the stale entry of session %s is left: %v", id, err))
	}
}

// titleIndexFromDocs is the index that the documents call for, by
// bucket.
func titleIndexFromDocs(all []Session) map[string][]titleEntry {
	buckets := map[string][]titleEntry{}
	for _, sess := range all {
		if sess.Title != "" {
			name := bucketOf(sess.Title)
			buckets[name] = append(buckets[name], titleEntry{Title: sess.Title, SessionID: sess.ID})
		}
	}
	for _, entries := range buckets {
		sortEntries(entries)
	}
	return buckets
}

// rebuildTitlesLocked writes the index from the documents. Each bucket is
// replaced atomically, so that a reader that does not hold the lock sees
// a bucket whole, old or new; those no title needs are removed. The
// buckets are written unsynced and then synced all at once (syncfs), and
// "complete" is written last: a crash before it leaves an incomplete
// index, which the next write rebuilds. The caller holds the titles
// lock.
func (s *Store) rebuildTitlesLocked() error {
	all, err := s.all(s.readDocument)
	if err != nil {
		return err
	}
	dir := s.titlesDir()
	if err := fsstore.EnsureDir(dir); err != nil {
		return err
	}
	want := titleIndexFromDocs(all)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if _, ok := want[name]; ok || name == titlesCompleteName {
			continue
		}
		// Other buckets, and the temp files of writes that crashed.
		if isBucketName(name) || strings.HasPrefix(name, ".") {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	for name, entries := range want {
		b, err := fsstore.EncodeDocument(entries)
		if err != nil {
			return err
		}
		if err := fsstore.WriteCacheFile(filepath.Join(dir, name), b); err != nil {
			return err
		}
	}
	if len(want) > 0 {
		if err := syncFS(dir); err != nil {
			return err
		}
	}
	return fsstore.WriteFileAtomic(s.titlesCompletePath(), []byte("hermes title index\n"))
}

// RebuildTitles rebuilds the title index from the documents (fsck
// --repair; scripts/gendata after writing titled sessions).
func (s *Store) RebuildTitles() error {
	unlock, err := s.lockTitles()
	if err != nil {
		return err
	}
	defer unlock()
	return s.rebuildTitlesLocked()
}

// checkTitleIndex compares the index with the titles of the documents
// (titled, as Check read them): a titled document without its entry is a
// problem (a title write could miss it and give the title twice), a stale
// entry a note (lookups drop it). Each difference is confirmed against
// the document as it is now, since a repair earlier in the same check may
// have retitled it. With repair the index is rebuilt. It sorts titled by
// bucket, then as a bucket is, and reads one bucket at a time beside it:
// the findings are those of buckets that do not parse, then of entries
// lacking, then of stale ones, each in the order of the buckets.
func (s *Store) checkTitleIndex(titled []titledDoc, repair bool) []fsstore.Finding {
	dir := s.titlesDir()
	if _, err := os.Stat(s.titlesCompletePath()); errors.Is(err, os.ErrNotExist) {
		if len(titled) == 0 {
			return nil
		}
		// A profile from before the index: the first title lookup builds it.
		f := fsstore.Finding{Path: dir, What: "title index not built yet"}
		if repair {
			f.Repaired, f.What = s.rebuildTitles(f.What)
		}
		return []fsstore.Finding{f}
	}
	for i := range titled {
		copy(titled[i].bucket[:], bucketOf(titled[i].title))
	}
	byBucket := func(a titledDoc, bucket string, e titleEntry) int {
		if c := strings.Compare(string(a.bucket[:]), bucket); c != 0 {
			return c
		}
		if c := strings.Compare(a.title, e.Title); c != 0 {
			return c
		}
		return strings.Compare(a.id, e.SessionID)
	}
	slices.SortFunc(titled, func(a, b titledDoc) int {
		return byBucket(a, string(b.bucket[:]), titleEntry{Title: b.title, SessionID: b.id})
	})
	wanted := func(e titleEntry) bool {
		bucket := bucketOf(e.Title)
		_, found := slices.BinarySearchFunc(titled, e, func(a titledDoc, e titleEntry) int { return byBucket(a, bucket, e) })
		return found
	}
	titleNow := func(id string) string {
		var sess Session
		if fsstore.CheckID("session id", id) != nil || fsstore.ReadDoc(s.docPath(id), &sess) != nil {
			return ""
		}
		return sess.Title
	}
	var unreadable, lacking, stale []fsstore.Finding
	lacks := func(want []titledDoc, have []titleEntry) {
		for _, w := range want {
			e := titleEntry{Title: w.title, SessionID: w.id}
			if !slices.Contains(have, e) && titleNow(e.SessionID) == e.Title {
				lacking = append(lacking, fsstore.Finding{Path: filepath.Join(dir, string(w.bucket[:])), Problem: true,
					What: fmt.Sprintf("title index lacks %q of session %s", e.Title, e.SessionID)})
			}
		}
	}
	// next returns the titled documents of the next bucket before limit
	// ("" for any), and takes them from titled.
	rest := titled
	next := func(limit string) []titledDoc {
		if len(rest) == 0 || limit != "" && string(rest[0].bucket[:]) >= limit {
			return nil
		}
		n := 1
		for n < len(rest) && rest[n].bucket == rest[0].bucket {
			n++
		}
		want := rest[:n]
		rest = rest[n:]
		return want
	}
	entries, _ := os.ReadDir(dir)
	for _, de := range entries {
		name := de.Name()
		if !isBucketName(name) {
			continue
		}
		for want := next(name); want != nil; want = next(name) {
			lacks(want, nil)
		}
		var want []titledDoc
		if len(rest) > 0 && string(rest[0].bucket[:]) == name {
			want = next("")
		}
		var have []titleEntry
		if err := fsstore.ReadDoc(filepath.Join(dir, name), &have); err != nil {
			unreadable = append(unreadable, fsstore.Finding{Path: filepath.Join(dir, name), What: "title index bucket does not parse: " + err.Error(), Problem: true})
			lacks(want, nil)
			continue
		}
		lacks(want, have)
		for _, e := range have {
			if !wanted(e) && titleNow(e.SessionID) != e.Title {
				stale = append(stale, fsstore.Finding{Path: filepath.Join(dir, name),
					What: fmt.Sprintf("title index entry %q names session %s, whose document has another title or is gone", e.Title, e.SessionID)})
			}
		}
	}
	for want := next(""); want != nil; want = next("") {
		lacks(want, nil)
	}
	out := slices.Concat(unreadable, lacking, stale)
	if repair && len(out) > 0 {
		repaired, what := s.rebuildTitles("title index rebuilt from the documents")
		for i := range out {
			out[i].Repaired = repaired
		}
		if !repaired {
			out = append(out, fsstore.Finding{Path: dir, What: what, Problem: true})
		}
	}
	return out
}

func (s *Store) rebuildTitles(what string) (bool, string) {
	if err := s.RebuildTitles(); err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	return true, what + "; rebuilt"
}
