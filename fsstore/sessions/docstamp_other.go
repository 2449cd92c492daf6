//go:build !linux

package sessions

import "golang.org/x/sys/unix"

// stampOf lstats the file at path. Only Linux's statx passes a network
// filesystem's attribute cache (docstamp_linux.go); elsewhere a local
// disk has no such cache, and a network filesystem is warned of
// (fsstore.NetFSOnce). An error is a stamp that matches nothing kept.
func stampOf(path string) docStamp {
	var st unix.Stat_t
	err := ignoringEINTR(func() error { return unix.Lstat(path, &st) })
	if err != nil {
		return docStamp{}
	}
	return docStamp{
		Dev:     uint64(st.Dev),
		Ino:     uint64(st.Ino),
		Size:    st.Size,
		MTime:   st.Mtim.Nano(),
		CTime:   st.Ctim.Nano(),
		Regular: st.Mode&unix.S_IFMT == unix.S_IFREG,
	}
}
