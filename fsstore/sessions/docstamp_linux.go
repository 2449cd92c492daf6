package sessions

import "golang.org/x/sys/unix"

// stampOf stats the file at path, without following a symlink, fresh
// (AT_STATX_FORCE_SYNC, as fsstore.FreshSize: on a network filesystem
// the server's attributes, not those the kernel cached; on a local disk
// the cost of a stat). An error is a stamp that matches nothing kept.
func stampOf(path string) docStamp {
	var st unix.Statx_t
	err := ignoringEINTR(func() error {
		return unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_FORCE_SYNC,
			unix.STATX_TYPE|unix.STATX_INO|unix.STATX_SIZE|unix.STATX_MTIME|unix.STATX_CTIME, &st)
	})
	if err != nil {
		return docStamp{}
	}
	return docStamp{
		Dev:     unix.Mkdev(st.Dev_major, st.Dev_minor),
		Ino:     st.Ino,
		Size:    int64(st.Size),
		MTime:   st.Mtime.Sec*1e9 + int64(st.Mtime.Nsec),
		CTime:   st.Ctime.Sec*1e9 + int64(st.Ctime.Nsec),
		Regular: st.Mode&unix.S_IFMT == unix.S_IFREG,
	}
}
