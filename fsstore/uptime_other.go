//go:build !linux

package fsstore

import (
	"time"

	"golang.org/x/sys/unix"
)

// uptime is CLOCK_MONOTONIC, which macOS and FreeBSD keep from boot for
// every process alike (Linux's counts no suspended time: uptime_linux.go).
func uptime() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
