//go:build darwin || freebsd

package fsstore

import "github.com/hermes/hermes/fsstore/internal/seam"

// NetworkFS returns the network filesystem dir is on, from one statfs,
// and false when it is on a local one or cannot be told (dir missing).
// macOS and FreeBSD name a filesystem's type in statfs's f_fstypename,
// where Linux gives a number (netfs_linux.go).
func NetworkFS(dir string) (NetFS, bool) {
	name, err := seam.FSTypeName(dir)
	if err != nil {
		return NetFS{}, false
	}
	return NetFSOfName(name)
}
