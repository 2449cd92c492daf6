package seam

import "golang.org/x/sys/unix"

// FSType returns the statfs f_type of the filesystem path is on: tests
// fake a network one (Faults.FSType). f_type is signed on some
// architectures; the magic is its 32 bits.
func FSType(path string) (uint32, error) {
	if f := find(path, func(f *Faults) bool { return f.FSType != nil }); f != nil {
		return f.FSType(path)
	}
	var st unix.Statfs_t
	err := unix.Statfs(path, &st)
	return uint32(st.Type), err
}
