package sessions

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hermes/hermes/fsstore"
)

// The check as it was before it kept only a few fields of each session
// (whole documents in maps, every scan at once): the reference that
// TestCheckSameAsReference holds the check to.

func refCount(doc *Session) int64 {
	if doc == nil {
		return 0
	}
	return doc.MessageCount
}

type refDocRead struct {
	sess *Session
	err  error
}

func (s *Store) refCheckSessions(repair bool, lostFound string) ([]fsstore.Finding, int, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	var out []fsstore.Finding
	add := func(f fsstore.Finding) { out = append(out, f) }
	docs := map[string]bool{}
	// parsed holds the documents that parse, for the count check: without
	// repair nothing is written in between, so each is read once.
	parsed := map[string]*Session{}
	byTitle := map[string][]Session{}
	var logs []string
	read := s.refReadDocuments(entries)
	for i, e := range entries {
		name := e.Name()
		path := filepath.Join(s.Dir, name)
		switch {
		case fsstore.CheckCommon(e, path, repair, lostFound, add):
		case strings.HasPrefix(name, "."), strings.HasSuffix(name, ".lock"):
		case strings.HasSuffix(name, ".jsonl"):
			logs = append(logs, strings.TrimSuffix(name, ".jsonl"))
		case strings.HasSuffix(name, ".json"):
			id := strings.TrimSuffix(name, ".json")
			sess, err := read[i].sess, read[i].err
			if err == nil {
				parsed[id] = sess
				if sess.ID != id {
					err = &fsstore.CorruptError{Path: path, Err: fmt.Errorf("document has id %q, not %q", sess.ID, id)}
				}
			}
			var corrupt *fsstore.CorruptError
			if errors.As(err, &corrupt) {
				f := fsstore.Finding{Path: path, What: "document does not parse: " + corrupt.Err.Error(), Problem: true}
				if repair {
					f.Repaired, f.What = s.recoverDocument(id, f.What)
				}
				add(f)
				// The finding covers the transcript's missing document too.
				docs[id] = true
				continue
			}
			if err != nil {
				return out, 0, err
			}
			docs[id] = true
			out = append(out, checkIDRule(path, id)...)
			if sess.Title != "" {
				byTitle[sess.Title] = append(byTitle[sess.Title], *sess)
			}
			if fields := sess.nonCanonicalTimes(); len(fields) > 0 {
				f := fsstore.Finding{Path: path, What: "times not in the store's form (" + strings.Join(fields, ", ") + ")", Problem: true}
				if repair {
					f.Repaired, f.What = s.canonicalizeTimes(id, f.What)
				}
				add(f)
			}
		}
	}
	out = append(out, s.refCheckTitles(byTitle, repair)...)
	out = append(out, s.refCheckTitleIndex(byTitle, repair)...)
	out = append(out, s.refCheckIDIndex(docs, repair)...)
	scans, err := s.refScanTranscripts(logs)
	if err != nil {
		return out, 0, err
	}
	for i, id := range logs {
		if !docs[id] {
			out = append(out, checkIDRule(s.logPath(id), id)...)
		}
		doc := parsed[id]
		if repair {
			// A repair above may have rewritten it.
			doc = nil
			var sess Session
			if fsstore.ReadDoc(s.docPath(id), &sess) == nil {
				doc = &sess
			}
		}
		out = append(out, s.checkTranscript(id, scans[i], docs[id], refCount(doc), doc != nil, repair)...)
	}
	catalog, err := s.catalogLatest()
	if err != nil {
		return out, 0, err
	}
	logCounts := map[string]int64{}
	for i, id := range logs {
		if scans[i].countErr == nil && !scans[i].failed {
			logCounts[id] = scans[i].count
		}
	}
	stale := s.refCheckCatalog(catalog, docs, parsed, logs, logCounts)
	if stale != nil {
		if repair {
			stale.Repaired = s.RebuildCatalog() == nil
		}
		add(*stale)
	}
	checked := len(docs)
	for _, id := range logs {
		if !docs[id] {
			checked++
		}
	}
	return out, checked, nil
}

func (s *Store) refCheckCatalog(catalog map[string]catalogEntry, docs map[string]bool, parsed map[string]*Session, logs []string, logCounts map[string]int64) *fsstore.Finding {
	ids := make([]string, 0, len(docs))
	for id := range docs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if e, ok := catalog[id]; !ok || e.Removed {
			return &fsstore.Finding{Path: s.catalogPath(), What: "activity catalog lacks session " + id, Problem: true}
		}
	}
	for _, id := range ids {
		e, doc := catalog[id], parsed[id]
		if doc == nil || e.State == "" || e.State == doc.State {
			continue
		}
		var now Session
		if fsstore.ReadDoc(s.docPath(id), &now) == nil && now.State != e.State {
			return &fsstore.Finding{Path: s.catalogPath(), Problem: true,
				What: fmt.Sprintf("activity catalog says session %s is %s; its document says %s", id, e.State, now.State)}
		}
	}
	for _, id := range ids {
		e := catalog[id]
		if n, ok := logCounts[id]; ok && e.State != "" && n > e.MessageCount {
			return &fsstore.Finding{Path: s.catalogPath(), Problem: true,
				What: fmt.Sprintf("activity catalog counts %d messages of session %s; its transcript has %d", e.MessageCount, id, n)}
		}
	}
	ids = ids[:0]
	for id, e := range catalog {
		if !e.Removed && !docs[id] && fsstore.CheckID("session id", id) == nil && !slices.Contains(logs, id) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		if _, err := os.Lstat(s.docPath(id)); errors.Is(err, os.ErrNotExist) {
			return &fsstore.Finding{Path: s.catalogPath(), What: "activity catalog counts session " + id + ", which has no document", Problem: true}
		}
	}
	return nil
}

