package kanban

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/hosts"
	"github.com/hermes/hermes/fsstore/internal/storetest"
)

// Two hosts share a board, host-a's clock 5 minutes ahead of host-b's. A
// run that host-b fails is retried after its backoff: host-b's not_before
// is 5 minutes in host-a's past, yet host-a claims the task no sooner than
// the backoff after it first saw the retry, by its own monotonic clock,
// and host-b no sooner than the backoff after the failure.
func TestRetryBackoffNotBroughtForwardBySkew(t *testing.T) {
	b, clockB, _ := kbBoard(t)
	b.Host, b.RetryBackoff = "host-b", 30*time.Second
	a := *b
	clockA := storetest.NewClock()
	clockA.Advance(5 * time.Minute)
	monoA := storetest.NewClock()
	a.Host, a.Now = "host-a", clockA.Now
	a.Seen = &hosts.Seen{Dir: t.TempDir(), Host: "host-a", LockTimeout: time.Second, Clock: monoA.Uptime}

	kbCreate(t, b, Task{ID: "t", Title: "t"})
	task, err := b.Claim("t", time.Minute, "p", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.FailRun("t", task.CurrentRunID, OutcomeCrashed, "it failed", nil, ""); err != nil {
		t.Fatal(err)
	}
	advance := func(d time.Duration) {
		clockA.Advance(d)
		clockB.Advance(d)
		monoA.Advance(d)
	}
	// host-a first looks 10 s after the failure.
	advance(10 * time.Second)
	for _, step := range []time.Duration{0, 19 * time.Second, time.Second} {
		advance(step)
		if _, err := a.Claim("t", time.Minute, "p", nil); !errors.Is(err, fsstore.ErrRefused) {
			t.Fatalf("host-a, 5 minutes ahead, claimed within the backoff of its own watch: %v", err)
		}
		if step == time.Second {
			break
		}
		if _, err := b.Claim("t", time.Minute, "p", nil); !errors.Is(err, fsstore.ErrRefused) {
			t.Fatalf("host-b claimed within the backoff: %v", err)
		}
	}
	// 30 s after the failure host-b's backoff is served; host-a's is at
	// 40 s, a backoff after it first saw the retry.
	if _, err := b.Claim("t", time.Minute, "p", nil); err != nil {
		t.Fatalf("host-b, its backoff served: %v", err)
	}
}

// A host whose clock is 5 minutes off the shared filesystem's claims
// nothing, saying why, and writes nothing.
func TestClaimRefusedPastMaxSkew(t *testing.T) {
	b, _, _ := kbBoard(t)
	kbCreate(t, b, Task{ID: "t", Title: "t"})
	profileDir := filepath.Dir(b.Dir)
	hc := hosts.NewClock(profileDir, time.Second, func(string) {})
	hc.Host, hc.Now = "host-a", func() time.Time { return time.Now().Add(5 * time.Minute) }
	b.Skew = hc.Offset
	before := kbRead(t, b.docPath("t"))
	_, err := b.Claim("t", time.Minute, "p", nil)
	if !errors.Is(err, fsstore.ErrRefused) || !strings.Contains(err.Error(), "ahead of the shared filesystem's") {
		t.Fatalf("claim on a host 5 minutes ahead: %v", err)
	}
	if _, err := b.ClaimPending("t", time.Minute, "p", nil); !errors.Is(err, fsstore.ErrRefused) {
		t.Fatalf("pending claim on a host 5 minutes ahead: %v", err)
	}
	if after := kbRead(t, b.docPath("t")); string(after) != string(before) {
		t.Fatal("a refused claim wrote the task")
	}
}
