package fsstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// TestEnsureDirNeverMade: a mkdir that says the directory exists when no
// lookup ever finds it fails once dirVisibleWithin has passed, naming the
// directory: it does not wait for ever.
func TestEnsureDirNeverMade(t *testing.T) {
	within := dirVisibleWithin
	t.Cleanup(func() { dirVisibleWithin = within })
	storetest.SetMkdir(t, func(string, os.FileMode) error { return os.ErrExist })
	dirVisibleWithin = 50 * time.Millisecond
	dir := filepath.Join(t.TempDir(), "ghost")
	err := EnsureDir(dir)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("EnsureDir: %v, want not exist naming %s", err, dir)
	}
}

// TestEnsureDirParentNotSeenYet: a mkdir in a parent another host has just
// made can fail with ENOENT, or ESTALE, for some milliseconds; EnsureDir
// tries again until it succeeds.
func TestEnsureDirParentNotSeenYet(t *testing.T) {
	t.Parallel()
	for _, transient := range []error{os.ErrNotExist, syscall.ESTALE} {
		dir := filepath.Join(t.TempDir(), "profiles", "default")
		failures := 3
		storetest.SetMkdir(t, func(d string, mode os.FileMode) error {
			if d == dir && failures > 0 {
				failures--
				return &os.PathError{Op: "mkdir", Path: d, Err: transient}
			}
			return os.Mkdir(d, mode)
		})
		if err := EnsureDir(dir); err != nil {
			t.Fatalf("%v: %v", transient, err)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Fatalf("%v: %s: %v", transient, dir, err)
		}
	}
}
