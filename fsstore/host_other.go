//go:build !linux && !darwin && !freebsd

package fsstore

// bootID is "": this system's boot id is not read (see host_linux.go,
// host_darwin.go, host_freebsd.go); hosts that share a hostname name
// themselves with $HERMES_HOST_ID.
func bootID() string { return "" }

// pidNamespace is "": pid namespaces are Linux's.
func pidNamespace() string { return "" }
