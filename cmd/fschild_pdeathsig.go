//go:build linux || freebsd

package cmd

import "syscall"

// fsChildAttr has the kernel kill the watched child when its parent dies,
// whatever kills it (a SIGKILL, a supervisor's stop): the child does not
// outlive the process its caller waits for.
func fsChildAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
