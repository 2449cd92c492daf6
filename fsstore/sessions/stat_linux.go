package sessions

import "golang.org/x/sys/unix"

// stat is statx of name in the reader's directory, its size read fresh
// (AT_STATX_FORCE_SYNC, as fsstore.FreshSize: on a network filesystem the
// server's, not a cached one; on a local disk the cost of fstatat); with
// follow false a symlink is not followed.
func (r *lineReader) stat(name string, follow bool) (fileStat, error) {
	flags := unix.AT_SYMLINK_NOFOLLOW | unix.AT_STATX_FORCE_SYNC
	if follow {
		flags = unix.AT_STATX_FORCE_SYNC
	}
	var st unix.Statx_t
	err := ignoringEINTR(func() error {
		return unix.Statx(r.dirfd, name, flags, unix.STATX_TYPE|unix.STATX_MODE|unix.STATX_SIZE, &st)
	})
	return fileStat{Mode: uint32(st.Mode), Size: int64(st.Size)}, r.pathError("stat", name, err)
}
