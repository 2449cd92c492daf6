package sessions

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes/hermes/fsstore"
)

// TestCheckLocks: a session's lock file that outlives its session (a
// writer that waited on the session as it was deleted makes it again) is
// reported, as a note: it holds no record. --repair removes it when no
// one holds it, never one that is held, nor the lock of a session that
// is there, nor the store's own locks.
func TestCheckLocks(t *testing.T) {
	s, _, _ := newTestStore(t)
	live := mustCreate(t, s, "live")
	gone := mustCreate(t, s, "gone")
	if _, err := s.End(gone, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(gone, false); err != nil {
		t.Fatal(err)
	}
	// The waiter's lock file, made again after the delete.
	unlock, err := fsstore.Lock(s.lockPath(gone), s.LockTimeout)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if _, err := os.Lstat(s.lockPath(live)); err != nil {
		t.Fatalf("the live session's lock: %v", err)
	}

	check := func(repair bool) []fsstore.Finding {
		t.Helper()
		findings, err := s.CheckLocks(repair)
		if err != nil {
			t.Fatal(err)
		}
		if len(findings) != 1 || findings[0].Path != s.lockPath(gone) || findings[0].Problem {
			t.Fatalf("findings %+v, want one note about %s", findings, s.lockPath(gone))
		}
		return findings
	}
	exists := func(path string) bool { _, err := os.Lstat(path); return err == nil }

	if f := check(false)[0]; f.Repaired || !strings.Contains(f.What, "lock file of no session") || !exists(s.lockPath(gone)) {
		t.Fatalf("without --repair: %+v", f)
	}

	// Held: left as it is.
	unlock, err = fsstore.Lock(s.lockPath(gone), s.LockTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if f := check(true)[0]; f.Repaired || !strings.Contains(f.What, "held") || !exists(s.lockPath(gone)) {
		t.Fatalf("held, with --repair: %+v", f)
	}
	unlock()

	if f := check(true)[0]; !f.Repaired || exists(s.lockPath(gone)) {
		t.Fatalf("with --repair: %+v", f)
	}
	if findings, err := s.CheckLocks(true); err != nil || len(findings) != 0 {
		t.Fatalf("after the repair: %+v, %v", findings, err)
	}
	for _, path := range []string{s.lockPath(live), filepath.Join(s.Dir, catalogLockName)} {
		if !exists(path) {
			t.Errorf("%s was removed", path)
		}
	}
}
