package tasks

import (
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/hosts"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// monotonic is a host's monotonic clock, set by the test.
type monotonic struct{ now time.Duration }

func (m *monotonic) Uptime() time.Duration { return m.now }

// A task of host b, whose clock is 5 minutes behind a's, is judged on a by
// what a has watched with its own monotonic clock: it holds its lease
// while b's heartbeats change its marker, however old b's stamps read by
// a's wall clock, and is lost only once a has watched the marker unchanged
// for a whole Lease.
func TestLeaseJudgedByObserversOwnClock(t *testing.T) {
	a, clockA, _ := newTestTaskStore(t)
	a.Host = "host-a"
	b := *a
	clockB := storetest.NewClock()
	clockB.Advance(-5 * time.Minute)
	b.Host, b.Now = "host-b", clockB.Now
	monoA := &monotonic{now: time.Hour}
	a.Seen = &hosts.Seen{Dir: t.TempDir(), Host: "host-a", LockTimeout: time.Second, Clock: monoA.Uptime}

	task := mustCreateTask(t, &b, "20261121_020734_aaaaaa", "on b")
	if a.Local(task) {
		t.Fatal("b's task is local to a")
	}
	for range 10 {
		if !a.LeaseHeld(task.ID) {
			t.Fatal("a took b's heartbeating task for lost: b's stamp judged by a's clock")
		}
		clockA.Advance(HeartbeatEvery)
		clockB.Advance(HeartbeatEvery)
		monoA.now += HeartbeatEvery
		if err := b.Heartbeat(task.ID); err != nil {
			t.Fatal(err)
		}
	}
	// b stops: a sees the same marker for a Lease, then no more.
	if !a.LeaseHeld(task.ID) {
		t.Fatal("lease lost at the last heartbeat")
	}
	monoA.now += Lease
	if !a.LeaseHeld(task.ID) {
		t.Fatal("the lease ended before a watched it for a Lease")
	}
	monoA.now += time.Millisecond
	if a.LeaseHeld(task.ID) {
		t.Fatal("a stale heartbeat holds its lease past a Lease of a's watch")
	}
}

// A host refuses to claim past a quarter of a lease off the shared
// filesystem's clock (hosts.MaxSkew): a quarter of this Lease.
func TestMaxSkewIsAQuarterLease(t *testing.T) {
	if hosts.MaxSkew != Lease/4 {
		t.Fatalf("hosts.MaxSkew %v, a quarter of Lease %v", hosts.MaxSkew, Lease/4)
	}
}
