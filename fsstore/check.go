package fsstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Finding is one thing fsck noticed. A Problem makes fsck fail until it is
// repaired; a note (Problem false) is only said: the copies kept aside by
// recovery are notes, since they are the record of a repair, not damage.
type Finding struct {
	Path     string `json:"path"`
	What     string `json:"what"`
	Problem  bool   `json:"problem"`
	Repaired bool   `json:"repaired"`
}

// strayAge is how old a temp file must be before fsck calls it stray: a
// younger one may belong to a write in progress.
const strayAge = time.Minute

// asideMarkers are the infixes of the copies that recovery keeps.
var asideMarkers = []string{".torn-", ".corrupt-", ".replaced-"}

// Check reads every document and transcript of the store and reports torn
// tails, corrupt records, seq gaps, counts that disagree with transcripts,
// transcripts without a document, stray temp files and catalog gaps. With
// repair it fixes what it can without deleting a byte: torn tails and
// unreadable documents are moved aside, counts rewritten, a document made
// for an orphan transcript, stray temp files moved to lostFound, the
// catalog rebuilt. Damage inside a transcript is reported, not repaired.
func (s *SessionStore) Check(repair bool, lostFound string) ([]Finding, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Finding
	add := func(f Finding) { out = append(out, f) }
	docs := map[string]bool{}
	var logs []string
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(s.Dir, name)
		switch {
		case checkCommon(e, path, repair, lostFound, add):
		case strings.HasPrefix(name, "."), strings.HasSuffix(name, ".lock"):
		case strings.HasSuffix(name, ".jsonl"):
			logs = append(logs, strings.TrimSuffix(name, ".jsonl"))
		case strings.HasSuffix(name, ".json"):
			id := strings.TrimSuffix(name, ".json")
			var sess Session
			err := readDoc(path, &sess)
			if err == nil && sess.ID != id {
				err = &CorruptError{Path: path, Err: fmt.Errorf("document has id %q, not %q", sess.ID, id)}
			}
			var corrupt *CorruptError
			if errors.As(err, &corrupt) {
				f := Finding{Path: path, What: "document does not parse: " + corrupt.Err.Error(), Problem: true}
				if repair {
					f.Repaired, f.What = s.recoverDocument(id, f.What)
				}
				add(f)
				// The finding covers the transcript's missing document too.
				docs[id] = true
				continue
			}
			if err != nil {
				return out, err
			}
			docs[id] = true
			if fields := sess.nonCanonicalTimes(); len(fields) > 0 {
				f := Finding{Path: path, What: "times not in the store's form (" + strings.Join(fields, ", ") + ")", Problem: true}
				if repair {
					f.Repaired, f.What = s.canonicalizeTimes(id, f.What)
				}
				add(f)
			}
		}
	}
	for _, id := range logs {
		out = append(out, s.checkTranscript(id, docs[id], repair)...)
	}
	catalog, err := s.catalogIDs()
	if err != nil {
		return out, err
	}
	for id := range docs {
		if !catalog[id] {
			f := Finding{Path: s.catalogPath(), What: "activity catalog lacks session " + id, Problem: true}
			if repair {
				f.Repaired = s.RebuildCatalog() == nil
			}
			add(f)
			break
		}
	}
	return out, nil
}

// checkCommon handles the entries every store directory may hold: copies
// kept aside by recovery (a note) and stray temp files (a problem; repair
// moves them to lostFound). It reports whether it handled the entry.
func checkCommon(e os.DirEntry, path string, repair bool, lostFound string, add func(Finding)) bool {
	name := e.Name()
	switch {
	case isAside(name):
		add(Finding{Path: path, What: "kept aside by an earlier recovery"})
	case strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-"):
		fi, err := e.Info()
		if err != nil || time.Since(fi.ModTime()) < strayAge {
			return true
		}
		f := Finding{Path: path, What: "stray temp file of an interrupted write", Problem: true}
		if repair {
			f.Repaired, f.What = moveToLostFound(path, lostFound, f.What)
		}
		add(f)
	default:
		return false
	}
	return true
}

func isAside(name string) bool {
	for _, m := range asideMarkers {
		if strings.Contains(name, m) {
			return true
		}
	}
	return false
}

func moveToLostFound(path, lostFound, what string) (bool, string) {
	if err := EnsureDir(lostFound); err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	dst := filepath.Join(lostFound, filepath.Base(path))
	if err := os.Rename(path, dst); err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	SyncDir(filepath.Dir(path))
	SyncDir(lostFound)
	return true, what + "; moved to " + dst
}

