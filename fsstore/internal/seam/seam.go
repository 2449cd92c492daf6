// Package seam holds the file operations of the storage engine's write
// recipes that fault-injection tests replace, so that a test can fail one
// chosen step (create, write, sync, rename) of an atomic write or an
// append, like raft-wal's test filesystem, and the open of a scan whose
// cost tests count.
//
// A test replaces them for its own files only: Install binds Faults to a
// directory (the test's t.TempDir), and each operation uses the faults
// installed for a directory that contains the file it acts on, the most
// recently installed first, or does the step itself. Tests whose faults
// are on different directories therefore run in parallel
// (t.Parallel()), and a fault never reaches another test's files.
// Production installs nothing: an operation costs one atomic load of
// nil more than the os call (BenchmarkSync, BenchmarkWrite).
//
// The operations stay package functions, called where the write recipes
// call them, rather than a filesystem value passed through every store:
// the recipes keep one code path, the one production runs, and what a
// test changes is scoped by the place it writes to, which every store
// already has, rather than by a value each store and command would have to
// carry for tests alone.
package seam

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	natomic "github.com/natefinch/atomic"
	"golang.org/x/sys/unix"
)

// Faults are the steps a test replaces for the files under one
// directory. A nil field leaves the step as it is; a fault that does the
// step after all does it with the os call (f.Sync(), os.Rename), not
// with this package's function, which would find the fault again.
type Faults struct {
	// CreateTemp makes the temp file of an atomic write in dir.
	CreateTemp func(dir, pattern string) (*os.File, error)
	// Rename moves a temp file over the document it replaces (to).
	Rename func(from, to string) error
	// Sync makes a file's (or a directory's) writes durable.
	Sync func(f *os.File) error
	// Mkdir makes one directory of a store or a profile.
	Mkdir func(path string, perm os.FileMode) error
	// CreateLock makes a lock sidecar that is missing.
	CreateLock func(path string) (*os.File, error)
	// OpenLock opens a lock sidecar with flag (unix.O_RDWR or
	// unix.O_RDONLY, with O_NOFOLLOW and O_CLOEXEC) and returns its
	// descriptor.
	OpenLock func(path string, flag int) (int, error)
	// ReadFile reads a whole document.
	ReadFile func(path string) ([]byte, error)
	// Write appends one record to a log.
	Write func(f *os.File, b []byte) (int, error)
	// Truncate cuts a log back to its size before a failed append.
	Truncate func(f *os.File, size int64) error
	// OpenRead opens the file name of the directory dirfd for reading.
	OpenRead func(dirfd int, name string) (int, error)
	// FSType is the statfs f_type of the filesystem path is on (Linux).
	FSType func(path string) (uint32, error)
	// FSTypeName is the statfs f_fstypename of the filesystem path is on
	// (macOS, FreeBSD).
	FSTypeName func(path string) (string, error)
}

// TB is what Install needs of a test (testing.TB): seam is linked into
// hermes, which must not link the testing package.
type TB interface {
	Helper()
	Cleanup(func())
	Fatal(args ...any)
}

// scope is one Install: faults for the files at or below dir, whose
// device and inode find it from a directory descriptor (OpenRead).
type scope struct {
	dir      string
	dev, ino uint64
	faults   Faults
}

// installed are the scopes of the tests running, oldest first, copied on
// each change so that an operation reads them with one atomic load, and
// nil when there are none (production).
var (
	installedMu sync.Mutex
	installed   atomic.Pointer[[]*scope]
)

// Install makes the files at or below dir use faults' steps until the
// test ends. Installs on the same directory stack: a later one's steps
// are used first, and the earlier one's where the later has none.
func Install(t TB, dir string, faults Faults) {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(abs, &st); err != nil {
		t.Fatal("seam: faults for a directory that cannot be found: ", err)
	}
	s := &scope{dir: abs, dev: uint64(st.Dev), ino: uint64(st.Ino), faults: faults}
	installedMu.Lock()
	defer installedMu.Unlock()
	var next []*scope
	if cur := installed.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, s)
	installed.Store(&next)
	t.Cleanup(func() {
		installedMu.Lock()
		defer installedMu.Unlock()
		var rest []*scope
		for _, q := range *installed.Load() {
			if q != s {
				rest = append(rest, q)
			}
		}
		if len(rest) == 0 {
			installed.Store(nil)
			return
		}
		installed.Store(&rest)
	})
}

// find returns the faults installed last for a directory that contains
// path and that replace the step has looks for, or nil: with none
// installed, an atomic load inlined where the step is.
func find(path string, has func(*Faults) bool) *Faults {
	if installed.Load() == nil {
		return nil
	}
	return findInstalled(path, has)
}

