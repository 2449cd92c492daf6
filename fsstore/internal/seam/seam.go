// Package seam holds the file operations of the storage engine's write
// recipes that fault-injection tests replace, so that a test can fail one
// chosen step (create, write, sync, rename) of an atomic write or an
// append, like raft-wal's test filesystem, and the open of a scan whose
// cost tests count. Production code never changes them. They are package variables, so a test that replaces them does not
// run in parallel; storetest.SetSeams replaces them for one test.
package seam

import (
	"os"
	"syscall"

	"github.com/natefinch/atomic"
	"golang.org/x/sys/unix"
)

var (
	// CreateTemp makes the temp file of an atomic write.
	CreateTemp = os.CreateTemp
	// Rename moves a temp file over the document it replaces.
	Rename = atomic.ReplaceFile
	// Sync makes a file's (or a directory's) writes durable.
	Sync = fullSync
	// CreateLock makes a lock sidecar that is missing.
	CreateLock = func(path string) (*os.File, error) {
		return os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY|syscall.O_NOFOLLOW, 0o600)
	}
	// ReadFile reads a whole document: tests count what a lookup opens.
	ReadFile = os.ReadFile
	// Write appends one record to a log.
	Write = func(f *os.File, b []byte) (int, error) { return f.Write(b) }
	// Truncate cuts a log back to its size before a failed append.
	Truncate = func(f *os.File, size int64) error { return f.Truncate(size) }
	// OpenRead opens a file of the directory dirfd for reading, without
	// following a symlink, and returns its descriptor: how search opens a
	// transcript.
	OpenRead = func(dirfd int, name string) (int, error) {
		return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	}
)
