package fsstore_test

import (
	"os"
	"path/filepath"
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
