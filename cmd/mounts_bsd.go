//go:build darwin || freebsd

package cmd

import "golang.org/x/sys/unix"

// systemMounts reads the kernel's list of mounted filesystems with
// getfsstat and MNT_NOWAIT: the statistics the kernel holds, without
// asking any filesystem for fresh ones (MNT_WAIT would wait for a network
// filesystem's server). macOS and FreeBSD name a type in f_fstypename.
func systemMounts() ([]mount, error) {
	n, err := unix.Getfsstat(nil, unix.MNT_NOWAIT)
	if err != nil {
		return nil, err
	}
	buf := make([]unix.Statfs_t, n+8) // room for mounts made meanwhile
	n, err = unix.Getfsstat(buf, unix.MNT_NOWAIT)
	if err != nil {
		return nil, err
	}
	ms := make([]mount, 0, n)
	for _, st := range buf[:n] {
		ms = append(ms, mount{Point: unix.ByteSliceToString(st.Mntonname[:]), FSType: unix.ByteSliceToString(st.Fstypename[:])})
	}
	return ms, nil
}
