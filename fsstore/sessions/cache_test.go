package sessions

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// TestAppendLeavesTheDocumentBehind: an append rewrites the document only
// for its preview (the first user message); after that the document's
// message_count and updated_at fall behind, and every reader takes them
// from the transcript (invariant 5). A rewrite for another reason stores
// the current values.
func TestAppendLeavesTheDocumentBehind(t *testing.T) {
	s, clock, _ := newTestStore(t)
	id := mustCreate(t, s, "s1")
	clock.Advance(time.Second)
	mustAppend(t, s, id, textMsg("user", "first"))
	if d := docOf(t, s, id); d.MessageCount != 1 || d.Preview != "first" {
		t.Fatalf("after the first user message the document is %+v, want count 1 and its preview", d)
	}
	doc := storetest.MustRead(t, s.docPath(id))
	last := clock.Advance(time.Minute)
	mustAppend(t, s, id, textMsg("assistant", "two"), textMsg("user", "three"))
	if !bytes.Equal(storetest.MustRead(t, s.docPath(id)), doc) {
		t.Fatal("a later append rewrote the document")
	}
	got, err := s.Get(id)
	if err != nil || got.MessageCount != 3 || got.UpdatedAt != fsstore.TimeOf(last) {
		t.Fatalf("Get = count %d, updated %s (%v); want 3, %s", got.MessageCount, got.UpdatedAt, err, fsstore.TimeOf(last))
	}
	list, err := s.List(ListOptions{})
	if err != nil || len(list) != 1 || list[0].MessageCount != 3 || list[0].UpdatedAt != fsstore.TimeOf(last) {
		t.Fatalf("List = %+v (%v)", list, err)
	}
	findings, err := s.Check(false, t.TempDir())
	if err != nil || len(findings) != 0 {
		t.Fatalf("Check of a document behind its transcript = %+v (%v); want nothing", findings, err)
	}
	clock.Advance(time.Second)
	if _, err := s.Rename(id, "renamed"); err != nil {
		t.Fatal(err)
	}
	if d := docOf(t, s, id); d.MessageCount != 3 {
		t.Fatalf("after a rename the document says %d messages, want 3", d.MessageCount)
	}
}

// TestDocumentAheadOfTranscriptIsRepaired: a document that counts more
// messages than its transcript holds is damage: fsck names it and its
// repair stores the transcript's count, while readers already report the
// transcript's.
func TestDocumentAheadOfTranscriptIsRepaired(t *testing.T) {
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "s1")
	mustAppend(t, s, id, textMsg("user", "one"), textMsg("assistant", "two"))
	doc := strings.Replace(string(storetest.MustRead(t, s.docPath(id))), `"message_count": 1`, `"message_count": 9`, 1)
	if err := os.WriteFile(s.docPath(id), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(id); err != nil || got.MessageCount != 2 {
		t.Fatalf("Get = %d (%v), want the transcript's 2", got.MessageCount, err)
	}
	findings, err := s.Check(true, t.TempDir())
	if err != nil || len(findings) != 1 || findings[0].What != "message_count 9, transcript has 2" || !findings[0].Repaired {
		t.Fatalf("Check = %+v (%v); want the count named and repaired", findings, err)
	}
	if d := docOf(t, s, id); d.MessageCount != 2 {
		t.Fatalf("after the repair the document says %d, want 2", d.MessageCount)
	}
}

// TestPruneSeesActivityAfterTheDocument: prune judges a session by its
// last activity, which an append records in the transcript and not in the
// document: an ended session written to after the cutoff is kept.
func TestPruneSeesActivityAfterTheDocument(t *testing.T) {
	s, clock, _ := newTestStore(t)
	id := mustCreate(t, s, "s1")
	mustAppend(t, s, id, textMsg("user", "one"))
	if _, err := s.End(id, "done"); err != nil {
		t.Fatal(err)
	}
	cutoff := clock.Advance(time.Hour)
	clock.Advance(time.Hour)
	mustAppend(t, s, id, textMsg("assistant", "late reply"))
	if d := docOf(t, s, id); d.UpdatedAt >= fsstore.TimeOf(cutoff) {
		t.Fatalf("the document's updated_at %s moved; the test needs it behind", d.UpdatedAt)
	}
	removed, err := s.Prune(cutoff, "", false)
	if err != nil || len(removed) != 0 {
		t.Fatalf("Prune = %+v (%v); the session was active after the cutoff", removed, err)
	}
}

// TestTitleLookupReadsOnlyDocuments: titles live in the documents, so a
// title lookup does not read transcripts, and a session whose transcript
// ends in a damaged line still holds its title against a duplicate.
func TestTitleLookupReadsOnlyDocuments(t *testing.T) {
	s, _, _ := newTestStore(t)
	if _, _, err := s.Create(Session{ID: "s1", Source: "test", Title: "plan"}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, "s1", textMsg("user", "one"))
	f, err := os.OpenFile(s.logPath("s1"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("{\"seq\":2,damaged}\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, _, err := s.Create(Session{ID: "s2", Source: "test", Title: "plan"}); !errors.Is(err, fsstore.ErrRefused) {
		t.Fatalf("Create with the title of s1 = %v; want it refused", err)
	}
	if id, err := s.Resolve("plan"); err != nil || id != "s1" {
		t.Fatalf("Resolve(plan) = %q, %v; want s1", id, err)
	}
	// List still shows it, with the document's own count.
	if list, err := s.List(ListOptions{}); err != nil || len(list) != 1 || list[0].ID != "s1" {
		t.Fatalf("List = %+v, %v; want s1 listed", list, err)
	}
}
