package fsstore_test

import (
	"context"
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
	t.Parallel()
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

// A wait for a lock held by another holder ends when done closes, with an
// error that says so, long before the timeout; the holder keeps the lock,
// and once it is free LockUntil takes it as Lock would. The timeout is far
// beyond the test's deadline, so only done can end the waits.
func TestLockUntilEndsWhenDoneCloses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := fsstore.Lock(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, take := range []struct {
		name string
		f    func(string, time.Duration, <-chan struct{}) (func(), error)
	}{{"LockUntil", fsstore.LockUntil}, {"RLockUntil", fsstore.RLockUntil}} {
		done := make(chan struct{})
		got := make(chan error, 1)
		go func() {
			u, err := take.f(path, time.Hour, done)
			if err == nil {
				u()
			}
			got <- err
		}()
		close(done)
		select {
		case err := <-got:
			var interrupted *fsstore.LockInterruptedError
			if !errors.As(err, &interrupted) || interrupted.Path != path || !errors.Is(err, context.Canceled) {
				t.Fatalf("%s: %v, want a *LockInterruptedError for %s that is context.Canceled", take.name, err, path)
			}
			if !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), path) {
				t.Fatalf("%s: message %q", take.name, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s still waits after done closed", take.name)
		}
	}
	var timeout *fsstore.LockTimeoutError
	if _, err := fsstore.Lock(path, 0); !errors.As(err, &timeout) {
		t.Fatalf("after the interrupted waits, Lock: %v, want the holder still holding it", err)
	}
	unlock()
	u, err := fsstore.LockUntil(path, time.Hour, make(chan struct{}))
	if err != nil {
		t.Fatalf("LockUntil on a free lock: %v", err)
	}
	u()
}

// TestUnlockTwice: an unlock called a second time (a deferred unlock after
// an explicit one) does nothing: it neither waits for the lock's turn in
// the process again nor closes a descriptor that another file now has.
func TestUnlockTwice(t *testing.T) {
	dir := t.TempDir()
	for _, take := range []struct {
		name string
		lock func(string, time.Duration) (func(), error)
	}{{"exclusive", fsstore.Lock}, {"log", func(p string, d time.Duration) (func(), error) {
		return fsstore.LockLogUntil(p, d, nil)
	}}, {"shared", fsstore.RLock}} {
		path := filepath.Join(dir, take.name+".lock")
		unlock, err := take.lock(path, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		unlock()
		other, err := os.Create(filepath.Join(dir, take.name+".other"))
		if err != nil {
			t.Fatal(err)
		}
		twice := make(chan struct{})
		go func() {
			unlock()
			close(twice)
		}()
		select {
		case <-twice:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: a second unlock still waits after 10s", take.name)
		}
		if _, err := other.WriteString("still mine"); err != nil {
			t.Fatalf("%s: a second unlock closed another file's descriptor: %v", take.name, err)
		}
		other.Close()
		again, err := take.lock(path, time.Second)
		if err != nil {
			t.Fatalf("%s: the lock after a second unlock: %v", take.name, err)
		}
		again()
	}
}
