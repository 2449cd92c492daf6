package fsstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes/hermes/fsstore/internal/storetest"
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

// TestLockOnReadOnlySidecar: a lock file that cannot be opened for
// writing (a read-only copy of a profile) is locked through a read-only
// descriptor, without a record: the lock holds against another holder,
// names no one, fences nothing, and its file stays empty.
func TestLockOnReadOnlySidecar(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.lock")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var writes int
	storetest.SetOpenLock(t, func(path string, flag int) (int, error) {
		if flag&unix.O_ACCMODE != unix.O_RDONLY {
			writes++
			return -1, syscall.EROFS
		}
		return unix.Open(path, flag, 0)
	})
	unlock, err := Lock(path, time.Second)
	if err != nil {
		t.Fatalf("Lock of a read-only lock file: %v", err)
	}
	if writes == 0 {
		t.Fatal("Lock did not try to open its file for writing")
	}
	if _, err := Lock(path, 0); !errors.As(err, new(*LockTimeoutError)) {
		t.Fatalf("a second Lock while it is held: %v, want a *LockTimeoutError", err)
	}
	if h := holderOf(path); h != "" {
		t.Errorf("holder named %q, want none", h)
	}
	if err := CheckHeld(filepath.Join(filepath.Dir(path), "s.json")); err != nil {
		t.Errorf("CheckHeld under an unrecorded lock: %v", err)
	}
	unlock()
	u, err := Lock(path, 0)
	if err != nil {
		t.Fatalf("Lock after the holder let go: %v", err)
	}
	u()
}

// TestHolderRecordIsJSON: the record a holder writes, put together from
// a start encoded once a process, is a holderRecord's JSON, byte for
// byte, naming this process, with a token of its own each time.
func TestHolderRecordIsJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.lock")
	var tokens []string
	for range 2 {
		unlock, err := Lock(path, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		line, err := os.ReadFile(path)
		unlock()
		if err != nil {
			t.Fatal(err)
		}
		var rec holderRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("record %q: %v", line, err)
		}
		want, _ := json.Marshal(rec)
		if string(line) != string(want)+"\n" {
			t.Errorf("record %q, want %q", line, want)
		}
		if rec.Host != ThisHost() || rec.PID != os.Getpid() || len(rec.Token) != 24 {
			t.Errorf("record %+v does not name this process", rec)
		}
		tokens = append(tokens, rec.Token)
	}
	if tokens[0] == tokens[1] {
		t.Errorf("two holdings share the token %s", tokens[0])
	}
}

// TestLockLogNamesNoHolder: a lock taken for one append to a log writes
// no record, so that a wait on it names the lock alone, and holds
// against Lock like any other.
func TestLockLogNamesNoHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.lock")
	unlock, err := LockLogUntil(path, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Errorf("lock file while held: %v, %v; want empty", fi, err)
	}
	var timeout *LockTimeoutError
	if _, err := Lock(path, 0); !errors.As(err, &timeout) || timeout.Holder != "" {
		t.Errorf("Lock while it is held: %v, want a timeout naming no holder", err)
	}
	unlock()
	u, err := Lock(path, 0)
	if err != nil {
		t.Fatalf("Lock once it is let go: %v", err)
	}
	u()
}
