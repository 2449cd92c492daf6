package cmd

import (
	"sync/atomic"
	"testing"
	"time"
)

// The gateway's ticker, stopped mid-tick, lets the tick end before the
// stop returns: a gateway that exited in the middle of one left an
// occurrence claimed and never started (seen in testdata/cron_tickers).
func TestStopTickerWaitsForTick(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var ticks, finished atomic.Int32
	stop := startTicker(time.Hour, func() error {
		if ticks.Add(1) == 1 {
			close(entered)
			<-release
		}
		finished.Add(1)
		return nil
	}, func(string) {})
	<-entered
	go func() {
		time.Sleep(50 * time.Millisecond)
		close(release)
	}()
	stop()
	if finished.Load() != 1 {
		t.Fatalf("stop returned with the tick in flight (ticks finished: %d)", finished.Load())
	}
}
