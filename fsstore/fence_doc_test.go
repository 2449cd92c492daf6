package fsstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// TestFencedDocumentRefused: a holder that lost its lock (its file
// removed, as a network filesystem drops a cut-off host's locks) while
// another process took the lock and rewrote the document cannot replace
// the document with what it decided on a stale read: its write is refused
// (ErrRefused, a *LockLostError naming the lock), and the other process's
// document stays. A holder whose lock is its own writes.
func TestFencedDocumentRefused(t *testing.T) {
	dir := t.TempDir()
	doc, lock := filepath.Join(dir, "t1.json"), filepath.Join(dir, "t1.lock")
	if err := WriteFileAtomic(doc, []byte("{\"v\":1}\n")); err != nil {
		t.Fatal(err)
	}
	unlock, err := Lock(lock, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(doc, []byte("{\"v\":2}\n")); err != nil {
		t.Fatalf("a holder whose lock is its own: %v", err)
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	cmd := storetest.HelperCommand(t, "TestHelperDocWriter", storetest.HelperRoleEnv+"=doc-writer",
		storetest.HelperLockEnv+"="+lock, storetest.HelperDirEnv+"="+doc)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the other process: %v\n%s", err, out)
	}
	err = WriteFileAtomic(doc, []byte("{\"v\":3,\"stale\":true}\n"))
	var lost *LockLostError
	if !errors.Is(err, ErrRefused) || !errors.As(err, &lost) || !strings.Contains(err.Error(), lock) {
		t.Fatalf("the stale holder's write = %v, want a *LockLostError (refused) naming %s", err, lock)
	}
	if got := string(storetest.MustRead(t, doc)); got != "{\"v\":\"other\"}\n" {
		t.Fatalf("document holds %q, want the other process's", got)
	}
	if names := storetest.DirNames(t, dir); len(names) != 2 {
		t.Errorf("directory holds %q after a refused write, want the document and its lock", names)
	}
	unlock()
	// Let go, the lock is taken again and the write is the holder's.
	unlock, err = Lock(lock, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if err := WriteFileAtomic(doc, []byte("{\"v\":4}\n")); err != nil {
		t.Fatalf("after the lock was taken again: %v", err)
	}
}

// TestHelperDocWriter is the other process of TestFencedDocumentRefused:
// it takes the lock and rewrites the document.
func TestHelperDocWriter(t *testing.T) {
	if os.Getenv(storetest.HelperRoleEnv) != "doc-writer" {
		t.Skip("helper process of TestFencedDocumentRefused, which runs it")
	}
	unlock, err := Lock(os.Getenv(storetest.HelperLockEnv), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if err := WriteFileAtomic(os.Getenv(storetest.HelperDirEnv), []byte("{\"v\":\"other\"}\n")); err != nil {
		t.Fatal(err)
	}
}
