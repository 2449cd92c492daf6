package fsstore

import "golang.org/x/sys/unix"

// bootID is sysctl kern.bootsessionuuid, the random id macOS makes at each
// boot (macOS has no /proc), or where it is missing kern.boottime's
// seconds (bootTime), which a step of the clock can move.
func bootID() string {
	if id, err := unix.Sysctl("kern.bootsessionuuid"); err == nil && id != "" {
		return id
	}
	return bootTime()
}

// pidNamespace is "": macOS has one pid space for all its processes.
func pidNamespace() string { return "" }
