package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// fileSys is where a call's file tools open, create, rename and remove
// files: the whole file system (hostFiles), or, when Env.Root is set, the
// tree below it through one os.Root (rootFiles), which resolves every
// name beneath the root in the same system calls that use it (openat2
// RESOLVE_BENEATH on Linux, a walk of O_NOFOLLOW opens elsewhere). A path
// checked and then opened could be swapped, between the two, for a
// symbolic link out of the root; a name resolved by the root cannot.
type fileSys interface {
	OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error)
	Stat(name string) (fs.FileInfo, error)
	Lstat(name string) (fs.FileInfo, error)
	MkdirAll(name string, perm fs.FileMode) error
	Rename(oldname, newname string) error
	Remove(name string) error
}

// hostFiles is the whole file system: names are absolute paths.
type hostFiles struct{}

func (hostFiles) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}
func (hostFiles) Stat(name string) (fs.FileInfo, error)        { return os.Stat(name) }
func (hostFiles) Lstat(name string) (fs.FileInfo, error)       { return os.Lstat(name) }
func (hostFiles) MkdirAll(name string, perm fs.FileMode) error { return os.MkdirAll(name, perm) }
func (hostFiles) Rename(oldname, newname string) error         { return os.Rename(oldname, newname) }
func (hostFiles) Remove(name string) error                     { return os.Remove(name) }

// rootFiles is the tree below dir: names are relative to it. An error
// because a name leads out of it says so.
type rootFiles struct {
	root *os.Root
	dir  string
}

func (r rootFiles) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := r.root.OpenFile(name, flag, perm)
	return f, r.outside(err)
}
func (r rootFiles) Stat(name string) (fs.FileInfo, error) {
	fi, err := r.root.Stat(name)
	return fi, r.outside(err)
}
func (r rootFiles) Lstat(name string) (fs.FileInfo, error) {
	fi, err := r.root.Lstat(name)
	return fi, r.outside(err)
}
func (r rootFiles) MkdirAll(name string, perm fs.FileMode) error {
	return r.outside(r.root.MkdirAll(name, perm))
}
func (r rootFiles) Rename(oldname, newname string) error {
	return r.outside(r.root.Rename(oldname, newname))
}
func (r rootFiles) Remove(name string) error { return r.outside(r.root.Remove(name)) }

// escapes is the error os.Root gives a name that leads out of it, which
// the os package does not export: taken once from a ".." that must fail.
var escapes = sync.OnceValue(func() error {
	_, err := os.OpenInRoot(os.TempDir(), "..")
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
})

// outside rewrites the root's refusal of a name that leads out of it as
// one the model understands (an *outsideError); other errors pass
// unchanged.
func (r rootFiles) outside(err error) error {
	var pe *fs.PathError
	if err == nil || !errors.As(err, &pe) || !errors.Is(pe.Err, escapes()) {
		return err
	}
	return &outsideError{path: pe.Path, dir: r.dir}
}

// outsideError is a name that leads out of the directory file tools keep
// to (by "..", or a symbolic link).
type outsideError struct{ path, dir string }

func (e *outsideError) Error() string {
	return fmt.Sprintf("%s is outside %s, the directory file tools keep to", e.path, e.dir)
}

// place is a path a tool call names: the file system it is in, its name
// there, and its absolute path, which messages show.
type place struct {
	fsys fileSys
	name string
	abs  string
}

// resolve places name, a path as the model gave it: relative paths start
// at the session's working directory. Without env.Root it is an absolute
// path of the whole file system. With env.Root, a path that names a place
// outside it (by "..", an absolute name) is refused here, and the rest is
// left to the root, which refuses a symbolic link out when the path is
// used. done closes the root.
func resolve(env *Env, name string) (_ place, done func(), _ error) {
	path := name
	if !filepath.IsAbs(path) && env.Cwd != "" {
		path = filepath.Join(env.Cwd, path)
	}
	path = filepath.Clean(path)
	if env.Root == "" {
		return place{hostFiles{}, path, path}, func() {}, nil
	}
	rel, ok := beneath(env.Root, path)
	if !ok {
		// A root reached through a link also holds its real path's files.
		if real, err := filepath.EvalSymlinks(env.Root); err == nil {
			rel, ok = beneath(real, path)
		}
	}
	if !ok {
		return place{}, nil, fmt.Errorf("%s is outside %s, the directory file tools keep to", name, env.Root)
	}
	root, err := os.OpenRoot(env.Root)
	if err != nil {
		return place{}, nil, err
	}
	return place{rootFiles{root, env.Root}, rel, path}, func() { root.Close() }, nil
}

// beneath returns path relative to dir, if it is dir or below it, by its
// names alone.
func beneath(dir, path string) (string, bool) {
	rel, err := filepath.Rel(filepath.Clean(dir), path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}

// readDir is os.ReadDir in fsys. The directory is opened O_DIRECTORY and
// without blocking, so that a FIFO swapped in its place is refused, not
// waited on.
func readDir(fsys fileSys, name string) ([]fs.DirEntry, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}