func (s *SessionStore) checkTranscript(id string, hasDoc, repair bool) []Finding {
	path := s.logPath(id)
	var out []Finding
	f, err := os.Open(path)
	if err != nil {
		return []Finding{{Path: path, What: err.Error(), Problem: true}}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return []Finding{{Path: path, What: err.Error(), Problem: true}}
	}
	var want int64 = 1
	torn, err := ScanLines(f, fi.Size(), func(line []byte, off int64) error {
		var pos struct {
			Seq int64 `json:"seq"`
		}
		if _, perr := ParseMessage(line); perr != nil || json.Unmarshal(line, &pos) != nil {
			out = append(out, Finding{Path: path, What: fmt.Sprintf("corrupt record at offset %d (not repaired: it is not at the tail)", off), Problem: true})
			want++
			return nil
		}
		if pos.Seq != want {
			out = append(out, Finding{Path: path, What: fmt.Sprintf("seq %d at offset %d, expected %d", pos.Seq, off, want), Problem: true})
		}
		want = pos.Seq + 1
		return nil
	})
	if err != nil {
		return append(out, Finding{Path: path, What: err.Error(), Problem: true})
	}
	if torn != nil {
		fd := Finding{Path: path, What: fmt.Sprintf("torn tail of %d bytes at offset %d", torn.Size, torn.Offset), Problem: true}
		if repair {
			fd.Repaired, fd.What = s.cutTail(id, fd.What)
		}
		out = append(out, fd)
	}
	if !hasDoc {
		fd := Finding{Path: path, What: "transcript has no document", Problem: true}
		if repair {
			fd.Repaired, fd.What = s.recoverDocument(id, fd.What)
		}
		return append(out, fd)
	}
	var sess Session
	if readDoc(s.docPath(id), &sess) == nil {
		// A document behind its transcript is the normal state (appends
		// do not rewrite it); one ahead counts messages the transcript
		// lost.
		if n, err := s.transcriptCount(id); err == nil && n < sess.MessageCount {
			fd := Finding{Path: s.docPath(id), What: fmt.Sprintf("message_count %d, transcript has %d", sess.MessageCount, n), Problem: true}
			if repair {
				fd.Repaired = s.rewriteDoc(id) == nil
			}
			out = append(out, fd)
		}
	}
	return out
}

func (s *SessionStore) cutTail(id, what string) (bool, string) {
	unlock, err := s.lock(id)
	if err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	defer unlock()
	f, moved, err := OpenAppend(s.logPath(id), s.Now())
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
func (s *SessionStore) canonicalizeTimes(id, what string) (bool, string) {
	unlock, err := s.lock(id)
	if err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	defer unlock()
	var sess Session
	if err := readDoc(s.docPath(id), &sess); err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	for name, p := range sess.times() {
		c, err := CanonicalTime(*p)
		if err != nil {
			return false, what + " (" + name + " is not a time; left as it is)"
		}
		*p = c
	}
	if err := writeDoc(s.docPath(id), &sess); err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	return true, what + "; rewritten"
}

func (s *SessionStore) recoverDocument(id, what string) (bool, string) {
	unlock, err := s.lock(id)
	if err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	var sess Session
	if err := readDoc(s.docPath(id), &sess); !errors.Is(err, os.ErrNotExist) && (err != nil || sess.ID != id) {
		dst, err := moveAside(s.docPath(id), fmt.Sprintf(".corrupt-%d", s.Now().Unix()))
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
	if _, _, err := s.Create(Session{ID: id, Source: "recovered"}); err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	return true, what + "; made a new document from the transcript (source recovered)"
}

// Check reads every task record and the indexes. It reports records that
// do not parse, tasks that the running markers or the finished log do not
// agree with, a torn tail of the finished log and stray temp files. With
// repair, unreadable records are quarantined, the indexes rebuilt from the
// records, stray temp files moved to lostFound. A log (a task's output) is
// the command's own bytes and is not checked.
func (s *TaskStore) Check(repair bool, lostFound string) ([]Finding, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Finding
	add := func(f Finding) { out = append(out, f) }
	running, err := s.Running()
	if err != nil {
		return nil, err
	}
	marked := map[string]bool{}
	for _, id := range running {
		marked[id] = true
	}
	listed := map[string]bool{}
	finished, err := s.finishedEntries()
	if err != nil {
		return nil, err
	}
	for _, e := range finished {
		listed[e.TaskID] = true
	}
	// logDamaged: the finished log itself is wrong, not only the markers;
	// only then is it copied aside before it is rebuilt.
	indexOK, logDamaged := true, false
	records := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(s.Dir, name)
		if checkCommon(e, path, repair, lostFound, add) || !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
			continue
		}
		id := strings.TrimSuffix(name, ".json")
		var t Task
		err := readDoc(path, &t)
		if err == nil && t.ID != id {
			err = &CorruptError{Path: path, Err: fmt.Errorf("record has id %q", t.ID)}
		}
		var corrupt *CorruptError
		if errors.As(err, &corrupt) {
			f := Finding{Path: path, What: "record does not parse: " + corrupt.Err.Error(), Problem: true}
			if repair {
				_, qerr := s.Get(id)
				f.Repaired = qerr != nil && !errors.Is(qerr, ErrNotFound)
				if f.Repaired {
					f.What += "; " + qerr.Error()
				}
			}
			add(f)
			continue
		}
		if err != nil {
			return out, err
		}
		records[id] = true
		switch {
		case t.Finished() && !listed[id]:
			add(Finding{Path: s.finishedPath(), What: "finished log lacks task " + id, Problem: true})
			indexOK, logDamaged = false, true
		case !t.Finished() && !marked[id]:
			add(Finding{Path: s.runningDir(), What: "no running marker for task " + id, Problem: true})
			indexOK = false
		case t.Finished() && marked[id]:
			add(Finding{Path: s.runningMarker(id), What: "running marker of finished task " + id, Problem: true})
			indexOK = false
		}
	}
	for id := range marked {
		if !records[id] {
			add(Finding{Path: s.runningMarker(id), What: "running marker without a record", Problem: true})
			indexOK = false
		}
	}
	if f, size, err := openSized(s.finishedPath()); f != nil && err == nil {
		if torn, _ := ScanLines(f, size, func([]byte, int64) error { return nil }); torn != nil {
			add(Finding{Path: s.finishedPath(), What: fmt.Sprintf("torn tail of %d bytes at offset %d", torn.Size, torn.Offset), Problem: true})
			indexOK, logDamaged = false, true
		}
		f.Close()
	}
	if !indexOK && repair {
		if logDamaged {
			if _, err := copyAside(s.finishedPath(), fmt.Sprintf(".replaced-%d", s.Now().Unix())); err != nil {
				return out, err
			}
		}
		err := s.RebuildIndex()
		for i := range out {
			if out[i].Problem && !out[i].Repaired && (strings.HasPrefix(out[i].Path, s.runningDir()) || out[i].Path == s.finishedPath()) {
				out[i].Repaired = err == nil
			}
		}
	}
	return out, nil
}

