package fsstore

import (
	"os"

	"golang.org/x/sys/unix"
)

// FreshSize returns the size of the open file f as the filesystem's server
// knows it: statx with AT_STATX_FORCE_SYNC, which a FUSE or network
// filesystem answers from its server instead of the attributes the kernel
// cached (for a second, on GlusterFS's FUSE client), and which refreshes
// that cache, so later fstat calls and reads see the same size. On a local
// disk it is one statx. A writer calls it after taking a log's lock,
// before it reads the log's end: there a size read from the cache can be
// another host's append behind, and the next seq would repeat one.
func FreshSize(f *os.File) (int64, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var st unix.Statx_t
	var serr error
	err = rc.Control(func(fd uintptr) {
		serr = unix.Statx(int(fd), "", unix.AT_EMPTY_PATH|unix.AT_STATX_FORCE_SYNC, unix.STATX_SIZE, &st)
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return 0, &os.PathError{Op: "statx", Path: f.Name(), Err: err}
	}
	return int64(st.Size), nil
}

// ProbeDir asks the filesystem of dir for dir's attributes from its
// server (statx with AT_STATX_FORCE_SYNC): a call that does not return
// while a network or FUSE filesystem does not answer, which a command's
// watchdog times (--fs-timeout). On a local disk it is one statx.
func ProbeDir(dir string) error {
	var st unix.Statx_t
	return unix.Statx(unix.AT_FDCWD, dir, unix.AT_STATX_FORCE_SYNC, unix.STATX_TYPE, &st)
}
