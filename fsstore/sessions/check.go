package sessions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/hermes/hermes/fsstore"
)

// Check reads every document and transcript of the store and reports torn
// tails, corrupt records, seq gaps, counts that disagree with transcripts,
// transcripts without a document, stray temp files and catalog gaps. With
// repair it fixes what it can without deleting a byte: torn tails and
// unreadable documents are moved aside, counts rewritten, a document made
// for an orphan transcript, stray temp files moved to lostFound, the
// catalog rebuilt. Damage inside a transcript is reported, not repaired.
func (s *Store) Check(repair bool, lostFound string) ([]fsstore.Finding, error) {
	out, _, err := s.CheckSessions(repair, lostFound)
	return out, err
}

// CheckSessions is Check, and also returns how many sessions (documents
// and transcripts without one) it checked. Documents, then transcripts,
// are read in parallel, each once (a document twice with repair, since a
// repair may rewrite it between the two); what they show is reported,
// and repaired, one at a time in the order of their names, so the result
// is that of a sequential check.
func (s *Store) CheckSessions(repair bool, lostFound string) ([]fsstore.Finding, int, error) {
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
	read := s.readDocuments(entries)
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
	out = append(out, s.checkTitles(byTitle, repair)...)
	out = append(out, s.checkTitleIndex(byTitle, repair)...)
	out = append(out, s.checkIDIndex(docs, repair)...)
	scans, err := s.scanTranscripts(logs)
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
		out = append(out, s.checkTranscript(id, scans[i], docs[id], doc, repair)...)
	}
	catalog, err := s.catalogLatest()
	if err != nil {
		return out, 0, err
	}
	stale := s.checkCatalog(catalog, docs, parsed, logs)
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

