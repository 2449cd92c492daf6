package fsstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hermes/hermes/fsstore/internal/seam"
)

// File and directory modes, applied explicitly after creation so that the
// umask cannot widen or narrow them.
const (
	FileMode = 0o600
	DirMode  = 0o700
)

// EnsureDir creates dir and its missing parents with mode 0700 and refuses
// a symlink or a non-directory at dir or at any directory between it and
// the profiles directory above it (ProfilesDirName: <root>/profiles/<name>/…),
// so that writes never leave the profile through a link: a symlinked
// profile directory, or profiles/, is refused like a symlinked store
// directory. The root above profiles/ is the user's to place (a link to
// another disk is followed); so is any path that has no profiles
// directory above it, of which only dir itself is checked.
func EnsureDir(dir string) error {
	dir = filepath.Clean(dir)
	// guarded holds dir and its parents up to profiles/, innermost first.
	guarded := []string{dir}
	if top := profilesAbove(dir); top != "" {
		for d := dir; d != top; {
			d = filepath.Dir(d)
			guarded = append(guarded, d)
		}
	}
	for i := len(guarded) - 1; i >= 0; i-- {
		d := guarded[i]
		fi, err := os.Lstat(d)
		switch {
		case err == nil && fi.Mode()&os.ModeSymlink != 0:
			return Refusedf("%s is a symlink; refusing to write through it", d)
		case err == nil && !fi.IsDir():
			return Refusedf("%s exists and is not a directory", d)
		case err == nil:
			continue
		case !errors.Is(err, os.ErrNotExist):
			return err
		}
		if i == len(guarded)-1 {
			if err := makeDirs(filepath.Dir(d)); err != nil {
				return err
			}
		}
		if err := makeDir(d); err != nil {
			return err
		}
	}
	return nil
}

// ProfilesDirName is the directory under the root that holds the
// profiles: EnsureDir refuses a symlink below it.
const ProfilesDirName = "profiles"

// profilesAbove returns the nearest parent of dir named ProfilesDirName,
// or "".
func profilesAbove(dir string) string {
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		if filepath.Base(d) == ProfilesDirName {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// makeDirs makes dir and its missing parents, following links: the part
// of a path above what EnsureDir guards.
func makeDirs(dir string) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return Refusedf("%s exists and is not a directory", dir)
		}
		return nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := makeDirs(parent); err != nil {
			return err
		}
	}
	return makeDir(dir)
}

// makeDir makes one directory 0700, whatever the umask, and commits it to
// its parent. It is called for a directory found missing: when another
// process made it meanwhile (the mkdir finds it there), that process sets
// its mode, and this one only waits until it can see it (madeElsewhere).
//
// On a shared filesystem, what another host is making is seen here in
// pieces for some milliseconds: GlusterFS answers a mkdir with EEXIST
// before a lookup finds the directory, a mkdir in a parent this host has
// just seen with ENOENT, and one in a parent whose handle it cached before
// the other host made it with ESTALE. Each failed one of six first
// commands on a fresh profile from two hosts at once (scripts/multihost.sh,
// step fresh); each is retried until dirVisibleWithin has passed.
func makeDir(dir string) error {
	deadline := time.Now().Add(dirVisibleWithin)
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		err := seam.Mkdir(dir, DirMode)
		switch {
		case err == nil:
			if err := os.Chmod(dir, DirMode); err != nil {
				return err
			}
			return SyncDir(filepath.Dir(dir))
		case errors.Is(err, os.ErrExist):
			if err := madeElsewhere(dir, deadline); err != nil {
				return err
			}
			return SyncDir(filepath.Dir(dir))
		case !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ESTALE) || time.Now().After(deadline):
			return err
		}
		time.Sleep(wait)
	}
}

// dirVisibleWithin bounds how long makeDir waits for another host's
// directories to be seen here (a variable for its test).
var dirVisibleWithin = 2 * time.Second

// madeElsewhere waits until dir, which a mkdir found already there, can
// be looked up, or deadline passes, and checks it is a directory and not
// a link.
func madeElsewhere(dir string, deadline time.Time) error {
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		fi, err := os.Lstat(dir)
		switch {
		case err == nil && fi.Mode()&os.ModeSymlink != 0:
			return Refusedf("%s is a symlink; refusing to write through it", dir)
		case err == nil && !fi.IsDir():
			return Refusedf("%s exists and is not a directory", dir)
		case err == nil:
			return nil
		case !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ESTALE) || time.Now().After(deadline):
			return err
		}
		time.Sleep(wait)
	}
}

