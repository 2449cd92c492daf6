package sessions

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// TestCorruptDocumentQuarantined checks invariant 4: a session document
// that does not parse is moved aside to <id>.json.corrupt-<unix> with its
// bytes intact, Get reports an error instead of a fresh empty session,
// nothing takes the document's place, and the transcript is untouched.
func TestCorruptDocumentQuarantined(t *testing.T) {
	s0, _, _ := newTestStore(t)
	id0 := mustCreate(t, s0, "donor")
	mustAppend(t, s0, id0, textMsg("user", "hello"))
	valid := storetest.MustRead(t, s0.docPath(id0))

	cases := []struct {
		name string
		doc  []byte
	}{
		{"garbage", []byte("this is not json \x00\xff")},
		{"empty file", []byte{}},
		{"truncated JSON", valid[:len(valid)/2]},
		{"wrong type", []byte(`["an","array"]`)},
		{"null", []byte("null\n")},
		{"empty object", []byte("{}\n")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, clock, _ := newTestStore(t)
			id := mustCreate(t, s, "s1")
			mustAppend(t, s, id, textMsg("user", "one"), textMsg("assistant", "two"))
			transcript := storetest.MustRead(t, s.logPath(id))
			storetest.MustWrite(t, s.docPath(id), c.doc)

			sess, err := s.Get(id)
			if err == nil {
				t.Fatalf("Get returned %+v and no error for a document that does not parse", sess)
			}
			var corrupt *fsstore.CorruptError
			if !errors.As(err, &corrupt) || errors.Is(err, fsstore.ErrNotFound) {
				t.Fatalf("Get error = %v, want a *fsstore.CorruptError", err)
			}
			aside := fmt.Sprintf("%s.corrupt-%d", s.docPath(id), clock.Now().Unix())
			if !strings.Contains(err.Error(), aside) {
				t.Errorf("error %q does not name %s", err, aside)
			}
			if got := storetest.MustRead(t, aside); !bytes.Equal(got, c.doc) {
				t.Fatalf("%s holds %q, want the document's bytes %q", aside, got, c.doc)
			}
			if _, err := os.Lstat(s.docPath(id)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("something took the quarantined document's place: %v", err)
			}
			if got := storetest.MustRead(t, s.logPath(id)); !bytes.Equal(got, transcript) {
				t.Fatalf("transcript changed")
			}

			// Nothing resets the session: later reads and writes say it is
			// missing rather than start an empty one.
			if _, err := s.Get(id); !errors.Is(err, fsstore.ErrNotFound) {
				t.Errorf("second Get: %v, want fsstore.ErrNotFound", err)
			}
			if _, err := s.Append(id, []Message{textMsg("user", "three")}); !errors.Is(err, fsstore.ErrNotFound) {
				t.Errorf("Append after quarantine: %v, want fsstore.ErrNotFound", err)
			}
			if _, err := os.Lstat(s.docPath(id)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a document was made after the quarantine: %v", err)
			}
			if got := storetest.MustRead(t, s.logPath(id)); !bytes.Equal(got, transcript) {
				t.Fatalf("transcript changed after the quarantine")
			}
			if got := storetest.MustRead(t, aside); !bytes.Equal(got, c.doc) {
				t.Fatalf("quarantined copy changed")
			}
		})
	}
}

// TestCorruptDocumentSkippedByList: a listing reports an unreadable
// document, quarantines it, and lists its session marked Damaged (its
// transcript is there), with the others.
func TestCorruptDocumentSkippedByList(t *testing.T) {
	s, clock, w := newTestStore(t)
	a := mustCreate(t, s, "a")
	clock.Advance(1e9)
	b := mustCreate(t, s, "b")
	storetest.MustWrite(t, s.docPath(b), []byte("{broken"))
	list, err := s.List(ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != b || list[0].Damaged == "" || list[1].ID != a || list[1].Damaged != "" {
		t.Fatalf("List = %+v, want %s marked damaged, then %s", list, b, a)
	}
	if got, err := s.Inspect(b); err != nil || got.Damaged == "" {
		t.Fatalf("Inspect(%s) = %+v, %v; want it marked damaged", b, got, err)
	}
	if _, err := s.Get(b); !errors.Is(err, fsstore.ErrNotFound) || !strings.Contains(err.Error(), "fsck --repair") {
		t.Fatalf("Get(%s) = %v; want not found, naming the repair", b, err)
	}
	if ws := w.List(); len(ws) != 1 || !strings.Contains(ws[0], s.docPath(b)) {
		t.Fatalf("warnings %q, want one naming %s", ws, s.docPath(b))
	}
	if _, err := os.Stat(fmt.Sprintf("%s.corrupt-%d", s.docPath(b), clock.Now().Unix())); err != nil {
		t.Fatal(err)
	}
}

// TestCheckFindsDocumentsThatAreNotDocuments: fsck calls "null" and "{}"
// unreadable, like a document that does not parse, and its repair
// quarantines them rather than rewriting them as empty sessions.
func TestCheckFindsDocumentsThatAreNotDocuments(t *testing.T) {
	for _, doc := range []string{"null", "{}"} {
		s, clock, _ := newTestStore(t)
		id := mustCreate(t, s, "s1")
		storetest.MustWrite(t, s.docPath(id), []byte(doc))
		findings, err := s.Check(false, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if f := findingFor(findings, s.docPath(id)); f == nil || !f.Problem || f.Repaired {
			t.Fatalf("%s: Check found %+v, want an unrepaired problem with %s", doc, findings, s.docPath(id))
		}
		findings, err = s.Check(true, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if f := findingFor(findings, s.docPath(id)); f == nil || !f.Repaired {
			t.Fatalf("%s: Check --repair found %+v, want %s repaired", doc, findings, s.docPath(id))
		}
		if got := storetest.MustRead(t, fmt.Sprintf("%s.corrupt-%d", s.docPath(id), clock.Now().Unix())); string(got) != doc {
			t.Fatalf("%s: quarantined copy holds %q", doc, got)
		}
	}
}

func findingFor(findings []fsstore.Finding, path string) *fsstore.Finding {
	for i := range findings {
		if findings[i].Path == path {
			return &findings[i]
		}
	}
	return nil
}
