package testtmp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// shm is Linux's memory-backed filesystem for everyone's use.
const shm = "/dev/shm"

// minFree is the space /dev/shm must have free: the long tests write a
// 400 MB file and a 100 MB message's copies.
const minFree = 2 << 30

// heldName is the file whose lock says a directory's binary is running.
const heldName = ".held"

// orphanAge is how old a directory without its lock file must be to be
// removed: a binary makes the file just after its directory.
const orphanAge = time.Hour

// memoryDir makes this binary's directory under /dev/shm/hermes-test-UID
// and locks it; release removes it. Directories of binaries no longer
// running are removed first.
func memoryDir() (dir string, release func(), err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(shm, &st); err != nil {
		return "", nil, err
	}
	if st.Type != unix.TMPFS_MAGIC || int64(st.Bavail)*int64(st.Bsize) < minFree {
		return "", nil, errors.New("/dev/shm is not a tmpfs with room")
	}
	base := filepath.Join(shm, fmt.Sprintf("hermes-test-%d", os.Getuid()))
	if err := os.Mkdir(base, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", nil, err
	}
	// /dev/shm is writable by all: the directory must be this user's
	// own, and not a link another user planted.
	var bst unix.Stat_t
	if err := unix.Lstat(base, &bst); err != nil {
		return "", nil, err
	}
	if bst.Mode&unix.S_IFMT != unix.S_IFDIR || int(bst.Uid) != os.Getuid() || bst.Mode&0o077 != 0 {
		return "", nil, fmt.Errorf("%s is not this user's own directory", base)
	}
	sweep(base)
	dir, err = os.MkdirTemp(base, "")
	if err != nil {
		return "", nil, err
	}
	held, err := hold(dir)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, func() {
		os.RemoveAll(dir)
		held.Close()
	}, nil
}

// hold makes dir's lock file, locked: under another name first, so that
// a sweep never finds it unlocked.
func hold(dir string) (*os.File, error) {
	f, err := os.CreateTemp(dir, heldName+"-")
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, heldName)); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// sweep removes the directories under base whose binary is no longer
// running: their lock is free, or they never had one and are old.
func sweep(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		dir := filepath.Join(base, e.Name())
		if e.Type() != os.ModeDir || !free(dir) {
			continue
		}
		os.RemoveAll(dir)
	}
}

// free says whether dir's binary has ended.
func free(dir string) bool {
	held, err := os.Open(filepath.Join(dir, heldName))
	if errors.Is(err, os.ErrNotExist) {
		info, err := os.Stat(dir)
		return err == nil && time.Since(info.ModTime()) > orphanAge
	}
	if err != nil {
		return false
	}
	defer held.Close()
	return unix.Flock(int(held.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil
}
