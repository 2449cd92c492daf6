package seam

import "golang.org/x/sys/unix"

// FSType returns the statfs f_type of the filesystem path is on: tests
// fake a network one. f_type is signed on some architectures; the magic
// is its 32 bits.
var FSType = func(path string) (uint32, error) {
	var st unix.Statfs_t
	err := unix.Statfs(path, &st)
	return uint32(st.Type), err
}
