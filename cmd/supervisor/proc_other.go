//go:build !linux && !darwin && !(freebsd && (amd64 || arm64))

package supervisor

import (
	"errors"
	"syscall"
)

// procStart is "-" for a live process: where this code has no way to read
// a process's start time (see proc_linux.go, proc_darwin.go,
// proc_freebsd.go), a pid reused by another process is not detected.
func procStart(pid int) string {
	if err := syscall.Kill(pid, 0); err == nil || errors.Is(err, syscall.EPERM) {
		return "-"
	}
	return ""
}
