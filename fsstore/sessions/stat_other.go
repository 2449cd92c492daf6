//go:build !linux

package sessions

import "golang.org/x/sys/unix"

// stat is fstatat of name in the reader's directory; with follow false a
// symlink is not followed. Only Linux has statx's AT_STATX_FORCE_SYNC,
// which asks a FUSE or network filesystem's server for the size instead
// of the kernel's cache (stat_linux.go); elsewhere a local disk has no
// such cache to defeat, and a network filesystem is warned of
// (fsstore.NetFSOnce).
func (r *lineReader) stat(name string, follow bool) (fileStat, error) {
	flags := unix.AT_SYMLINK_NOFOLLOW
	if follow {
		flags = 0
	}
	var st unix.Stat_t
	err := ignoringEINTR(func() error {
		return unix.Fstatat(r.dirfd, name, &st, flags)
	})
	return fileStat{Mode: uint32(st.Mode), Size: st.Size}, r.pathError("stat", name, err)
}
