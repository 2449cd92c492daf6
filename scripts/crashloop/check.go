package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// transcript is what checkTranscript learned from one JSONL file.
type transcript struct {
	lines  int
	tokens map[string]int // content that is a harness token -> occurrences
}

// checkTranscript parses a transcript: every line a JSON object, seq 1, 2,
// 3 … without gaps, no bytes after the last newline. It returns what it
// found and the problems.
func checkTranscript(data []byte) (transcript, []string) {
	t := transcript{tokens: map[string]int{}}
	var probs []string
	if i := bytes.LastIndexByte(data, '\n'); i != len(data)-1 && len(data) > 0 {
		probs = append(probs, fmt.Sprintf("%d bytes after the last newline (a torn tail fsck left in place)", len(data)-i-1))
		data = data[:i+1]
	}
	for n, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if len(data) == 0 {
			break
		}
		var m struct {
			Seq     *int            `json:"seq"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			probs = append(probs, fmt.Sprintf("line %d does not parse: %v", n+1, err))
			t.lines++
			continue
		}
		t.lines++
		if m.Seq == nil || *m.Seq != n+1 {
			got := "none"
			if m.Seq != nil {
				got = fmt.Sprint(*m.Seq)
			}
			probs = append(probs, fmt.Sprintf("line %d has seq %s", n+1, got))
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil && strings.HasPrefix(s, "tok-") {
			tok, _, _ := strings.Cut(s, " ")
			t.tokens[tok]++
		}
	}
	return t, probs
}

// checkTorn reports a *.torn-* file that holds more than one partial line:
// a torn tail has no newline (one at its very end is tolerated).
func checkTorn(data []byte) string {
	if i := bytes.IndexByte(data, '\n'); i >= 0 && i != len(data)-1 {
		return fmt.Sprintf("holds a newline at offset %d of %d bytes: more than a torn tail was moved aside", i, len(data))
	}
	return ""
}

// validTitles is the set a session's title may have after the renames: the
// last acknowledged one and any attempted after it; with none acknowledged,
// also the empty title.
func validTitles(rs []renameAttempt) map[string]bool {
	ok := map[string]bool{}
	last := -1
	for i, r := range rs {
		if r.acked {
			last = i
		}
	}
	if last < 0 {
		ok[""] = true
		last = 0
	}
	for _, r := range rs[last:] {
		ok[r.title] = true
	}
	return ok
}

// fsck runs hermes fsck; on problems, fsck --repair and fsck again, which
// must exit 0.
func (h *harness) fsck() {
	r := h.hermes("fsck", false, "", nil, "fsck")
	if r.ok() {
		return
	}
	rr := h.hermes("fsck --repair", false, "", nil, "fsck", "--repair")
	h.fsckRepairs++
	if h.o.verbose {
		fmt.Fprintf(os.Stderr, "crashloop: fsck exited %d:\n%s%s\nrepair exited %d:\n%s%s\n", r.code, r.stdout, r.stderr, rr.code, rr.stdout, rr.stderr)
	}
	r2 := h.hermes("fsck", false, "", nil, "fsck")
	for try := 0; try < 2 && !r2.ok() && onlyStray(r2.stdout+r2.stderr); try++ {
		// A temp file that a kill left less than a minute before the
		// first fsck is not yet stray there (it may be a write in
		// progress), and may have become so since: repaired the same way.
		// A phase that killed up to its end (the gateway's) leaves such
		// files every second or so, which keep crossing the minute while
		// fsck runs: the second time, once a minute has passed for all.
		if try == 1 {
			time.Sleep(strayAge + time.Second)
		}
		h.hermes("fsck --repair", false, "", nil, "fsck", "--repair")
		r2 = h.hermes("fsck", false, "", nil, "fsck")
	}
	if !r2.ok() {
		h.problemf("fsck after fsck --repair exited %d:\nfirst fsck:\n%s%s\nrepair (exit %d):\n%s%s\nsecond fsck:\n%s%s",
			r2.code, r.stdout, r.stderr, rr.code, rr.stdout, rr.stderr, r2.stdout, r2.stderr)
	}
}

// strayAge is how old fsck wants a temp file before it calls it stray.
const strayAge = time.Minute

// onlyStray reports whether every problem fsck printed is a stray temp
// file.
func onlyStray(out string) bool {
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "problem: ") {
			if !strings.HasSuffix(line, ": stray temp file of an interrupted write") {
				return false
			}
			n++
		}
	}
	return n > 0
}

// checkpoint runs fsck and verifies every acknowledged write. The workload
// is stopped.
func (h *harness) checkpoint() {
	h.checkpoints++
	h.fsck()
	h.checkAgent()
	dir := h.profileDir()
	verified := 0

	// Sessions.
	h.led.mu.Lock()
	sessions := append([]*session(nil), h.led.sessions...)
	ackTokens := map[string]string{}
	for k, v := range h.led.ackTokens {
		ackTokens[k] = v
	}
	tokens := map[string]string{}
	for k, v := range h.led.tokens {
		tokens[k] = v
	}
	tasks := map[string]string{}
	for k, v := range h.led.tasks {
		tasks[k] = v
	}
	kanban := map[string]kanbanStage{}
	for k, v := range h.led.kanban {
		kanban[k] = v
	}
	h.led.mu.Unlock()

	found := map[string]map[string]int{} // session -> token -> count
	for _, s := range sessions {
		sdir := filepath.Join(dir, "sessions")
		docb, err := os.ReadFile(filepath.Join(sdir, s.id+".json"))
		if err != nil {
			h.problemf("session %s: document: %v (it existed: invariant 4 or 1)", s.id, err)
			continue
		}
		var doc struct {
			ID           string `json:"id"`
			Title        string `json:"title"`
			MessageCount int    `json:"message_count"`
		}
		if err := json.Unmarshal(docb, &doc); err != nil || doc.ID != s.id {
			h.problemf("session %s: document does not parse or names %q: %v", s.id, doc.ID, err)
			continue
		}
		verified++ // the create
		tb, err := os.ReadFile(filepath.Join(sdir, s.id+".jsonl"))
		if err != nil && !os.IsNotExist(err) {
			h.problemf("session %s: transcript: %v", s.id, err)
			continue
		}
		t, probs := checkTranscript(tb)
		for _, p := range probs {
			h.problemf("session %s: transcript: %s", s.id, p)
		}
		found[s.id] = t.tokens
		// The document's count is a cache that appends leave behind; it
		// may never be ahead of the transcript (invariant 5).
		if doc.MessageCount > t.lines {
			h.problemf("session %s: message_count %d but the transcript has %d lines after fsck (invariant 5)", s.id, doc.MessageCount, t.lines)
		}
		h.led.mu.Lock()
		maxCount := s.maxCount
		titles := validTitles(s.renames)
		nacked := 0
		for _, r := range s.renames {
			if r.acked {
				nacked++
			}
		}
		h.led.mu.Unlock()
		if t.lines < maxCount {
			h.lostf("session %s: transcript has %d messages, an acknowledged write printed %d (history shortened or reset)", s.id, t.lines, maxCount)
		}
		if !titles[doc.Title] {
			h.lostf("session %s: title %q, not the last acknowledged rename nor a later attempt (%d valid)", s.id, doc.Title, len(titles))
		} else {
			verified += nacked
		}
	}
	for tok, sid := range ackTokens {
		switch n := found[sid][tok]; {
		case n == 1:
			verified++
		case n == 0:
			where := ""
			for other, toks := range found {
				if toks[tok] > 0 {
					where = " (it is in session " + other + ")"
				}
			}
			h.lostf("acknowledged message %s of session %s is not in its transcript%s", tok, sid, where)
		default:
			h.problemf("acknowledged message %s is %d times in session %s", tok, n, sid)
		}
	}
	for sid, toks := range found {
		for tok, n := range toks {
			if want, ok := tokens[tok]; !ok || want != sid {
				h.problemf("session %s holds message %s, written to session %q", sid, tok, want)
			} else if n > 1 && ackTokens[tok] == "" {
				h.problemf("unacknowledged message %s is %d times in session %s", tok, n, sid)
			}
		}
	}

	// Torn and corrupt files anywhere in the profile.
	h.tornFiles = 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		name := d.Name()
		switch {
		case strings.Contains(name, ".torn-"):
			h.tornFiles++
			data, err := os.ReadFile(p)
			if err != nil {
				h.problemf("%s: %v", p, err)
			} else if msg := checkTorn(data); msg != "" {
				h.problemf("%s: %s", p, msg)
			}
		case strings.Contains(name, ".corrupt-"):
			// A document is replaced by rename: a crash cannot leave one
			// that does not parse.
			if !h.seenCorrupt[p] {
				h.seenCorrupt[p] = true
				data, _ := os.ReadFile(p)
				h.problemf("%s: a document was quarantined as unparsable after a crash (%d bytes: %.120q)", p, len(data), data)
			}
		}
		return nil
	})

	// Background tasks: every acknowledged task in history, its log holding
	// its token.
	if len(tasks) > 0 {
		r := h.hermes("tasks history", false, "", nil, "--json", "tasks", "history", "--limit", "0")
		if !r.ok() {
			h.problemf("tasks history exited %d: %s", r.code, r.stderr)
		} else {
			status := map[string]string{}
			for _, line := range strings.Split(r.stdout, "\n") {
				var t struct{ ID, Status string }
				if json.Unmarshal([]byte(line), &t) == nil && t.ID != "" {
					if _, dup := status[t.ID]; dup {
						h.problemf("task %s is more than once in tasks history", t.ID)
					}
					status[t.ID] = t.Status
				}
			}
			for id, tok := range tasks {
				st, ok := status[id]
				if !ok {
					h.lostf("acknowledged task %s is not in tasks history", id)
					continue
				}
				if st != "succeeded" {
					h.lostf("acknowledged task %s is %s in history, it exited 0", id, st)
					continue
				}
				log, err := os.ReadFile(filepath.Join(dir, "tasks", id+".log"))
				if err != nil || !bytes.Contains(log, []byte(tok)) {
					h.lostf("acknowledged task %s: its log lacks %s (%v)", id, tok, err)
					continue
				}
				verified++
			}
		}
	}

	// Kanban.
	if len(kanban) > 0 {
		r := h.hermes("kanban list", false, "", nil, "--json", "kanban", "list")
		if !r.ok() {
			h.problemf("kanban list exited %d: %s", r.code, r.stderr)
		} else {
			status := map[string]string{}
			for _, line := range strings.Split(r.stdout, "\n") {
				var t struct{ ID, Status string }
				if json.Unmarshal([]byte(line), &t) == nil && t.ID != "" {
					status[t.ID] = t.Status
				}
			}
			for id, stage := range kanban {
				st, ok := status[id]
				switch {
				case !ok:
					h.lostf("acknowledged kanban task %s is not on the board", id)
				case stage == kbDone && st != "done":
					h.lostf("kanban task %s: complete was acknowledged, status is %s", id, st)
				case stage == kbClaimed && st != "running" && st != "done":
					h.lostf("kanban task %s: claim was acknowledged, status is %s", id, st)
				default:
					verified += int(stage)
				}
			}
		}
	}
	h.verified += verified
	h.lastVerified = verified
	if h.o.verbose {
		fmt.Fprintf(os.Stderr, "crashloop: checkpoint %d: kills %d, verified %d, lost %d, violations %d\n",
			h.checkpoints, h.kills.Load(), verified, h.lost, h.violations)
	}
}
