//go:build darwin || freebsd

package seam

import "golang.org/x/sys/unix"

// FSTypeName returns the statfs f_fstypename of the filesystem path is on,
// how macOS and FreeBSD name a filesystem type: tests fake a network one.
var FSTypeName = func(path string) (string, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return "", err
	}
	return unix.ByteSliceToString(st.Fstypename[:]), nil
}
