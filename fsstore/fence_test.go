package fsstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// The tests in this file break a writer's lock under it, as a network
// filesystem does when its holder is cut off (or paused) past the mount's
// keepalive: the lock file is removed, so that a second writer in the
// same process locks a new file and appends while the first still holds
// the old one and believes it holds the lock.

// appendUnder takes the lock at lock, appends line to the log at path
// and lets the lock go: a writer whose lock is its own.
func appendUnder(t *testing.T, lock, path, line string) {
	t.Helper()
	unlock, err := Lock(lock, time.Second)
	if err != nil {
		t.Fatalf("second writer: %v", err)
	}
	defer unlock()
	f, _, err := OpenAppend(path, storetest.Epoch)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := AppendLines(f, [][]byte{[]byte(line)}); err != nil {
		t.Fatalf("second writer: %v", err)
	}
}

// lockedLog makes the log log.jsonl holding content and opens it to
// append under its lock, log.lock, held until the test ends: a writer
// that has read the log's end and is about to lose its lock.
func lockedLog(t *testing.T, content string) (path, lock string, f *os.File) {
	t.Helper()
	dir := t.TempDir()
	path, lock = filepath.Join(dir, "log.jsonl"), filepath.Join(dir, "log.lock")
	storetest.MustWrite(t, path, []byte(content))
	unlock, err := Lock(lock, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(unlock)
	f, _, err = OpenAppend(path, storetest.Epoch)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return path, lock, f
}

// TestFencedAppendRefused: a writer read the log's end under its lock,
// lost the lock, and another writer appended: its append is refused
// (ErrRefused, naming the log), and nothing of it is stored.
func TestFencedAppendRefused(t *testing.T) {
	path, lock, f := lockedLog(t, "{\"seq\":1}\n{\"seq\":2}\n")
	// The first writer has read the end (seq 2) and is paused; its lock
	// is lost, and the second writer appends seq 3.
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	appendUnder(t, lock, path, "{\"seq\":3,\"by\":\"second\"}\n")
	err := AppendLines(f, [][]byte{[]byte("{\"seq\":3,\"by\":\"first\"}\n")})
	var fenced *FencedError
	if !errors.Is(err, ErrRefused) || !errors.As(err, &fenced) || !strings.Contains(err.Error(), path) {
		t.Fatalf("stale writer's append = %v, want a *FencedError (refused) naming %s", err, path)
	}
	if fenced.Aside != "" {
		t.Errorf("a refused append moved something aside to %s", fenced.Aside)
	}
	want := "{\"seq\":1}\n{\"seq\":2}\n{\"seq\":3,\"by\":\"second\"}\n"
	if got := string(storetest.MustRead(t, path)); got != want {
		t.Fatalf("log holds %q, want %q", got, want)
	}
}

// TestFencedAppendMovedAside: the lock is lost between the check of the
// log's end and the write, so the stale writer's line lands after the
// other writer's: it is moved aside (<log>.fenced-<unix>) and the append
// refused; the log keeps the other writer's line, and the next append
// follows it.
func TestFencedAppendMovedAside(t *testing.T) {
	t.Parallel()
	path, lock, f := lockedLog(t, "{\"seq\":1}\n")
	paused := true
	storetest.SetWrite(t, func(w *os.File, b []byte) (int, error) {
		if paused && w == f {
			paused = false
			if err := os.Remove(lock); err != nil {
				t.Fatal(err)
			}
			appendUnder(t, lock, path, "{\"seq\":2,\"by\":\"second\"}\n")
		}
		return w.Write(b)
	})
	stale := "{\"seq\":2,\"by\":\"first\"}\n"
	err := AppendLines(f, [][]byte{[]byte(stale)})
	var fenced *FencedError
	if !errors.Is(err, ErrRefused) || !errors.As(err, &fenced) || fenced.Aside == "" {
		t.Fatalf("stale writer's append = %v, want a *FencedError with its line moved aside", err)
	}
	if !strings.Contains(err.Error(), fenced.Aside) {
		t.Errorf("error %q does not name the copy %s", err, fenced.Aside)
	}
	if got := string(storetest.MustRead(t, fenced.Aside)); got != stale {
		t.Errorf("%s holds %q, want the stale line %q", fenced.Aside, got, stale)
	}
	want := "{\"seq\":1}\n{\"seq\":2,\"by\":\"second\"}\n"
	if got := string(storetest.MustRead(t, path)); got != want {
		t.Fatalf("log holds %q, want %q", got, want)
	}
	appendUnder(t, lock, path, "{\"seq\":3}\n")
	if got := string(storetest.MustRead(t, path)); got != want+"{\"seq\":3}\n" {
		t.Fatalf("log holds %q after the next append", got)
	}
}

// TestFencedCutBackKeepsOthersLines: an append whose sync fails is cut
// back, but not when another writer appended after it (its lock was
// lost): a cut there would remove the other writer's acknowledged line.
func TestFencedCutBackKeepsOthersLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path, lock := filepath.Join(dir, "log.jsonl"), filepath.Join(dir, "log.lock")
	storetest.MustWrite(t, path, []byte("{\"seq\":1}\n"))
	f, _, err := OpenAppend(path, storetest.Epoch)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	failed := false
	storetest.SetSeams(t, nil, nil, func(s *os.File) error {
		if s == f && !failed {
			failed = true
			appendUnder(t, lock, path, "{\"seq\":3,\"by\":\"second\"}\n")
			return storetest.ErrInjected
		}
		return s.Sync()
	})
	err = AppendLines(f, [][]byte{[]byte("{\"seq\":2}\n")})
	if !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("AppendLines = %v, want the injected error", err)
	}
	want := "{\"seq\":1}\n{\"seq\":2}\n{\"seq\":3,\"by\":\"second\"}\n"
	if got := string(storetest.MustRead(t, path)); got != want {
		t.Fatalf("log holds %q, want %q (the other writer's line kept)", got, want)
	}
}

