package fsstore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hermes/hermes/fsstore/internal/seam"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// fakeFSType makes, for the rest of the test, every statfs that succeeds
// say the filesystem is of type *fsType.
func fakeFSType(t *testing.T, fsType *uint32) {
	seam.Install(t, storetest.TestDir(t), seam.Faults{FSType: func(path string) (uint32, error) {
		var st unix.Statfs_t
		if err := unix.Statfs(path, &st); err != nil {
			return 0, err
		}
		return *fsType, nil
	}})
}

// A profile on a network filesystem is reported once: the marker
// remembers the type, and a new type is reported again. A local one, or a
// profile not made yet, is never reported and nothing is written.
func TestNetFSOnce(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "profiles", "default")
	if err := EnsureDir(dir); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, NetFSMarker)
	fsType := uint32(0xEF53)
	fakeFSType(t, &fsType)
	if fs, ok := NetFSOnce(dir); ok {
		t.Fatalf("a local filesystem reported as %q", fs.Type)
	}
	if _, err := os.Lstat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a local profile has a marker: %v", err)
	}

	fsType = 0x65735546
	if _, ok := NetFSOnce(filepath.Join(filepath.Dir(dir), "not-made")); ok {
		t.Fatal("a profile not made yet reported")
	}
	for i, want := range []string{"fuse", "", "", "nfs", ""} {
		if i == 3 {
			fsType = 0x6969
		}
		fs, ok := NetFSOnce(dir)
		if ok != (want != "") || fs.Type != want {
			t.Fatalf("call %d: %q, %v; want %q", i, fs.Type, ok, want)
		}
	}
	fi, err := os.Stat(marker)
	if err != nil || fi.Mode().Perm() != FileMode {
		t.Fatalf("marker: %v, %v", fi, err)
	}
	if data, _ := os.ReadFile(marker); string(data) != "nfs\n" {
		t.Fatalf("marker holds %q", data)
	}
}

// A marker that cannot be written (a read-only profile) is no error: the
// filesystem is reported each time.
func TestNetFSOnceMarkerNotWritten(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "profiles", "default")
	if err := EnsureDir(dir); err != nil {
		t.Fatal(err)
	}
	fsType := uint32(0x6969)
	fakeFSType(t, &fsType)
	storetest.SetSeams(t, func(string, string) (*os.File, error) { return nil, unix.EROFS }, nil, nil)
	for i := 0; i < 2; i++ {
		if fs, ok := NetFSOnce(dir); !ok || fs.Type != "nfs" {
			t.Fatalf("call %d: %q, %v; want nfs each time", i, fs.Type, ok)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, NetFSMarker)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("marker: %v", err)
	}
}
