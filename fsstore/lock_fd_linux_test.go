package fsstore_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// descriptorsOn counts this process's descriptors open on the file at
// path (/proc/self/fd, Linux).
func descriptorsOn(t *testing.T, path string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd: ", err)
	}
	n := 0
	for _, fd := range fds {
		if to, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && to == path {
			n++
		}
	}
	return n
}

// TestLockHoldsOneDescriptor: a held lock is one descriptor on its file,
// the one its holder record is written through, and none once let go; an
// exclusive lock opened a second one to write the record, open and
// closed again at each lock.
func TestLockHoldsOneDescriptor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	for _, take := range []struct {
		name string
		f    func(string, time.Duration) (func(), error)
	}{{"Lock", fsstore.Lock}, {"RLock", fsstore.RLock}} {
		unlock, err := take.f(path, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if n := descriptorsOn(t, path); n != 1 {
			t.Errorf("%s held: %d descriptors on its file, want 1", take.name, n)
		}
		unlock()
		if n := descriptorsOn(t, path); n != 0 {
			t.Errorf("%s let go: %d descriptors on its file, want 0", take.name, n)
		}
	}
}

// kernelWaits counts this process's threads waiting in the kernel for a
// file lock (their wchan, Linux).
func kernelWaits(t *testing.T) int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skip("no /proc/self/task: ", err)
	}
	n := 0
	for _, task := range tasks {
		w, err := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "wchan"))
		if err == nil && strings.Contains(string(w), "lock") && strings.Contains(string(w), "wait") {
			n++
		}
	}
	return n
}

// TestLockWaitersQueueInProcess: takers of a lock that another goroutine
// of the process holds wait in the process, each in turn, not each on a
// thread blocked in flock(2), where the kernel wakes one that the next try
// of a newcomer may beat. They are watched for a while as they wait (a
// window, not a timed assertion: a waiter that has not yet reached its
// wait is not counted either way), then all get the lock once the holder
// lets go.
func TestLockWaitersQueueInProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := fsstore.Lock(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	const waiters = 8
	var started, done sync.WaitGroup
	started.Add(waiters)
	done.Add(waiters)
	for range waiters {
		go func() {
			defer done.Done()
			started.Done()
			u, err := fsstore.Lock(path, time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			u()
		}()
	}
	started.Wait()
	most := 0
	for range 30 {
		most = max(most, kernelWaits(t))
		time.Sleep(10 * time.Millisecond)
	}
	unlock()
	done.Wait()
	if most != 0 {
		t.Errorf("%d threads waited in the kernel for a lock held in the process, want 0", most)
	}
}
