package fsstore

import "github.com/hermes/hermes/fsstore/internal/seam"

// NetworkFS returns the network filesystem dir is on, from one statfs,
// and false when it is on a local one or cannot be told (dir missing).
func NetworkFS(dir string) (NetFS, bool) {
	t, err := seam.FSType(dir)
	if err != nil {
		return NetFS{}, false
	}
	return NetFSOf(t)
}
