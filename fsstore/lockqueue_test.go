package fsstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes/hermes/fsstore"
)

// TestWaitForAnotherHolder: a lock held through a descriptor of its own,
// as another process holds it, is waited for in the kernel, behind the
// process's queue: the first taker waits until the holder lets go, then
// the next in the queue; a wait past its timeout, or called off, ends
// with the holder still holding the lock.
func TestWaitForAnotherHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	other, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(other)
	if err := unix.Flock(other, unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	var timeout *fsstore.LockTimeoutError
	if _, err := fsstore.Lock(path, 20*time.Millisecond); !errors.As(err, &timeout) {
		t.Fatalf("a wait past its timeout: %v", err)
	}
	done := make(chan struct{})
	close(done)
	var interrupted *fsstore.LockInterruptedError
	if _, err := fsstore.LockUntil(path, time.Minute, done); !errors.As(err, &interrupted) {
		t.Fatalf("a wait called off: %v", err)
	}
	got := make(chan error, 2)
	for range 2 {
		go func() {
			u, err := fsstore.Lock(path, time.Minute)
			if err == nil {
				u()
			}
			got <- err
		}()
	}
	time.Sleep(20 * time.Millisecond) // let them wait (the test holds whatever the order)
	if err := unix.Flock(other, unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-got; err != nil {
			t.Fatalf("a waiter: %v", err)
		}
	}
}