// checkCatalog returns one finding, the first, for a catalog that
// disagrees with the documents (a rebuild repairs them all), or nil: a
// session it lacks; a session it counts (stats reads it) that has no
// document, which a write that failed after its line and could not take
// it back leaves, or a removal by hand (a transcript without its
// document has its own finding); a session whose last line gives
// another state than its document, which a crash between the line and
// the document leaves. A document is read again before it is found
// wanting, since a write during the check writes its line first.
func (s *Store) checkCatalog(catalog map[string]catalogEntry, docs map[string]bool, parsed map[string]*Session, logs []string) *fsstore.Finding {
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

// checkIDRule reports a session, made before the rule, whose id
// fsstore.CheckNewID refuses: a problem that repair leaves, since the id
// is the session's name. The session is read and removed by its exact
// names like any other.
func checkIDRule(path, id string) []fsstore.Finding {
	if fsstore.CheckID("session id", id) != nil {
		return nil
	}
	if err := fsstore.CheckNewID("session id", id); err != nil {
		return []fsstore.Finding{{Path: path, Problem: true,
			What: err.Error() + "; export it and import the export, which gives the copy a new id, then delete it"}}
	}
	return nil
}

// checkTitles reports every session whose title an older session has
// (titles are unique in a profile); with repair, each is renamed
// "TITLE (N)" with the least N from 2 that no session holds, the newer
// ones last. The oldest (by created_at, then id) keeps its title.
func (s *Store) checkTitles(byTitle map[string][]Session, repair bool) []fsstore.Finding {
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

// retitle gives session id, whose title is also an older session's, the
// first free title "TITLE (N)", under the titles lock.
func (s *Store) retitle(id, title, what string) (bool, string) {
	unlock, err := s.lockTitles()
	if err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	defer unlock()
	all, err := s.all(s.readDocument)
	if err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	taken := map[string]bool{}
	for _, sess := range all {
		taken[sess.Title] = true
	}
	var next string
	for n := 2; ; n++ {
		suffix := fmt.Sprintf(" (%d)", n)
		next = truncateUTF8(title, fsstore.MaxTitleLen-len(suffix)) + suffix
		if !taken[next] {
			break
		}
	}
	if err := s.claimTitle(next, id); err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	_, err = s.update(id, func(sess *Session) error {
		if sess.Title != title {
			return fsstore.Refusedf("its title changed meanwhile")
		}
		sess.Title = next
		return nil
	})
	if err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	return true, fmt.Sprintf("%s; renamed %q", what, next)
}

// truncateUTF8 is the longest prefix of s of at most n bytes that ends
// between two characters.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// docRead is a document as read by readDocuments.
type docRead struct {
	sess *Session
	err  error
}

// readDocuments reads, in parallel, the entries that may be session
// documents (<id>.json), each once.
func (s *Store) readDocuments(entries []os.DirEntry) []docRead {
	read := make([]docRead, len(entries))
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

// transcriptScan is what one read of a transcript found: the damage of its
// lines, its torn tail, and its last complete line's seq (the count).
type transcriptScan struct {
	findings []fsstore.Finding
	failed   bool // it could not be read: findings says why
	torn     *fsstore.TornTail
	count    int64
	countErr error // the last line's seq could not be read
}

// scanTranscripts reads the transcripts of ids in parallel, each once.
func (s *Store) scanTranscripts(ids []string) ([]transcriptScan, error) {
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

// scanTranscript checks every line of the transcript of id: it parses as
// a message (the fast reader first, the full decoder for what it leaves)
// and has the next seq. A transcript with nothing in it is not opened.
func (r *lineReader) scanTranscript(id string) transcriptScan {
	name := id + ".jsonl"
	path := filepath.Join(r.dir, name)
	failed := func(err error) transcriptScan {
		return transcriptScan{findings: []fsstore.Finding{{Path: path, What: err.Error(), Problem: true}}, failed: true}
	}
	st, err := r.stat(name, true)
	if err != nil {
		return failed(err)
	}
	if st.Size == 0 {
		return transcriptScan{}
	}
	fd, err := r.open(name, openFollow)
	if err != nil {
		return failed(err)
	}
	defer unix.Close(fd)
	var sc transcriptScan
	var want int64 = 1
	var last []byte
	hasLast := false
	tailOff, tailSize, err := r.each(fd, name, st.Size, func(b []byte, base int64) bool {
		for off := 0; off < len(b); {
			end := off + bytes.IndexByte(b[off:], '\n')
			line := b[off:end]
			seq, ok := lineSeq(line)
			switch {
			case !ok:
				sc.findings = append(sc.findings, fsstore.Finding{Path: path, What: fmt.Sprintf("corrupt record at offset %d (not repaired: it is not at the tail)", base+int64(off)), Problem: true})
				want++
			default:
				if seq != want {
					what := fmt.Sprintf("seq %d at offset %d, expected %d", seq, base+int64(off), want)
					if seq > 0 && seq < want {
						// Two writers that each saw the same last line
						// (a stale cache of a network filesystem).
						what += ": duplicated (a seq written twice)"
					}
					sc.findings = append(sc.findings, fsstore.Finding{Path: path, What: what, Problem: true})
				}
				want = seq + 1
				if at := fsstore.LoneSurrogate(line); at >= 0 {
					sc.findings = append(sc.findings, loneSurrogate(path, id, seq, base+int64(off), line[at:at+6]))
				}
			}
			if end+1 == len(b) {
				last, hasLast = append(last[:0], line...), true
			}
			off = end + 1
		}
		return true
	})
	if err != nil {
		sc.findings = append(sc.findings, fsstore.Finding{Path: path, What: err.Error(), Problem: true})
		sc.failed = true
		return sc
	}
	if tailSize > 0 {
		sc.torn = &fsstore.TornTail{Path: path, Offset: tailOff, Size: tailSize}
	}
	if hasLast {
		sc.count, _, sc.countErr = linePosition(last)
	}
	return sc
}

// loneSurrogate is the finding of a line, written before appends refused
// them, that holds a lone surrogate escape. A transcript is history and
// is not rewritten; a fork up to the line before is the way on.
func loneSurrogate(path, id string, seq, off int64, esc []byte) fsstore.Finding {
	what := fmt.Sprintf("seq %d at offset %d holds %s, a lone surrogate escape (half of a UTF-16 pair), which is not Unicode: strict JSON readers (jq) refuse the line (not repaired: a transcript is not rewritten", seq, off, esc)
	if seq > 1 {
		what += fmt.Sprintf("; `hermes sessions fork %s --at %d` copies the messages before it", id, seq-1)
	}
	what += ")"
	return fsstore.Finding{Path: path, What: what, Problem: true}
}

// lineSeq returns the seq of a transcript line, and false when the line
// is not a message.
func lineSeq(line []byte) (int64, bool) {
	// The message is dropped before line changes: unsafe.String's terms.
	if m, ok := parseStored(line, unsafe.String(unsafe.SliceData(line), len(line))); ok {
		return m.Seq, true
	}
	var pos struct {
		Seq int64 `json:"seq"`
	}
	if _, err := ParseMessage(line); err != nil || json.Unmarshal(line, &pos) != nil {
		return 0, false
	}
	return pos.Seq, true
}

// checkTranscript reports what the scan of the transcript of id found, and
// with repair cuts its torn tail, makes its missing document, or rewrites
// a document (doc, nil when it does not parse) that counts more messages
// than the transcript has.
func (s *Store) checkTranscript(id string, sc transcriptScan, hasDoc bool, doc *Session, repair bool) []fsstore.Finding {
	path := s.logPath(id)
	out := sc.findings
	if sc.failed {
		return out
	}
	if sc.torn != nil {
		fd := fsstore.Finding{Path: path, What: fmt.Sprintf("torn tail of %d bytes at offset %d", sc.torn.Size, sc.torn.Offset), Problem: true}
		if repair {
			fd.Repaired, fd.What = s.cutTail(id, fd.What)
		}
		out = append(out, fd)
	}
	if !hasDoc {
		fd := fsstore.Finding{Path: path, What: "transcript has no document", Problem: true}
		if repair {
			fd.Repaired, fd.What = s.recoverDocument(id, fd.What)
		}
		return append(out, fd)
	}
	// A document behind its transcript is the normal state (appends do
	// not rewrite it); one ahead counts messages the transcript lost.
	if doc != nil && sc.countErr == nil && sc.count < doc.MessageCount {
		fd := fsstore.Finding{Path: s.docPath(id), What: fmt.Sprintf("message_count %d, transcript has %d", doc.MessageCount, sc.count), Problem: true}
		if repair {
			fd.Repaired = s.rewriteDoc(id) == nil
		}
		out = append(out, fd)
	}
	return out
}

func (s *Store) cutTail(id, what string) (bool, string) {
	unlock, err := s.lock(id)
	if err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	defer unlock()
	f, moved, err := fsstore.OpenAppend(s.logPath(id), s.Now())
	if err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	f.Close()
	return true, what + "; moved aside to " + moved
}

// recoverDocument moves an unreadable document of id aside (Get
// quarantines it) and makes a new one from the transcript: source
// "recovered", state active, so that no prune removes it before a person
// has looked. The title and other metadata are in the copy kept aside.
// canonicalizeTimes rewrites the document of id with its times in
// TimeLayout, changing no instant.
func (s *Store) canonicalizeTimes(id, what string) (bool, string) {
	unlock, err := s.lock(id)
	if err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	defer unlock()
	var sess Session
	if err := fsstore.ReadDoc(s.docPath(id), &sess); err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	for name, p := range sess.times() {
		c, err := p.Canonical()
		if err != nil {
			return false, what + " (" + name + " is not a time; left as it is)"
		}
		*p = c
	}
	if err := fsstore.WriteDoc(s.docPath(id), &sess); err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	return true, what + "; rewritten"
}

func (s *Store) recoverDocument(id, what string) (bool, string) {
	unlock, err := s.lock(id)
	if err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	var sess Session
	if err := fsstore.ReadDoc(s.docPath(id), &sess); !errors.Is(err, os.ErrNotExist) && (err != nil || sess.ID != id) {
		dst, err := fsstore.MoveAside(s.docPath(id), fmt.Sprintf(".corrupt-%d", s.Now().Unix()))
		if err != nil {
			unlock()
			return false, what + " (" + err.Error() + ")"
		}
		what += "; moved aside to " + dst
	}
	unlock()
	if _, err := os.Stat(s.logPath(id)); err != nil {
		return true, what
	}
	if _, _, err := s.createWith(Session{ID: id, Source: "recovered"}, nil); err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	return true, what + "; made a new document from the transcript (source recovered)"
}
