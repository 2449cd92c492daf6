//go:build darwin || freebsd

package seam

import "golang.org/x/sys/unix"

// FSTypeName returns the statfs f_fstypename of the filesystem path is on,
// how macOS and FreeBSD name a filesystem type: tests fake a network one
// (Faults.FSTypeName).
func FSTypeName(path string) (string, error) {
	if f := find(path, func(f *Faults) bool { return f.FSTypeName != nil }); f != nil {
		return f.FSTypeName(path)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return "", err
	}
	return unix.ByteSliceToString(st.Fstypename[:]), nil
}
