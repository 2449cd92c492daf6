// Package storetest holds what the tests of the storage engine and of its
// record stores share: a settable clock, a collector of warnings, the
// fault-injection switch of the write recipes, the hostile ids every store
// must refuse, and small file helpers. Only tests import it.
package storetest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/internal/seam"
)

// Epoch is the time a test clock starts at.
var Epoch = time.Date(2026, 11, 21, 2, 7, 34, 123456000, time.UTC)

// Clock is a settable clock: the names of the copies that recovery keeps
// aside (.torn-<unix>, .corrupt-<unix>, .replaced-<unix>) follow it.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock at Epoch.
func NewClock() *Clock { return &Clock{now: Epoch} }

// Now is the clock's time; a store's Now field takes it.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d and returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// Uptime is the clock as a monotonic clock (fsstore.Uptime): the time
// since Epoch. A store's sightings (hosts.Seen) take it, so that one
// Advance moves the wall and the monotonic clock of a test's host alike.
func (c *Clock) Uptime() time.Duration { return c.Now().Sub(Epoch) }

// Sleep advances the clock by d instead of waiting: a store's Sleep field
// takes it, so a bounded wait costs a test no time.
func (c *Clock) Sleep(d time.Duration) { c.Advance(d) }

// Warnings collects what a store reports through its Warn field.
type Warnings struct {
	mu   sync.Mutex
	msgs []string
}

// Add is the Warn function.
func (w *Warnings) Add(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

// List returns the warnings so far.
func (w *Warnings) List() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

// Reset forgets the warnings so far.
func (w *Warnings) Reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = nil
}

// ErrInjected is the error of an injected fault.
var ErrInjected = errors.New("injected fault")

// TestDir is the directory that holds every t.TempDir of the test t
// (not those of its subtests, which have their own): the files the Set
// functions' faults apply to.
func TestDir(t testing.TB) string {
	t.Helper()
	return filepath.Dir(t.TempDir())
}

// SetSeams replaces, for the rest of the test and for its own files
// (TestDir), the steps of the write recipes that are not nil: the temp
// file's creation, the rename, the sync. Other tests' files keep theirs,
// so such a test may run in parallel (seam.Install).
func SetSeams(t testing.TB, create func(string, string) (*os.File, error), rename func(string, string) error, sync func(*os.File) error) {
	t.Helper()
	seam.Install(t, TestDir(t), seam.Faults{CreateTemp: create, Rename: rename, Sync: sync})
}

// SetWrite replaces, for the rest of the test and for its own files, the
// write of one record to a log.
func SetWrite(t testing.TB, write func(*os.File, []byte) (int, error)) {
	t.Helper()
	seam.Install(t, TestDir(t), seam.Faults{Write: write})
}

// SetMkdir replaces, for the rest of the test and for its own files, the
// making of one directory.
func SetMkdir(t testing.TB, mkdir func(string, os.FileMode) error) {
	t.Helper()
	seam.Install(t, TestDir(t), seam.Faults{Mkdir: mkdir})
}

// SetCreateLock replaces, for the rest of the test and for its own files,
// the creation of a missing lock sidecar.
func SetCreateLock(t testing.TB, create func(string) (*os.File, error)) {
	t.Helper()
	seam.Install(t, TestDir(t), seam.Faults{CreateLock: create})
}

// SetOpenLock replaces, for the rest of the test and for its own files,
// the open of a lock sidecar.
func SetOpenLock(t testing.TB, open func(path string, flag int) (int, error)) {
	t.Helper()
	seam.Install(t, TestDir(t), seam.Faults{OpenLock: open})
}

// SetOpenRead replaces, for the rest of the test and for its own files,
// the open of a file that a scan reads.
func SetOpenRead(t testing.TB, open func(dirfd int, name string) (int, error)) {
	t.Helper()
	seam.Install(t, TestDir(t), seam.Faults{OpenRead: open})
}

// SetReadFile replaces, for the rest of the test and for its own files,
// the read of a whole document.
func SetReadFile(t testing.TB, read func(string) ([]byte, error)) {
	t.Helper()
	seam.Install(t, TestDir(t), seam.Faults{ReadFile: read})
}

// MustRead is os.ReadFile, failing the test on error.
func MustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// MustWrite is os.WriteFile with mode 0600, failing the test on error.
func MustWrite(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// DirNames lists the names in dir, sorted.
func DirNames(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// LineOffsets returns the offset at which each line of b starts.
func LineOffsets(b []byte) []int {
	var offs []int
	for off := 0; off < len(b); {
		offs = append(offs, off)
		i := bytes.IndexByte(b[off:], '\n')
		if i < 0 {
			break
		}
		off += i + 1
	}
	return offs
}

// ContainsAll reports whether s contains every one of subs.
func ContainsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// The environment of a helper process: the test binary run again by a test
// (the pattern of Go's lockedfile tests), so that locks are proved across
// processes, not only across goroutines. The helper's role and arguments
// come in these variables.
const (
	HelperRoleEnv = "FSSTORE_TEST_HELPER"
	HelperDirEnv  = "FSSTORE_TEST_DIR"
	HelperIDEnv   = "FSSTORE_TEST_ID"
	HelperTagEnv  = "FSSTORE_TEST_TAG"
	HelperNEnv    = "FSSTORE_TEST_N"
	HelperLockEnv = "FSSTORE_TEST_LOCK"
)

// HelperCommand returns a command that runs the test named test of this
// test binary as a helper process, with env added to the environment.
func HelperCommand(t testing.TB, test string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v=false")
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// SetTruncate replaces, for the rest of the test and for its own files,
// the cut of a log back to its size before a failed append.
func SetTruncate(t testing.TB, truncate func(*os.File, int64) error) {
	t.Helper()
	seam.Install(t, TestDir(t), seam.Faults{Truncate: truncate})
}
