package fsstore

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// OpenFile is like os.OpenFile for a regular file that is read and
// written with blocking calls (every log and document of a store), but
// costs one open and one fcntl where os.OpenFile makes six system calls:
// it makes the descriptor non-blocking and offers it to the runtime's
// poller, which refuses a regular file (epoll_ctl's EPERM), and makes it
// blocking again. A gateway turn opens about a dozen files. The file is
// opened close-on-exec; an interrupted open (EINTR, which a signal can
// cause on a network filesystem) is retried as os.OpenFile retries it;
// an error is an *os.PathError, as os.OpenFile's. A flag with O_NONBLOCK
// (a file that may be a fifo) should use os.OpenFile, whose poller serves
// it.
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	for {
		fd, err := unix.Open(path, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}
