package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// fsck gives the collector half its default headroom only on a profile
// whose activity catalog is large (fsckHalfHeadroomFrom): the whole check
// of a small one allocates less than the collector's first goal, and the
// halved goal cost it a collection of its own, a fifth of fsck's
// processor time on a profile of a few sessions.
func TestFsckCollectorHeadroom(t *testing.T) {
	chatEnv(t)
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	home := t.TempDir()
	mustRun(t, home, "", "sessions", "new", "--title", "small")
	mustRun(t, home, "", "fsck")
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("fsck of one session set GOGC=%d, want the default kept (100)", got)
	}

	// The same session written to often enough that its lines pass the
	// size: a catalog fsck finds clean.
	catalog := filepath.Join(home, "profiles", "default", "sessions", ".catalog.jsonl")
	b, err := os.ReadFile(catalog)
	if err != nil {
		t.Fatal(err)
	}
	// The catalog's name, then the session's line.
	name, line, _ := bytes.Cut(b, []byte("\n"))
	n := fsckHalfHeadroomFrom/int64(len(line)) + 1
	if err := os.WriteFile(catalog, append(append(name, '\n'), bytes.Repeat(line, int(n))...), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, home, "", "fsck")
	if got := debug.SetGCPercent(100); got != 50 {
		t.Errorf("fsck of a catalog of %d bytes set GOGC=%d, want 50", n*int64(len(line)), got)
	}
}