// findInstalled is find once some faults are installed.
func findInstalled(path string, has func(*Faults) bool) *Faults {
	list := installed.Load()
	if list == nil {
		return nil
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	for i := len(*list) - 1; i >= 0; i-- {
		s := (*list)[i]
		if has(&s.faults) && (path == s.dir || strings.HasPrefix(path, s.dir+string(filepath.Separator))) {
			return &s.faults
		}
	}
	return nil
}

// findAt is find for the file name of the directory dirfd, which has no
// path: the scope is found among dirfd and the directories above it.
func findAt(dirfd int, has func(*Faults) bool) *Faults {
	list := installed.Load()
	if list == nil || !slices.ContainsFunc(*list, func(s *scope) bool { return has(&s.faults) }) {
		return nil
	}
	type key struct{ dev, ino uint64 }
	var above []key
	fd := dirfd
	for range 256 {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil {
			break
		}
		k := key{uint64(st.Dev), uint64(st.Ino)}
		if len(above) > 0 && above[len(above)-1] == k {
			break // the root is its own parent
		}
		above = append(above, k)
		parent, err := unix.Openat(fd, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if fd != dirfd {
			unix.Close(fd)
		}
		if err != nil {
			fd = dirfd
			break
		}
		fd = parent
	}
	if fd != dirfd {
		unix.Close(fd)
	}
	for i := len(*list) - 1; i >= 0; i-- {
		s := (*list)[i]
		if !has(&s.faults) {
			continue
		}
		for _, k := range above {
			if k == (key{s.dev, s.ino}) {
				return &s.faults
			}
		}
	}
	return nil
}

// CreateTemp makes the temp file of an atomic write.
func CreateTemp(dir, pattern string) (*os.File, error) {
	if f := find(dir, func(f *Faults) bool { return f.CreateTemp != nil }); f != nil {
		return f.CreateTemp(dir, pattern)
	}
	return os.CreateTemp(dir, pattern)
}

// Rename moves a temp file over the document it replaces.
func Rename(from, to string) error {
	if f := find(to, func(f *Faults) bool { return f.Rename != nil }); f != nil {
		return f.Rename(from, to)
	}
	return natomic.ReplaceFile(from, to)
}

// Sync makes a file's (or a directory's) writes durable, and tells the
// observers of syncs first (ObserveSync).
func Sync(file *os.File) error {
	if f := find(file.Name(), func(f *Faults) bool { return f.Sync != nil }); f != nil {
		return f.Sync(file)
	}
	syncObservers.Tell(file.Name())
	return fullSync(file)
}

// Mkdir makes one directory of a store or a profile.
func Mkdir(path string, perm os.FileMode) error {
	if f := find(path, func(f *Faults) bool { return f.Mkdir != nil }); f != nil {
		return f.Mkdir(path, perm)
	}
	return os.Mkdir(path, perm)
}

// CreateLock makes a lock sidecar that is missing.
func CreateLock(path string) (*os.File, error) {
	if f := find(path, func(f *Faults) bool { return f.CreateLock != nil }); f != nil {
		return f.CreateLock(path)
	}
	return os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY|syscall.O_NOFOLLOW, 0o600)
}

// OpenLock opens a lock sidecar to lock it (and, opened for writing, to
// write its holder's record through the same descriptor).
func OpenLock(path string, flag int) (int, error) {
	if f := find(path, func(f *Faults) bool { return f.OpenLock != nil }); f != nil {
		return f.OpenLock(path, flag)
	}
	for {
		fd, err := unix.Open(path, flag, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// ReadFile reads a whole document: tests count what a lookup opens.
func ReadFile(path string) ([]byte, error) {
	if f := find(path, func(f *Faults) bool { return f.ReadFile != nil }); f != nil {
		return f.ReadFile(path)
	}
	return os.ReadFile(path)
}

// Write appends one record to a log.
func Write(file *os.File, b []byte) (int, error) {
	if f := find(file.Name(), func(f *Faults) bool { return f.Write != nil }); f != nil {
		return f.Write(file, b)
	}
	return file.Write(b)
}

// Truncate cuts a log back to its size before a failed append.
func Truncate(file *os.File, size int64) error {
	if f := find(file.Name(), func(f *Faults) bool { return f.Truncate != nil }); f != nil {
		return f.Truncate(file, size)
	}
	return file.Truncate(size)
}

// OpenRead opens a file of the directory dirfd for reading, without
// following a symlink, and returns its descriptor: how search opens a
// transcript.
func OpenRead(dirfd int, name string) (int, error) {
	if f := findAt(dirfd, func(f *Faults) bool { return f.OpenRead != nil }); f != nil {
		return f.OpenRead(dirfd, name)
	}
	return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
}

// Observers are functions told of an event by name (a sync, a read),
// copied on each change so that telling them is one atomic load, and
// nothing when there are none (production).
type Observers struct {
	mu   sync.Mutex
	list atomic.Pointer[[]*func(string)]
}

// Add makes fn one of o until stop is called. fn may be called from
// several goroutines at once.
func (o *Observers) Add(fn func(name string)) (stop func()) {
	p := &fn
	o.mu.Lock()
	defer o.mu.Unlock()
	var next []*func(string)
	if cur := o.list.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, p)
	o.list.Store(&next)
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		var rest []*func(string)
		for _, q := range *o.list.Load() {
			if q != p {
				rest = append(rest, q)
			}
		}
		o.list.Store(&rest)
	}
}

// Tell calls each of o with name.
func (o *Observers) Tell(name string) {
	if list := o.list.Load(); list != nil {
		for _, fn := range *list {
			(*fn)(name)
		}
	}
}

// syncObservers are the functions ObserveSync added.
var syncObservers Observers

// ObserveSync calls fn with the name of every file and directory that
// Sync syncs from now until stop is called: how tests and benchmarks
// count a change's syncs. fn may be called from several goroutines at
// once.
func ObserveSync(fn func(name string)) (stop func()) { return syncObservers.Add(fn) }
