package fsstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/natefinch/atomic"
)

// File and directory modes, applied explicitly after creation so that the
// umask cannot widen or narrow them.
const (
	fileMode = 0o600
	dirMode  = 0o700
)

// Test seams: fault-injection tests replace these to fail a chosen step of
// the write sequences.
var (
	createTemp = os.CreateTemp
	rename     = atomic.ReplaceFile
	syncFile   = func(f *os.File) error { return f.Sync() }
	writeFile  = func(f *os.File, b []byte) (int, error) { return f.Write(b) }
)

// EnsureDir creates dir and its missing parents with mode 0700 and refuses
// a dir that exists as a symlink or a non-directory, so that writes never
// leave the profile through a link.
func EnsureDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err == nil {
		if fi.Mode()&os.ModeSymlink != 0 {
			return Refusedf("%s is a symlink; refusing to write through it", dir)
		}
		if !fi.IsDir() {
			return Refusedf("%s exists and is not a directory", dir)
		}
		return nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := EnsureDir(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, dirMode); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := os.Chmod(dir, dirMode); err != nil {
		return err
	}
	return SyncDir(parent)
}

// SyncDir fsyncs a directory, which commits the creates, renames and
// removes of entries in it.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := syncFile(d); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// WriteFileAtomic is like os.WriteFile, but the file at path holds either
// its old content or all of data, never a mix, even across a crash. It is the
// recipe of restic's local backend: a temp file in the same directory,
// write, sync, close, rename over path, then sync the directory to commit
// the rename. On failure the temp file is removed and path is untouched. The
// new file has mode 0600; a symlink at path is replaced, not followed.
func WriteFileAtomic(path string, data []byte) (err error) {
	return writeAtomic(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// writeAtomic is WriteFileAtomic with the content produced by fill.
func writeAtomic(path string, fill func(io.Writer) error) error {
	if err := replaceFile(path, fill); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// replaceFile is writeAtomic without the sync of the directory: the new
// content is on disk, but after a crash the name may still show the old
// one, until something syncs the directory. It is for rewrites whose loss
// a crash makes harmless (a task's pids), and for writers that sync the
// directory once after several of them.
func replaceFile(path string, fill func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := createTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(fileMode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := fill(f); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := syncFile(f); err != nil {
		return fmt.Errorf("write %s: sync: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: close: %w", path, err)
	}
	if err := rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: rename: %w", path, err)
	}
	return nil
}

// moveAside renames path to path+suffix (a quarantine or a kept copy) and
// commits the rename. It returns the new name.
func moveAside(path, suffix string) (string, error) {
	dst := path + suffix
	for i := 1; ; i++ {
		if _, err := os.Lstat(dst); errors.Is(err, os.ErrNotExist) {
			break
		}
		dst = fmt.Sprintf("%s%s.%d", path, suffix, i)
	}
	if err := os.Rename(path, dst); err != nil {
		return "", fmt.Errorf("move %s aside: %w", path, err)
	}
	return dst, SyncDir(filepath.Dir(path))
}

// IsDiskFull reports whether err comes from a full disk or an exhausted
// quota, so that callers can say so in plain words.
func IsDiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
