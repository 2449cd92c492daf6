package sessions

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// TestAppendSyncFailureLeavesSessionAsItWas: a session append whose
// transcript sync fails returns the error and leaves the transcript and the
// document as they were; the next append numbers on from the stored ones.
func TestAppendSyncFailureLeavesSessionAsItWas(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "s1")
	mustAppend(t, s, id, textMsg("user", "one"), textMsg("assistant", "two"))
	log, doc := storetest.MustRead(t, s.logPath(id)), storetest.MustRead(t, s.docPath(id))
	storetest.SetSeams(t, nil, nil, func(f *os.File) error {
		if f.Name() == s.logPath(id) {
			return storetest.ErrInjected
		}
		return f.Sync()
	})
	if _, err := s.Append(id, []Message{textMsg("user", "lost")}); !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("Append = %v, want the injected error", err)
	}
	if !bytes.Equal(storetest.MustRead(t, s.logPath(id)), log) || !bytes.Equal(storetest.MustRead(t, s.docPath(id)), doc) {
		t.Fatal("a failed append changed the session")
	}
	storetest.SetSeams(t, nil, nil, func(f *os.File) error { return f.Sync() })
	if n, err := s.Append(id, []Message{textMsg("user", "three")}); err != nil || n != 3 {
		t.Fatalf("Append after the failure = %d, %v; want 3", n, err)
	}
}

// TestDocumentWriteFailureKeepsOldDocument: a document rewrite that fails
// at the rename leaves the previous document readable and no temp file.
func TestDocumentWriteFailureKeepsOldDocument(t *testing.T) {
	t.Parallel()
	s, _, _ := newTestStore(t)
	id := mustCreate(t, s, "s1")
	doc := storetest.MustRead(t, s.docPath(id))
	storetest.SetSeams(t, nil, func(string, string) error { return storetest.ErrInjected }, nil)
	if _, err := s.Rename(id, "new title"); !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("Rename = %v, want the injected error", err)
	}
	if !bytes.Equal(storetest.MustRead(t, s.docPath(id)), doc) {
		t.Fatal("a failed rewrite changed the document")
	}
	for _, name := range storetest.DirNames(t, s.Dir) {
		if strings.Contains(name, ".tmp-") {
			t.Fatalf("temp file %s left behind", name)
		}
	}
}

// A whole-transcript write (import, save --force) is stored whole or not
// at all: a failure at any step after the checks, the transcript's
// replacement or the document after it included, leaves the transcript
// and the document as they were and no copy kept aside.
func TestForcedSaveFailureLeavesSessionAsItWas(t *testing.T) {
	t.Parallel()
	for _, step := range []string{".s1.jsonl.replaced-", ".s1.jsonl.tmp-", ".s1.json.tmp-"} {
		t.Run(step, func(t *testing.T) {
			s, _, _ := newTestStore(t)
			id := mustCreate(t, s, "s1")
			mustAppend(t, s, id, textMsg("user", "one"), textMsg("assistant", "two"))
			log, doc := storetest.MustRead(t, s.logPath(id)), storetest.MustRead(t, s.docPath(id))
			storetest.SetSeams(t, func(dir, pattern string) (*os.File, error) {
				if strings.HasPrefix(pattern, step) {
					return nil, storetest.ErrInjected
				}
				return os.CreateTemp(dir, pattern)
			}, nil, nil)
			if _, err := s.Save(id, []Message{textMsg("user", "else")}, true); !errors.Is(err, storetest.ErrInjected) {
				t.Fatalf("Save --force = %v, want the injected error", err)
			}
			if !bytes.Equal(storetest.MustRead(t, s.logPath(id)), log) || !bytes.Equal(storetest.MustRead(t, s.docPath(id)), doc) {
				t.Fatalf("a failed forced save changed the session:\n%s", storetest.MustRead(t, s.logPath(id)))
			}
			for _, name := range storetest.DirNames(t, s.Dir) {
				if strings.Contains(name, ".replaced-") || strings.Contains(name, ".tmp-") {
					t.Fatalf("%s left behind", name)
				}
			}
		})
	}
}

// An import of a new session is stored whole or not at all: a failure at
// any step leaves no session, no transcript.
func TestCreateWithFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	for _, step := range []string{"transcript", "catalog", "document"} {
		t.Run(step, func(t *testing.T) {
			s, _, _ := newTestStore(t)
			mustCreate(t, s, "before")
			storetest.SetWrite(t, func(f *os.File, b []byte) (int, error) {
				if step == "transcript" && strings.HasSuffix(f.Name(), "imp.jsonl") || step == "catalog" && strings.HasSuffix(f.Name(), catalogName) {
					return 0, storetest.ErrInjected
				}
				return f.Write(b)
			})
			storetest.SetSeams(t, func(dir, pattern string) (*os.File, error) {
				if step == "document" && strings.HasPrefix(pattern, ".imp.json.tmp-") {
					return nil, storetest.ErrInjected
				}
				return os.CreateTemp(dir, pattern)
			}, nil, nil)
			_, _, err := s.CreateWith(Session{ID: "imp", Title: "imported"}, []Message{textMsg("user", "one"), textMsg("assistant", "two")})
			if !errors.Is(err, storetest.ErrInjected) {
				t.Fatalf("CreateWith = %v, want the injected error", err)
			}
			for _, p := range []string{s.logPath("imp"), s.docPath("imp")} {
				if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a failed import left %s", p)
				}
			}
			if list, err := s.List(ListOptions{}); err != nil || len(list) != 1 {
				t.Errorf("sessions after a failed import: %+v, %v", list, err)
			}
		})
	}
}
