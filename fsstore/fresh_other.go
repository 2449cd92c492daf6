//go:build !linux

package fsstore

import "os"

// FreshSize returns the size of the open file f, fstat's. Only Linux's
// statx can ask a FUSE or network filesystem's server for it past the
// kernel's attribute cache (fresh_linux.go); macOS and FreeBSD have no
// such call, and on their local disks fstat's size is the file's. A
// profile on a network filesystem is warned of (NetFSOnce).
func FreshSize(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// ProbeDir asks the filesystem of dir for dir's attributes: a stat, which
// on a network filesystem whose server does not answer does not return,
// which a command's watchdog times (--fs-timeout). macOS and FreeBSD have
// no call that passes the kernel's attribute cache (see FreshSize).
func ProbeDir(dir string) error {
	_, err := os.Stat(dir)
	return err
}
