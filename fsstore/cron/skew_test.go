package cron

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore"
	"github.com/hermes/hermes/fsstore/hosts"
)

// onHostAhead makes s a ticker on host whose clock is ahead of the
// shared filesystem's by ahead: its skew is measured for real, against
// the time this machine's filesystem stamps on a file it creates.
func onHostAhead(t *testing.T, s *Store, dir, host string, c *clock, ahead time.Duration) {
	t.Helper()
	hc := hosts.NewClock(dir, time.Second, func(msg string) { t.Log("warn: " + msg) })
	hc.Host, hc.Now = host, func() time.Time { return time.Now().Add(ahead) }
	s.Host, s.Skew = host, hc.Offset
	s.Now = func() time.Time { return c.now.Add(ahead) }
}

// Two tickers share the jobs: host-b's clock agrees with the shared
// filesystem's, host-a's is ahead. A few seconds ahead (past Tolerance,
// within MaxSkew), host-a judges due times by its clock less its skew: it
// runs no occurrence early, and a catch-up-all job runs no burst of the
// occurrences its clock alone would find due. 5 minutes ahead, past
// MaxSkew, it claims nothing and says why.
func TestSkewedTickerRunsNothingEarly(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ahead   time.Duration
		refused bool
	}{
		{"10s ahead", 10 * time.Second, false},
		{"5m ahead", 5 * time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "profiles", "p")
			c := &clock{time.Date(2026, 6, 1, 9, 59, 0, 0, time.UTC)}
			b := newTestStore(t, dir, c, "host-b")
			a := newTestStore(t, dir, c, "host-a")
			onHostAhead(t, a, dir, "host-a", c, tc.ahead)
			hourly := add(t, b, "hourly", "0 * * * *", CatchUpAll)
			often := add(t, b, "often", "every 2s", CatchUpAll)
			// 09:59:55 by host-b: nothing is due; host-a's clock reads
			// 10:00:05 or later.
			c.now = c.now.Add(55 * time.Second)
			claimed := 0
			ids, err := a.Due(a.Now())
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				_, ok, err := a.Claim(id)
				if tc.refused {
					if !errors.Is(err, fsstore.ErrRefused) {
						t.Fatalf("host-a %s: claim of %s: %v, want refused", tc.name, id, err)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				for ok {
					claimed++
					c2, _ := a.Get(id)
					if _, err := a.Start(id, c2.Run.Occurrence, fsstore.NewID(c.now), ""); err != nil {
						t.Fatal(err)
					}
					if _, err := a.Finish(id, c2.Run.Occurrence, *succeed(c2)); err != nil {
						t.Fatal(err)
					}
					_, ok, err = a.Claim(id)
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			// Between 09:59:00 and 09:59:55, 27 occurrences of every 2s
			// are due, which catch-up-all runs one after the other; host-a
			// runs none that the filesystem's time has not reached.
			early := 0
			for _, job := range []Job{hourly, often} {
				for _, occ := range claimedOnce(t, a, job.ID) {
					if at, _ := occ.Instant(); at.After(c.now) {
						early++
					}
				}
			}
			if early > 0 {
				t.Fatalf("host-a, %s, ran %d occurrences before their time (of %d claimed)", tc.name, early, claimed)
			}
			if tc.refused && claimed != 0 {
				t.Fatalf("host-a, %s, claimed %d", tc.name, claimed)
			}
		})
	}
}