// TestAppendOutcomeUnknown: an append whose write or sync failed and
// whose lines could not be cut back (the mount died under it) may be
// stored or not: its error is an *UnknownOutcomeError, which says so
// and names the log, and wraps the cause. One whose cut succeeded is an
// ordinary failure: nothing is stored.
func TestAppendOutcomeUnknown(t *testing.T) {
	t.Parallel()
	for _, step := range []string{"write", "sync"} {
		t.Run(step, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log.jsonl")
			storetest.MustWrite(t, path, []byte("{\"seq\":1}\n"))
			f, _, err := OpenAppend(path, storetest.Epoch)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if step == "write" {
				storetest.SetWrite(t, func(w *os.File, b []byte) (int, error) {
					n, _ := w.Write(b[:4])
					return n, storetest.ErrInjected
				})
			} else {
				storetest.SetSeams(t, nil, nil, func(*os.File) error { return storetest.ErrInjected })
			}
			storetest.SetTruncate(t, func(*os.File, int64) error { return errors.New("transport endpoint is not connected") })
			err = AppendLines(f, [][]byte{[]byte("{\"seq\":2}\n")})
			var unknown *UnknownOutcomeError
			if !errors.As(err, &unknown) || !errors.Is(err, storetest.ErrInjected) || !strings.Contains(err.Error(), "outcome unknown") || !strings.Contains(err.Error(), path) {
				t.Fatalf("AppendLines = %v, want an *UnknownOutcomeError naming %s and wrapping the cause", err, path)
			}
		})
	}
}

// TestSplitLanding: a batch whose first lines landed where its writer
// read the log's end, another writer's lines after them, and its other
// lines at the end is split there; lines mixed any other way are not.
func TestSplitLanding(t *testing.T) {
	ours := [][]byte{[]byte("{\"seq\":3,\"a\":1}\n"), []byte("{\"seq\":4,\"a\":2}\n"), []byte("{\"seq\":5,\"a\":3}\n")}
	theirs := []byte("{\"seq\":4,\"b\":1}\n")
	before := []byte("{\"seq\":1}\n{\"seq\":2}\n")
	for _, c := range []struct {
		name string
		log  [][]byte
		j    int
		tail int64
	}{
		{"one stayed", [][]byte{ours[0], theirs, ours[1], ours[2]}, 1, int64(len(ours[1]) + len(ours[2]))},
		{"two stayed", [][]byte{ours[0], ours[1], theirs, ours[2]}, 2, int64(len(ours[2]))},
		{"mixed", [][]byte{ours[0], theirs, ours[1], theirs, ours[2]}, 0, 0},
		{"theirs only after", [][]byte{ours[0], ours[1], ours[2], theirs}, 0, 0},
	} {
		path := filepath.Join(t.TempDir(), "log.jsonl")
		content := append(append([]byte{}, before...), bytes.Join(c.log, nil)...)
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		j, tail := splitLanding(f, int64(len(before)), int64(len(content)), ours, bytes.Join(ours, nil))
		f.Close()
		if j != c.j || tail != c.tail {
			t.Errorf("%s: split at %d, tail %d bytes; want %d, %d", c.name, j, tail, c.j, c.tail)
		}
	}
}

// TestMoveTailAsideAfterItsLockWasLost: a writer whose lock was lost moves
// its own lines out of the log: the copy aside is not a document its lock
// fences (before: refused as a write under a lost lock, and the lines
// stayed in the log; scripts/multihost.sh's paused step).
func TestMoveTailAsideAfterItsLockWasLost(t *testing.T) {
	dir := t.TempDir()
	log, lock := filepath.Join(dir, "s1.jsonl"), filepath.Join(dir, "s1.lock")
	if err := os.WriteFile(log, []byte("{\"seq\":1}\n{\"seq\":2}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	unlock, err := Lock(lock, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(log, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	aside, err := MoveTailAside(f, int64(len("{\"seq\":1}\n")), ".fenced-1")
	if err != nil {
		t.Fatalf("MoveTailAside under a lost lock: %v", err)
	}
	if got := string(storetest.MustRead(t, aside)); got != "{\"seq\":2}\n" {
		t.Fatalf("aside holds %q", got)
	}
	if got := string(storetest.MustRead(t, log)); got != "{\"seq\":1}\n" {
		t.Fatalf("log holds %q", got)
	}
}