// SyncDir fsyncs a directory, which commits the creates, renames and
// removes of entries in it.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := seam.Sync(d); err != nil {
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
	return WriteAtomic(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteAtomic is WriteFileAtomic with the content produced by fill.
func WriteAtomic(path string, fill func(io.Writer) error) error {
	if err := ReplaceFile(path, fill); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// ReplaceFile is WriteAtomic without the sync of the directory: the new
// content is on disk, but after a crash the name may still show the old
// one, until something syncs the directory. It is for rewrites whose loss
// a crash makes harmless (a task's pids), and for writers that sync the
// directory once after several of them.
func ReplaceFile(path string, fill func(io.Writer) error) error {
	return replaceFile(path, fill, true, true)
}

// WriteCacheFile is WriteFileAtomic for a cache its owner can rebuild: the
// same temp file and rename, so that no reader ever sees a mix, but no
// sync of the file or of its directory, so that it costs no flush of the
// disk. A crash of the process loses nothing (the kernel has the write);
// after a power cut the file may hold its old content, none, or be empty
// (a reader quarantines it), and its owner rebuilds it.
func WriteCacheFile(path string, data []byte) error {
	return replaceFile(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}, false, false)
}

// writeAside is WriteFileAtomic for a copy kept aside, which no lock
// guards: it is not fenced (CheckHeld), since a writer that lost its lock
// must still be able to move its own lines out of the log.
func writeAside(path string, data []byte) error {
	if err := replaceFile(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}, true, false); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// replaceFile writes path atomically: synced (and fenced by its lock,
// CheckHeld, when fenced) or as a cache.
func replaceFile(path string, fill func(io.Writer) error, sync, fenced bool) (err error) {
	dir := filepath.Dir(path)
	f, err := seam.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return PathErr("write", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(FileMode); err != nil {
		return PathErr("write", path, err)
	}
	if err := fill(f); err != nil {
		return PathErr("write", path, err)
	}
	if sync {
		if err := seam.Sync(f); err != nil {
			return fmt.Errorf("write %s: sync: %w", path, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: close: %w", path, err)
	}
	if fenced {
		// The commit point of a document: fenced by its lock (CheckHeld).
		if err := CheckHeld(path); err != nil {
			return err
		}
	}
	if err := seam.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: rename: %w", path, err)
	}
	return nil
}

// MoveAside renames path to path+suffix (a quarantine or a kept copy) and
// commits the rename. It returns the new name.
func MoveAside(path, suffix string) (string, error) {
	dst := freeName(path, suffix)
	if err := os.Rename(path, dst); err != nil {
		return "", fmt.Errorf("move %s aside: %w", path, err)
	}
	return dst, SyncDir(filepath.Dir(path))
}

// CopyAside copies path to a new file path+suffix (synced), so the original
// stays in place until its replacement is committed. A missing path copies
// nothing and returns "".
func CopyAside(path, suffix string) (string, error) {
	src, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer src.Close()
	dst := freeName(path, suffix)
	return dst, WriteAtomic(dst, func(w io.Writer) error { _, err := io.Copy(w, src); return err })
}

// freeName is path+suffix, or path+suffix+".N" for the first N that names
// no file: a copy kept aside never replaces an earlier one.
func freeName(path, suffix string) string {
	dst := path + suffix
	for i := 1; ; i++ {
		if _, err := os.Lstat(dst); errors.Is(err, os.ErrNotExist) {
			return dst
		}
		dst = fmt.Sprintf("%s%s.%d", path, suffix, i)
	}
}

// IsDiskFull reports whether err comes from a full disk or an exhausted
// quota, so that callers can say so in plain words.
func IsDiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// ObserveSyncs calls fn with the name of every file and directory at or
// below dir that is synced (fsync; F_FULLFSYNC on macOS), from now until
// stop is called: how a test counts what a change costs (a gateway turn
// makes at most three). fn may be called from several goroutines at once.
// Observers of different directories do not see each other's syncs, so
// tests that count them may run in parallel.
func ObserveSyncs(dir string, fn func(name string)) (stop func()) {
	dir = filepath.Clean(dir)
	return seam.ObserveSync(func(name string) {
		if name == dir || strings.HasPrefix(name, dir+string(filepath.Separator)) {
			fn(name)
		}
	})
}
