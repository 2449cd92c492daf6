package cmd

import (
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/cron"
	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/profiles"
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

// A run whose start is refused (its claim was meanwhile recorded lost)
// leaves nothing behind: the session of a prompt job is made only once the
// start is recorded.
func TestRefusedStartMakesNoSession(t *testing.T) {
	p := profiles.Profile{Root: t.TempDir(), Name: "default"}
	e := &env{profile: p, lockTimeout: 10 * time.Second, stdout: io.Discard, stderr: io.Discard}
	cs, err := e.cron()
	if err != nil {
		t.Fatal(err)
	}
	j, err := cs.Add(cron.Job{Name: "p", Schedule: "@daily", TZ: "UTC", Prompt: "hello", Session: cron.SessionNew})
	if err != nil {
		t.Fatal(err)
	}
	// Not claimed: the start must be refused.
	if _, err := startRun(e, cs, cron.Claim{Job: j, Occurrence: fsstore.TimeOf(time.Now())}); !errors.Is(err, fsstore.ErrRefused) {
		t.Fatalf("start of an unclaimed occurrence: %v, want refused", err)
	}
	list, err := e.sessions().List(sessions.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 0 {
		t.Fatalf("a refused start left %d sessions: %+v", len(list), list)
	}
}
