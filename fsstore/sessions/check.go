package sessions

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

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
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []fsstore.Finding
	add := func(f fsstore.Finding) { out = append(out, f) }
	docs := map[string]bool{}
	byTitle := map[string][]Session{}
	var logs []string
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(s.Dir, name)
		switch {
		case fsstore.CheckCommon(e, path, repair, lostFound, add):
		case strings.HasPrefix(name, "."), strings.HasSuffix(name, ".lock"):
		case strings.HasSuffix(name, ".jsonl"):
			logs = append(logs, strings.TrimSuffix(name, ".jsonl"))
		case strings.HasSuffix(name, ".json"):
			id := strings.TrimSuffix(name, ".json")
			var sess Session
			err := fsstore.ReadDoc(path, &sess)
			if err == nil && sess.ID != id {
				err = &fsstore.CorruptError{Path: path, Err: fmt.Errorf("document has id %q, not %q", sess.ID, id)}
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
				return out, err
			}
			docs[id] = true
			if sess.Title != "" {
				byTitle[sess.Title] = append(byTitle[sess.Title], sess)
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
	for _, id := range logs {
		out = append(out, s.checkTranscript(id, docs[id], repair)...)
	}
	catalog, err := s.catalogIDs()
	if err != nil {
		return out, err
	}
	for id := range docs {
		if !catalog[id] {
			f := fsstore.Finding{Path: s.catalogPath(), What: "activity catalog lacks session " + id, Problem: true}
			if repair {
				f.Repaired = s.RebuildCatalog() == nil
			}
			add(f)
			break
		}
	}
	return out, nil
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

func (s *Store) checkTranscript(id string, hasDoc, repair bool) []fsstore.Finding {
	path := s.logPath(id)
	var out []fsstore.Finding
	f, err := os.Open(path)
	if err != nil {
		return []fsstore.Finding{{Path: path, What: err.Error(), Problem: true}}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return []fsstore.Finding{{Path: path, What: err.Error(), Problem: true}}
	}
	var want int64 = 1
	torn, err := fsstore.ScanLines(f, fi.Size(), func(line []byte, off int64) error {
		var pos struct {
			Seq int64 `json:"seq"`
		}
		if _, perr := ParseMessage(line); perr != nil || json.Unmarshal(line, &pos) != nil {
			out = append(out, fsstore.Finding{Path: path, What: fmt.Sprintf("corrupt record at offset %d (not repaired: it is not at the tail)", off), Problem: true})
			want++
			return nil
		}
		if pos.Seq != want {
			out = append(out, fsstore.Finding{Path: path, What: fmt.Sprintf("seq %d at offset %d, expected %d", pos.Seq, off, want), Problem: true})
		}
		want = pos.Seq + 1
		return nil
	})
	if err != nil {
		return append(out, fsstore.Finding{Path: path, What: err.Error(), Problem: true})
	}
	if torn != nil {
		fd := fsstore.Finding{Path: path, What: fmt.Sprintf("torn tail of %d bytes at offset %d", torn.Size, torn.Offset), Problem: true}
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
	var sess Session
	if fsstore.ReadDoc(s.docPath(id), &sess) == nil {
		// A document behind its transcript is the normal state (appends
		// do not rewrite it); one ahead counts messages the transcript
		// lost.
		if n, err := s.transcriptCount(id); err == nil && n < sess.MessageCount {
			fd := fsstore.Finding{Path: s.docPath(id), What: fmt.Sprintf("message_count %d, transcript has %d", sess.MessageCount, n), Problem: true}
			if repair {
				fd.Repaired = s.rewriteDoc(id) == nil
			}
			out = append(out, fd)
		}
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
	if _, _, err := s.Create(Session{ID: id, Source: "recovered"}); err != nil {
		return false, what + " (" + err.Error() + ")"
	}
	return true, what + "; made a new document from the transcript (source recovered)"
}
