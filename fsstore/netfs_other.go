//go:build !linux && !darwin && !freebsd

package fsstore

// NetworkFS finds no network filesystem: this system's statfs is not read
// (see netfs_linux.go, netfs_bsd.go).
func NetworkFS(string) (NetFS, bool) { return NetFS{}, false }
