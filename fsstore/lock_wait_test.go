package fsstore_test

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
)

// A waiter blocked in the kernel gets the lock when its holder lets go,
// and a wait given up (timed out) does not keep the lock when it comes
// free later: the next Lock, a mere try, takes it. Each kind of lock.
func TestBlockedWaitTakesAndGivesUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := fsstore.Lock(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Given up: a wait of 50 ms on a lock held longer.
	var timeout *fsstore.LockTimeoutError
	if _, err := fsstore.Lock(path, 50*time.Millisecond); !errors.As(err, &timeout) || timeout.Path != path {
		t.Fatalf("a wait past its timeout: %v", err)
	}
	// Waited for: a waiter with all the time it needs.
	got := make(chan error, 1)
	go func() {
		u, err := fsstore.Lock(path, time.Minute)
		if err == nil {
			u()
		}
		got <- err
	}()
	time.Sleep(20 * time.Millisecond) // let it block (the test holds whatever the order)
	unlock()
	if err := <-got; err != nil {
		t.Fatalf("the waiter: %v", err)
	}
	// The wait given up let the lock go when it got it: a try takes it
	// (a wait of a few seconds covers its goroutine's wake-up).
	u, err := fsstore.Lock(path, 5*time.Second)
	if err != nil {
		t.Fatalf("after a given-up wait: %v", err)
	}
	u()
	if u, err := fsstore.Lock(path, 0); err != nil {
		t.Fatalf("a try after all waits ended: %v", err)
	} else {
		u()
	}
}

// BenchmarkLockHandoff is the time from a holder's release to a blocked
// waiter's hold: the waiter stamps the moment it holds the lock, the
// holder the moment before it lets go. Medians are reported as ns/op
// (handoff-ns).
func BenchmarkLockHandoff(b *testing.B) {
	path := filepath.Join(b.TempDir(), "x.lock")
	var gaps []time.Duration
	for range b.N {
		unlock, err := fsstore.Lock(path, time.Second)
		if err != nil {
			b.Fatal(err)
		}
		held := make(chan time.Time, 1)
		go func() {
			u, err := fsstore.Lock(path, time.Minute)
			if err != nil {
				b.Error(err)
				held <- time.Time{}
				return
			}
			held <- time.Now()
			u()
		}()
		time.Sleep(2 * time.Millisecond) // the waiter blocks
		released := time.Now()
		unlock()
		gaps = append(gaps, (<-held).Sub(released))
	}
	slices.Sort(gaps)
	b.ReportMetric(float64(gaps[len(gaps)/2].Nanoseconds()), "median-handoff-ns")
}
