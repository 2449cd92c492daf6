//go:build darwin || freebsd

package fsstore

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// bootTime is the second the kernel booted, from sysctl kern.boottime, as
// "boot-<seconds since 1970>", or "" if it cannot be read.
func bootTime() string {
	tv, err := unix.SysctlTimeval("kern.boottime")
	if err != nil || tv.Sec <= 0 {
		return ""
	}
	return "boot-" + strconv.FormatInt(int64(tv.Sec), 10)
}
