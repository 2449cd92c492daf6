package seam

import (
	"errors"
	"os"
	"syscall"
)

// fullSync is File.Sync, which on macOS is fcntl F_FULLFSYNC: fsync there
// hands the writes to the drive, whose cache may lose or reorder them on a
// power cut, and F_FULLFSYNC asks the drive to write its cache out. A
// filesystem that refuses it answers ENOTSUP (SMB; File.Sync then falls
// back to fsync itself) or EINVAL (macFUSE volumes): there fsync, all the
// filesystem offers, rather than a write that fails.
func fullSync(f *os.File) error {
	err := f.Sync()
	if errors.Is(err, syscall.EINVAL) {
		return syscall.Fsync(int(f.Fd()))
	}
	return err
}
