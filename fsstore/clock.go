package fsstore

import (
	"os"
	"sync"
	"time"
)

// ClockAheadEnv is a test-only time source: a duration ("5m", "-90s") by
// which Now runs ahead of this host's clock, so that an end-to-end script
// can run one process with a clock that disagrees with the others'. It is
// read once; a value that is not a duration is ignored.
const ClockAheadEnv = "HERMES_TEST_CLOCK_AHEAD"

var clockAhead = sync.OnceValue(func() time.Duration {
	d, err := time.ParseDuration(os.Getenv(ClockAheadEnv))
	if err != nil {
		return 0
	}
	return d
})

// Now is the wall clock of the stores whose times other hosts judge
// (background tasks, the board, cron, and the dispatcher and the clock
// measure of package hosts): time.Now, moved by $HERMES_TEST_CLOCK_AHEAD
// in tests. The stamps of one host are never compared with another's
// clock to decide whether a lease, a claim or a backoff has passed, and a
// scheduled time is judged by this clock less its measured skew (package
// hosts).
func Now() time.Time {
	return time.Now().Add(clockAhead())
}

// Uptime is this host's monotonic clock: the time since it booted, which
// no step of the wall clock moves, the same reading in every process of
// one boot (uptime_*.go say which clock). It is what package hosts
// measures a lease with. Zero when the clock cannot be read.
func Uptime() time.Duration {
	return uptime()
}

// BootID is the id of this host's boot that ThisHost names (the kernel's
// boot id, kern.bootsessionuuid, kern.boottime), "" where there is none:
// an Uptime reading means something only within the boot it was read in.
func BootID() string { return bootID() }
