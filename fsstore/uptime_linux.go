package fsstore

import (
	"time"

	"golang.org/x/sys/unix"
)

// uptime is CLOCK_BOOTTIME: monotonic, and counting the time the host was
// suspended, during which the other hosts' clocks ran on.
func uptime() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