func (s *Store) refCheckTitles(byTitle map[string][]Session, repair bool) []fsstore.Finding {
	titles := make([]string, 0, len(byTitle))
	for title, group := range byTitle {
		if len(group) > 1 {
			titles = append(titles, title)
		}
	}
	sort.Strings(titles)
	var out []fsstore.Finding
	for _, title := range titles {
		group := byTitle[title]
		sort.Slice(group, func(i, j int) bool {
			a, b := group[i], group[j]
			if a.CreatedAt.Before(b.CreatedAt) || b.CreatedAt.Before(a.CreatedAt) {
				return a.CreatedAt.Before(b.CreatedAt)
			}
			return a.ID < b.ID
		})
		for _, newer := range group[1:] {
			f := fsstore.Finding{Path: s.docPath(newer.ID), Problem: true,
				What: fmt.Sprintf("title %q is also the title of session %s, an older one", title, group[0].ID)}
			if repair {
				f.Repaired, f.What = s.retitle(newer.ID, title, f.What)
			}
			out = append(out, f)
		}
	}
	return out
}

func (s *Store) refReadDocuments(entries []os.DirEntry) []refDocRead {
	read := make([]refDocRead, len(entries))
	eachOnWorkers(len(entries), func() func(int) {
		return func(i int) {
			name := entries[i].Name()
			if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
				return
			}
			var sess Session
			if read[i].err = fsstore.ReadDoc(filepath.Join(s.Dir, name), &sess); read[i].err == nil {
				read[i].sess = &sess
			}
		}
	})
	return read
}

func (s *Store) refScanTranscripts(ids []string) ([]transcriptScan, error) {
	d, err := os.Open(s.Dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	dirfd := int(d.Fd())
	scans := make([]transcriptScan, len(ids))
	eachOnWorkers(len(ids), func() func(int) {
		r := newLineReader(s.Dir, dirfd)
		return func(i int) { scans[i] = r.scanTranscript(ids[i]) }
	})
	return scans, nil
}

func (s *Store) refCheckTitleIndex(byTitle map[string][]Session, repair bool) []fsstore.Finding {
	dir := s.titlesDir()
	if _, err := os.Stat(s.titlesCompletePath()); errors.Is(err, os.ErrNotExist) {
		if len(byTitle) == 0 {
			return nil
		}
		// A profile from before the index: the first title lookup builds it.
		f := fsstore.Finding{Path: dir, What: "title index not built yet"}
		if repair {
			f.Repaired, f.What = s.rebuildTitles(f.What)
		}
		return []fsstore.Finding{f}
	}
	var all []Session
	for _, group := range byTitle {
		all = append(all, group...)
	}
	want := titleIndexFromDocs(all)
	have := map[string][]titleEntry{}
	var out []fsstore.Finding
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !isBucketName(e.Name()) {
			continue
		}
		var bucket []titleEntry
		if err := fsstore.ReadDoc(filepath.Join(dir, e.Name()), &bucket); err != nil {
			out = append(out, fsstore.Finding{Path: filepath.Join(dir, e.Name()), What: "title index bucket does not parse: " + err.Error(), Problem: true})
			continue
		}
		have[e.Name()] = bucket
	}
	in := func(set map[string][]titleEntry, e titleEntry) bool {
		for _, x := range set[bucketOf(e.Title)] {
			if x == e {
				return true
			}
		}
		return false
	}
	titleNow := func(id string) string {
		var sess Session
		if fsstore.CheckID("session id", id) != nil || fsstore.ReadDoc(s.docPath(id), &sess) != nil {
			return ""
		}
		return sess.Title
	}
	for _, name := range refSortedBuckets(want) {
		for _, e := range want[name] {
			if !in(have, e) && titleNow(e.SessionID) == e.Title {
				out = append(out, fsstore.Finding{Path: filepath.Join(dir, name), Problem: true,
					What: fmt.Sprintf("title index lacks %q of session %s", e.Title, e.SessionID)})
			}
		}
	}
	for _, name := range refSortedBuckets(have) {
		for _, e := range have[name] {
			if !in(want, e) && titleNow(e.SessionID) != e.Title {
				out = append(out, fsstore.Finding{Path: filepath.Join(dir, name),
					What: fmt.Sprintf("title index entry %q names session %s, whose document has another title or is gone", e.Title, e.SessionID)})
			}
		}
	}
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

func refSortedBuckets(m map[string][]titleEntry) []string {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func (s *Store) refCheckIDIndex(docs map[string]bool, repair bool) []fsstore.Finding {
	path := s.idsPath()
	f, size, err := fsstore.OpenSized(path)
	if err != nil {
		return []fsstore.Finding{{Path: path, What: "id index unreadable: " + err.Error(), Problem: true}}
	}
	if f == nil {
		if len(docs) == 0 {
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
	ids := make([]string, 0, len(docs))
	for id := range docs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
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
		if added && !docs[id] {
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
