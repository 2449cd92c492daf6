package fsstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/storetest"
	"github.com/hermes/hermes/fsstore/sessions"
)

// A reader of a profile whose lock files are missing and cannot be made
// (a read-only copy) reads without the lock; a writer there fails naming
// the lock. The lock file's creation fails through the seam, which works
// whoever runs the test: as root, a chmod of the directory would not stop
// the creation (the root test suite's TestReadOnlyProfile uses a read-only
// bind mount for the same path end to end).
func TestRLockOnReadOnlyStore(t *testing.T) {
	profile := filepath.Join(t.TempDir(), "profiles", "default")
	store := sessions.NewStore(profile, "default", time.Second, func(string) {})
	if _, _, err := store.Create(sessions.Session{ID: "s1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append("s1", []sessions.Message{{Role: "user", Content: sessions.TextContent("kept")}}); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(store.Dir, "s1.lock")
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	for _, errno := range []syscall.Errno{syscall.EROFS, syscall.EACCES} {
		storetest.SetCreateLock(t, func(path string) (*os.File, error) {
			return nil, &os.PathError{Op: "open", Path: path, Err: errno}
		})
		unlock, err := fsstore.RLock(lock, time.Second)
		if err != nil {
			t.Fatalf("%v: RLock: %v, want a reader without the lock", errno, err)
		}
		unlock()
		msgs, err := store.Messages("s1")
		if err != nil || len(msgs) != 1 || msgs[0].Text() != "kept" {
			t.Fatalf("%v: Messages: %v, %v", errno, msgs, err)
		}
		if _, err := fsstore.Lock(lock, time.Second); !errors.Is(err, errno) || !strings.Contains(err.Error(), lock) {
			t.Fatalf("%v: Lock: %v, want the error naming the lock", errno, err)
		}
		if _, err := store.Append("s1", []sessions.Message{{Role: "user", Content: sessions.TextContent("no")}}); !errors.Is(err, errno) {
			t.Fatalf("%v: Append: %v, want it to fail", errno, err)
		}
		if _, err := os.Lstat(lock); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%v: a lock file was made: %v", errno, err)
		}
	}
	// Any other failure to make the lock file is an error, for readers too.
	storetest.SetCreateLock(t, func(path string) (*os.File, error) {
		return nil, &os.PathError{Op: "open", Path: path, Err: syscall.EIO}
	})
	if _, err := fsstore.RLock(lock, time.Second); !errors.Is(err, syscall.EIO) {
		t.Fatalf("RLock with EIO: %v", err)
	}
}
