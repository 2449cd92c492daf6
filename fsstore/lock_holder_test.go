package fsstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLockTimeoutNamesHolder: a holder records its host and pid in the
// lock's file while it holds the lock, and a wait that times out names
// them, so that a lock held by a host that is cut off is told by name;
// let go, the file is empty.
func TestLockTimeoutNamesHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.lock")
	unlock, err := Lock(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Lock(path, 0)
	var timeout *LockTimeoutError
	if !errors.As(err, &timeout) {
		t.Fatalf("Lock of a held lock = %v, want a *LockTimeoutError", err)
	}
	want := fmt.Sprintf("held by pid %d on host %s at ", os.Getpid(), ThisHost())
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %q does not name the lock and its holder (%q)", err, want)
	}
	unlock()
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("lock file after its holder let go: %v, %v; want empty", fi, err)
	}
}

// TestLockTimeoutWithoutRecord: a lock file with no record (made before
// holders were recorded, or held by another program) times out as before,
// naming the lock only.
func TestLockTimeoutWithoutRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.lock")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := (&LockTimeoutError{Path: path, Timeout: "1s", Holder: holderOf(path)}).Error()
	if want := "timed out after 1s waiting for lock " + path; err != want {
		t.Fatalf("error %q, want %q", err, want)
	}
}
