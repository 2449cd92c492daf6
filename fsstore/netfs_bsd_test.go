//go:build darwin || freebsd

package fsstore

import (
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hermes/hermes/fsstore/internal/seam"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// NetworkFS reads the type's name: a local one is not reported, a network
// one once.
func TestNetworkFSByName(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "profiles", "default")
	if err := EnsureDir(dir); err != nil {
		t.Fatal(err)
	}
	name := "apfs"
	seam.Install(t, storetest.TestDir(t), seam.Faults{FSTypeName: func(path string) (string, error) {
		var st unix.Statfs_t
		if err := unix.Statfs(path, &st); err != nil {
			return "", err
		}
		return name, nil
	}})
	if fs, ok := NetFSOnce(dir); ok {
		t.Fatalf("a local filesystem reported as %q", fs.Type)
	}
	name = "smbfs"
	for i, want := range []string{"smbfs", ""} {
		fs, ok := NetFSOnce(dir)
		if ok != (want != "") || fs.Type != want {
			t.Fatalf("call %d: %q, %v; want %q", i, fs.Type, ok, want)
		}
	}
}