// checkTree is the check of a store made only of documents and logs: it
// walks dir and reports documents (*.json) that do not parse, logs
// (*.jsonl) with a torn tail or a corrupt record, copies kept aside and
// stray temp files. With repair, unreadable documents are moved aside
// (quarantined), torn tails cut off into <log>.torn-<unix> under the lock
// lockFor names (the one the log's writers take), and stray temp files
// moved to lostFound.
func checkTree(dir string, lockFor func(log string) string, timeout time.Duration, repair bool, lostFound string) ([]Finding, error) {
	var out []Finding
	add := func(f Finding) { out = append(out, f) }
	err := filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if errors.Is(err, os.ErrNotExist) && path == dir {
			return filepath.SkipDir
		}
		if err != nil || e.IsDir() {
			return err
		}
		name := e.Name()
		switch {
		case checkCommon(e, path, repair, lostFound, add):
		case strings.HasSuffix(name, ".json"):
			var v any
			if err := readDoc(path, &v); err != nil {
				var corrupt *CorruptError
				if errors.As(err, &corrupt) {
					err = corrupt.Err
				}
				f := Finding{Path: path, What: "document does not parse: " + err.Error(), Problem: true}
				if repair {
					if dst, err := moveAside(path, fmt.Sprintf(".corrupt-%d", time.Now().Unix())); err == nil {
						f.Repaired, f.What = true, f.What+"; moved aside to "+dst
					}
				}
				add(f)
			}
		case strings.HasSuffix(name, ".jsonl"):
			out = append(out, checkLog(path, lockFor(path), timeout, repair)...)
		}
		return nil
	})
	return out, err
}

// checkLog checks one JSONL log: every complete line parses; a torn tail
// is reported and, with repair, cut off under lock.
func checkLog(path, lock string, timeout time.Duration, repair bool) []Finding {
	f, err := os.Open(path)
	if err != nil {
		return []Finding{{Path: path, What: err.Error(), Problem: true}}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return []Finding{{Path: path, What: err.Error(), Problem: true}}
	}
	var out []Finding
	torn, err := ScanLines(f, fi.Size(), func(line []byte, off int64) error {
		if !json.Valid(line) {
			out = append(out, Finding{Path: path, What: fmt.Sprintf("corrupt record at offset %d (not repaired: it is not at the tail)", off), Problem: true})
		}
		return nil
	})
	if err != nil {
		return append(out, Finding{Path: path, What: err.Error(), Problem: true})
	}
	if torn != nil {
		fd := Finding{Path: path, What: fmt.Sprintf("torn tail of %d bytes at offset %d", torn.Size, torn.Offset), Problem: true}
		if repair {
			if unlock, err := Lock(lock, timeout); err == nil {
				if lf, moved, err := OpenAppend(path, time.Now()); err == nil {
					lf.Close()
					fd.Repaired, fd.What = true, fd.What+"; moved aside to "+moved
				}
				unlock()
			}
		}
		out = append(out, fd)
	}
	return out
}

// Check checks the board's tasks and their logs (see checkTree).
func (b *Board) Check(repair bool, lostFound string) ([]Finding, error) {
	return checkTree(b.Dir, func(log string) string { return log + ".lock" }, b.LockTimeout, repair, lostFound)
}

// Check checks the gateway's stored responses, conversations and state
// (see checkTree). Run it with --repair while no gateway serves the
// profile: a document the server is rewriting could look torn.
func (g *GatewayStore) Check(repair bool, lostFound string) ([]Finding, error) {
	return checkTree(g.Dir, func(string) string { return g.indexLockPath() }, g.LockTimeout, repair, lostFound)
}
