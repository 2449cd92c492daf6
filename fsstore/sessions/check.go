package sessions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
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
// catalog rebuilt. Damage inside a transcript is reported, not repaired,
// but for messages that break the tool-call rules (callCheck: a second
// result, a result after its turn, a reply stored twice), which a repair
// drops, keeping the transcript as it was beside it.
func (s *Store) Check(repair bool, lostFound string) ([]fsstore.Finding, error) {
	out, _, err := s.CheckSessions(repair, lostFound)
	return out, err
}

// CheckSessions is Check, and also returns how many sessions (documents
// and transcripts without one) it checked. The directory's names are
// listed once and sorted; documents, then transcripts, are read in
// parallel a batch at a time, each once (a document twice with repair,
// since a repair may rewrite it between the two); what they show is
// reported, and repaired, one at a time in the order of their names, so
// the result is that of a sequential check. Between the passes it keeps
// of a session only what a later check needs (docInfo, titledDoc), never
// the document: see "Check's memory" in doc.go.
func (s *Store) CheckSessions(repair bool, lostFound string) ([]fsstore.Finding, int, error) {
	names, err := checkedNames(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	var out []fsstore.Finding
	add := func(f fsstore.Finding) { out = append(out, f) }
	var states interner
	// Made to size, since growing them by append would hold two copies.
	nDocs, nLogs := 0, 0
	for _, name := range names {
		switch {
		case fsstore.IsCommon(name):
		case strings.HasSuffix(name, ".jsonl"):
			nLogs++
		default:
			nDocs++
		}
	}
	docs := make([]docInfo, 0, nDocs)
	logs := make([]string, 0, nLogs)
	var titled []titledDoc
	read := make([]docRead, min(checkBatch, len(names)))
	for lo := 0; lo < len(names); lo += checkBatch {
		batch := names[lo:min(lo+checkBatch, len(names))]
		s.readDocuments(batch, read)
		for i, name := range batch {
			path := filepath.Join(s.Dir, name)
			switch {
			case fsstore.CheckCommonName(name, path, repair, lostFound, add):
			case strings.HasSuffix(name, ".jsonl"):
				id := strings.TrimSuffix(name, ".jsonl")
				if n := len(docs); n > 0 && docs[n-1].id == id {
					// The document's copy of the id, listed just before
					// (<id>.json.* sort between): the name can go.
					id = docs[n-1].id
				}
				logs = append(logs, id)
			default: // <id>.json: checkedNames left no other
				id := strings.TrimSuffix(name, ".json")
				sess, err := read[i].sess, read[i].err
				doc := docInfo{id: id, logCount: -1, catCount: -1}
				if err == nil {
					doc.parsed, doc.count, doc.state = true, sess.MessageCount, states.of(sess.State)
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
					docs = append(docs, doc)
					continue
				}
				if err != nil {
					return out, 0, err
				}
				docs = append(docs, doc)
				out = append(out, checkIDRule(path, id)...)
				if sess.Title != "" {
					titled = append(titled, titledDoc{title: sess.Title, id: id, created: instantOf(sess.CreatedAt)})
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
		// What docs and logs do not hold of these names can go.
		clear(batch)
	}
	// Names sort <id>.json by the byte after the id, not by the id.
	slices.SortFunc(docs, func(a, b docInfo) int { return strings.Compare(a.id, b.id) })
	out = append(out, s.checkTitles(titled, repair)...)
	out = append(out, s.checkTitleIndex(titled, repair)...)
	ids := make([]string, len(docs))
	for i := range docs {
		ids[i] = docs[i].id
	}
	out = append(out, s.checkIDIndex(ids, repair)...)
	scanner, err := s.newTranscriptScanner()
	if err != nil {
		return out, 0, err
	}
	defer scanner.close()
	scans := make([]transcriptScan, min(checkBatch, len(logs)))
	checked := len(docs)
	for lo := 0; lo < len(logs); lo += checkBatch {
		batch := logs[lo:min(lo+checkBatch, len(logs))]
		scanner.scan(batch, scans)
		for i, id := range batch {
			doc := findDoc(docs, id)
			if doc == nil {
				checked++
				out = append(out, checkIDRule(s.logPath(id), id)...)
			}
			count, counted := int64(0), doc != nil && doc.parsed
			if counted {
				count = doc.count
			}
			if doc != nil && scans[i].countErr == nil && !scans[i].failed {
				doc.logCount = scans[i].count
			}
			if repair {
				// A repair above may have rewritten it.
				var sess Session
				counted = fsstore.ReadDoc(s.docPath(id), &sess) == nil
				count = sess.MessageCount
			}
			out = append(out, s.checkTranscript(id, scans[i], doc != nil, count, counted, repair)...)
		}
	}
	others, differ, err := s.catalogMarks(docs)
	if err != nil {
		return out, 0, err
	}
	stale := s.checkCatalog(docs, others, differ, logs)
	if stale != nil {
		if repair {
			stale.Repaired = s.RebuildCatalog() == nil
		}
		add(*stale)
	}
	out = append(out, s.checkValues(repair)...)
	return out, checked, nil
}

// checkBatch is how many names Check reads in parallel before it
// reports them: enough to keep every worker busy, few enough that the
// documents and scans in flight take little memory.
var checkBatch = 1024

// checkedNames lists the names of dir that Check looks at, sorted as
// os.ReadDir sorts them: documents and transcripts, copies kept aside and
// temp files. It keeps only the names (a DirEntry is three times the
// size of one), and drops the others (locks, the store's own files) a
// batch at a time, so that they are never all held.
func checkedNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var names []string
	for {
		batch, err := d.Readdirnames(4096)
		for _, name := range batch {
			if fsstore.IsCommon(name) || !strings.HasPrefix(name, ".") && (strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".jsonl")) {
				names = append(names, name)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(names)
	return names, nil
}

// docInfo is what Check keeps of a document <id>.json between its passes:
// whether it parses (with another id inside, it is reported as corrupt
// but still counts), its message_count and state, its transcript's count
// (logCount, -1 when unread), and whether the catalog's last line of its
// session is there and a removal, and the count it gives (catCount, -1
// when it gives none) (catalogMarks).
type docInfo struct {
	id        string // a part of the listed name, not a copy
	state     string // interned
	count     int64
	logCount  int64
	catCount  int64
	parsed    bool
	inCatalog bool
	removed   bool
}

// findDoc returns the document of id in docs (sorted by id), or nil.
func findDoc(docs []docInfo, id string) *docInfo {
	i, ok := slices.BinarySearchFunc(docs, id, func(d docInfo, id string) int { return strings.Compare(d.id, id) })
	if !ok {
		return nil
	}
	return &docs[i]
}

// titledDoc is what Check keeps of a titled document for the title
// checks.
type titledDoc struct {
	title   string
	id      string
	created instant
	bucket  [titleBucketDigits]byte
}

// instant is a created_at as fsstore.Time.Before compares it, without its
// text: unset or unreadable (!ok) is the earliest.
type instant struct {
	sec  int64
	nsec int32
	ok   bool
}

func instantOf(t fsstore.Time) instant {
	i, err := t.Instant()
	if err != nil {
		return instant{}
	}
	return instant{sec: i.Unix(), nsec: int32(i.Nanosecond()), ok: true}
}

func (a instant) before(b instant) bool {
	switch {
	case !b.ok:
		return false
	case !a.ok:
		return true
	}
	return a.sec < b.sec || a.sec == b.sec && a.nsec < b.nsec
}

// interner gives one copy of each string it is given, for the few values
// of a field that 100,000 sessions repeat.
type interner map[string]string

func (in *interner) of(s string) string {
	if *in == nil {
		*in = interner{}
	}
	if v, ok := (*in)[s]; ok {
		return v
	}
	(*in)[s] = s
	return s
}

// catalogMarks reads the catalog once, and marks on each document of
// docs (sorted by id) whether the last line of its session is there and
// a removal. It returns the sessions the catalog names that have no
// document, each with whether its last line is a removal, and the parsed
// documents whose last line gives another state, with that state: few,
// so the check keeps no state of the catalog's for the others.
func (s *Store) catalogMarks(docs []docInfo) (others map[string]bool, differ map[string]string, err error) {
	others, differ = map[string]bool{}, map[string]string{}
	f, size, err := fsstore.OpenSized(s.catalogPath())
	if f == nil || err != nil {
		return others, differ, err
	}
	defer f.Close()
	_, err = fsstore.ScanLines(f, size, func(line []byte, _ int64) error {
		var e catalogEntry
		if json.Unmarshal(line, &e) != nil {
			return nil
		}
		doc := findDoc(docs, e.SessionID)
		if doc == nil {
			others[e.SessionID] = e.Removed
			return nil
		}
		doc.inCatalog, doc.removed, doc.catCount = true, e.Removed, -1
		if e.State != "" {
			doc.catCount = e.MessageCount
		}
		if doc.parsed && e.State != "" && e.State != doc.state {
			differ[doc.id] = e.State
		} else {
			delete(differ, doc.id)
		}
		return nil
	})
	return others, differ, err
}

// checkCatalog returns one finding, the first, for a catalog that
// disagrees with the documents (a rebuild repairs them all), or nil: a
// session it lacks; a session it counts (stats reads it) that has no
// document, which a write that failed after its line and could not take
// it back leaves, or a removal by hand (a transcript without its
// document has its own finding); a session whose last line gives
// another state than its document, which a crash between the line and
// the document leaves; a session whose last line counts fewer messages
// than its transcript holds, which a crash leaves, since an append's
// line is written after its transcript is synced, and not synced itself.
// A document is read again before it is found wanting, since a write
// during the check writes its line first; a count behind is read again
// under the session's lock. docs are sorted by id and marked by
// catalogMarks, which returned others and differ.
func (s *Store) checkCatalog(docs []docInfo, others map[string]bool, differ map[string]string, logs []string) *fsstore.Finding {
	for _, doc := range docs {
		if !doc.inCatalog || doc.removed {
			return &fsstore.Finding{Path: s.catalogPath(), What: "activity catalog lacks session " + doc.id, Problem: true}
		}
	}
	ids := slices.Sorted(maps.Keys(differ))
	for _, id := range ids {
		var now Session
		if fsstore.ReadDoc(s.docPath(id), &now) == nil && now.State != differ[id] {
			return &fsstore.Finding{Path: s.catalogPath(), Problem: true,
				What: fmt.Sprintf("activity catalog says session %s is %s; its document says %s", id, differ[id], now.State)}
		}
	}
	for _, doc := range docs {
		if doc.catCount >= 0 && doc.logCount > doc.catCount {
			if logCount, catCount, behind := s.catalogBehind(doc.id); behind {
				return &fsstore.Finding{Path: s.catalogPath(), Problem: true,
					What: fmt.Sprintf("activity catalog counts %d messages of session %s; its transcript has %d", catCount, doc.id, logCount)}
			}
		}
	}
	ids = nil
	for id, removed := range others {
		if !removed && fsstore.CheckID("session id", id) == nil {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	sorted := slices.Clone(logs)
	slices.Sort(sorted)
	ids = slices.DeleteFunc(ids, func(id string) bool {
		_, found := slices.BinarySearch(sorted, id)
		return found
	})
	slices.Sort(ids)
	for _, id := range ids {
		if _, err := os.Lstat(s.docPath(id)); errors.Is(err, os.ErrNotExist) {
			return &fsstore.Finding{Path: s.catalogPath(), What: "activity catalog counts session " + id + ", which has no document", Problem: true}
		}
	}
	return nil
}

// catalogBehind reads again, under the lock of session id, its
// transcript's count and the count of its last catalog line, and reports
// whether the line is behind.
func (s *Store) catalogBehind(id string) (logCount, catCount int64, behind bool) {
	unlock, err := s.lock(id)
	if err != nil {
		return 0, 0, false
	}
	defer unlock()
	if logCount, err = s.transcriptCount(id); err != nil {
		return 0, 0, false
	}
	f, size, err := fsstore.OpenSized(s.catalogPath())
	if f == nil || err != nil {
		return 0, 0, false
	}
	defer f.Close()
	catCount = -1
	fsstore.EachLineBackward(f, size, func(line []byte, _ int64) bool {
		if got, ok := lineSessionBytes(line); !ok || string(got) != id {
			return true
		}
		var e catalogEntry
		if json.Unmarshal(line, &e) == nil && e.State != "" && !e.Removed {
			catCount = e.MessageCount
		}
		return false
	})
	return logCount, catCount, catCount >= 0 && logCount > catCount
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
// ones last. The oldest (by created_at, then id) keeps its title. It
// sorts titled by title.
func (s *Store) checkTitles(titled []titledDoc, repair bool) []fsstore.Finding {
	slices.SortFunc(titled, func(a, b titledDoc) int { return strings.Compare(a.title, b.title) })
	var out []fsstore.Finding
	for lo := 0; lo < len(titled); {
		hi := lo + 1
		for hi < len(titled) && titled[hi].title == titled[lo].title {
			hi++
		}
		group := titled[lo:hi]
		lo = hi
		if len(group) == 1 {
			continue
		}
		slices.SortFunc(group, func(a, b titledDoc) int {
			switch {
			case a.created.before(b.created):
				return -1
			case b.created.before(a.created):
				return 1
			}
			return strings.Compare(a.id, b.id)
		})
		for _, newer := range group[1:] {
			f := fsstore.Finding{Path: s.docPath(newer.id), Problem: true,
				What: fmt.Sprintf("title %q is also the title of session %s, an older one", newer.title, group[0].id)}
			if repair {
				f.Repaired, f.What = s.retitle(newer.id, newer.title, f.What)
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

// readDocuments reads into read, in parallel, the names that may be
// session documents (<id>.json), each once.
func (s *Store) readDocuments(names []string, read []docRead) {
	eachOnWorkers(len(names), func() func(int) {
		return func(i int) {
			name := names[i]
			read[i] = docRead{}
			if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
				return
			}
			var sess Session
			if read[i].err = fsstore.ReadDoc(filepath.Join(s.Dir, name), &sess); read[i].err == nil {
				read[i].sess = &sess
			}
		}
	})
}

// transcriptScan is what one read of a transcript found: the damage of its
// lines, its torn tail, and its last complete line's seq (the count).
type transcriptScan struct {
	findings []fsstore.Finding
	failed   bool // it could not be read: findings says why
	torn     *fsstore.TornTail
	count    int64
	countErr error // the last line's seq could not be read
	// calls are what callCheck found of the transcript's tool calls, and
	// drop the seqs of the messages a repair drops.
	calls []string
	drop  []int64
}

// transcriptScanner reads transcripts a batch at a time, on one
// lineReader per worker kept from batch to batch.
type transcriptScanner struct {
	d       *os.File
	readers []*lineReader
}

func (s *Store) newTranscriptScanner() (*transcriptScanner, error) {
	d, err := os.Open(s.Dir)
	if err != nil {
		return nil, err
	}
	return &transcriptScanner{d: d, readers: make([]*lineReader, runtime.GOMAXPROCS(0))}, nil
}

func (t *transcriptScanner) close() { t.d.Close() }

// scan reads the transcripts of ids in parallel, each once, into scans.
func (t *transcriptScanner) scan(ids []string, scans []transcriptScan) {
	var worker atomic.Int64
	eachOnWorkers(len(ids), func() func(int) {
		w := worker.Add(1) - 1
		if t.readers[w] == nil {
			t.readers[w] = newLineReader(t.d.Name(), int(t.d.Fd()))
		}
		r := t.readers[w]
		return func(i int) { scans[i] = r.scanTranscript(ids[i]) }
	})
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
	var calls callCheck
	var want int64 = 1
	var last []byte
	hasLast := false
	tailOff, tailSize, err := r.each(fd, name, st.Size, func(b []byte, base int64) bool {
		for off := 0; off < len(b); {
			end := off + bytes.IndexByte(b[off:], '\n')
			line := b[off:end]
			m, ok := lineMessage(line)
			seq := m.Seq
			if ok {
				calls.add(m)
			}
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
	sc.calls, sc.drop = calls.findings, calls.drop
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

// lineMessage returns the message of a transcript line, and false when
// the line is not one. The message may share line's bytes (its strings
// too): it is not to be kept once line changes (unsafe.String's terms).
func lineMessage(line []byte) (Message, bool) {
	if m, ok := parseStored(line, unsafe.String(unsafe.SliceData(line), len(line))); ok {
		return m, true
	}
	m, err := ParseMessage(line)
	var pos struct {
		Seq int64 `json:"seq"`
	}
	if err != nil || json.Unmarshal(line, &pos) != nil {
		return Message{}, false
	}
	m.Seq = pos.Seq
	return m, true
}

// checkTranscript reports what the scan of the transcript of id found, and
// with repair cuts its torn tail, makes its missing document, or rewrites
// a document that counts more messages than the transcript has (count,
// when counted: the document parses).
func (s *Store) checkTranscript(id string, sc transcriptScan, hasDoc bool, count int64, counted bool, repair bool) []fsstore.Finding {
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
	if len(sc.calls) > 0 {
		fd := fsstore.Finding{Path: path, What: "tool calls: " + strings.Join(sc.calls, "; "), Problem: true}
		if repair && len(sc.findings) == 0 {
			fd.Repaired, fd.What = s.dropMessages(id, sc.drop, fd.What)
		}
		out = append(out, fd)
	}
	// A document behind its transcript is the normal state (appends do
	// not rewrite it); one ahead counts messages the transcript lost.
	if counted && sc.countErr == nil && sc.count < count {
		fd := fsstore.Finding{Path: s.docPath(id), What: fmt.Sprintf("message_count %d, transcript has %d", count, sc.count), Problem: true}
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
