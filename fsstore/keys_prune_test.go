package fsstore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSweepKeys: a sweep of a key directory removes the records written
// more than KeyLifetime ago, with their locks, and a lock left without
// its record; it leaves a record written since, one whose lock is held,
// and the temp files fsck answers for; it sweeps at most once a day.
func TestSweepKeys(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-KeyLifetime - time.Hour)
	for _, name := range []string{"a", "a.lock", "c.comment.json", "c.comment.json.lock", "d", "d.lock", "e.lock", ".f.tmp-1", "b", "b.lock"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if name != "b" && name != "b.lock" {
			if err := os.Chtimes(path, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	unlock, err := Lock(filepath.Join(dir, "d.lock"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()

	SweepKeys(dir)
	for name, want := range map[string]bool{"a": false, "a.lock": false, "c.comment.json": false, "c.comment.json.lock": false,
		"e.lock": false, "d": true, "d.lock": true, ".f.tmp-1": true, "b": true, "b.lock": true, ".swept": true} {
		_, err := os.Lstat(filepath.Join(dir, name))
		if got := err == nil; got != want {
			t.Errorf("%s after a sweep: there %v, want %v (%v)", name, got, want, err)
		}
	}

	// Within a day of the last sweep, none.
	b := filepath.Join(dir, "b")
	if err := os.Chtimes(b, old, old); err != nil {
		t.Fatal(err)
	}
	SweepKeys(dir)
	if _, err := os.Lstat(b); err != nil {
		t.Fatalf("a record swept within a day of the last sweep: %v", err)
	}
	// A day later, the next.
	swept := time.Now().Add(-25 * time.Hour)
	if err := os.Chtimes(filepath.Join(dir, ".swept"), swept, swept); err != nil {
		t.Fatal(err)
	}
	SweepKeys(dir)
	if _, err := os.Lstat(b); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an old record a day after the last sweep: %v; want it removed", err)
	}
}

// TestSweepKeysMissing: a key directory not made yet is no error and
// gains nothing.
func TestSweepKeysMissing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	SweepKeys(dir)
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a sweep of a missing directory made it: %v", err)
	}
}
