//go:build !darwin

package seam

import "os"

// fullSync is File.Sync, fsync: on Linux and FreeBSD it waits for the
// drive to have the writes, its cache included. macOS needs more
// (sync_darwin.go).
func fullSync(f *os.File) error { return f.Sync() }
