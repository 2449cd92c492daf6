//go:build !linux

package sessions

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/internal/seam"
)

// syncFS commits every write to the files of dir and to dir itself. Only
// Linux has syncfs, one call for a whole file system (syncfs_linux.go).
// Elsewhere sync(2) would do for it but returns before the writes are
// durable (macOS, FreeBSD), so each regular file of dir is synced (on
// macOS with F_FULLFSYNC, which reaches the drive's media), then
// dir, which commits the renames and removals.
func syncFS(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := syncFile(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("sync %s: %w", dir, err)
		}
	}
	return fsstore.SyncDir(dir)
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return seam.Sync(f)
}
