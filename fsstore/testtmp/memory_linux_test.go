package testtmp

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSweep: a directory whose binary holds its lock is kept, one whose
// lock is free is removed, one without a lock file is kept while young
// and removed when old.
func TestSweep(t *testing.T) {
	base := t.TempDir()
	running := filepath.Join(base, "running")
	ended := filepath.Join(base, "ended")
	young := filepath.Join(base, "young")
	old := filepath.Join(base, "old")
	for _, d := range []string{running, ended, young, old} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	held, err := hold(running)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	gone, err := hold(ended)
	if err != nil {
		t.Fatal(err)
	}
	gone.Close()
	long := time.Now().Add(-2 * orphanAge)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}

	sweep(base)

	for dir, want := range map[string]bool{running: true, ended: false, young: true, old: false} {
		_, err := os.Stat(dir)
		if got := err == nil; got != want {
			t.Errorf("%s kept: %v, want %v (%v)", filepath.Base(dir), got, want, err)
		}
	}
}

// TestHoldLeavesNoOtherFile: the lock file is renamed into place, its
// temporary name gone.
func TestHoldLeavesNoOtherFile(t *testing.T) {
	dir := t.TempDir()
	f, err := hold(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != heldName {
		t.Fatalf("entries %v, want only %s", entries, heldName)
	}
	if free(dir) {
		t.Fatal("a held directory was free")
	}
}
