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
