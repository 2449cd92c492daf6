package usage_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/usage"
	"github.com/hermes/hermes/scripts/fixture"
)

// BenchmarkReportDaily is `hermes usage daily --since 30d` over a profile
// of 1,000 and of 100,000 sessions whose last 1,000 are the same recent
// window (4 messages, 2 calls each): the history before it must not
// cost a report anything. The roll-up is built once, before the timer;
// each report catches up (nothing new) and reads the window's days.
//
//	go test ./fsstore/usage -run '^$' -bench ReportDaily -benchtime 20x
func BenchmarkReportDaily(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprint("sessions=", n), func(b *testing.B) {
			profile := b.TempDir()
			now := time.Now()
			_, err := fixture.Write(filepath.Join(profile, "sessions"), fixture.Options{
				Sessions: n, Messages: 4, BytesPerMessage: 100, Usage: true,
				Start: now.AddDate(-1, 0, 0), Recent: 1000, RecentStart: now.AddDate(0, 0, -20),
			})
			if err != nil {
				b.Fatal(err)
			}
			st := sessions.NewStore(profile, "default", time.Minute, func(string) {})
			rl := usage.NewRollup(profile, st, time.Minute, func(msg string) { b.Fatal(msg) })
			if err := rl.Rebuild(); err != nil {
				b.Fatal(err)
			}
			f := usage.Filter{Since: now.AddDate(0, 0, -30)}
			b.ResetTimer()
			for b.Loop() {
				rows, total, err := usage.Report(rl, "daily", f, usage.Table{})
				if err != nil {
					b.Fatal(err)
				}
				if len(rows) == 0 || total.Calls != 2000 {
					b.Fatalf("%d rows, %d calls", len(rows), total.Calls)
				}
			}
		})
	}
}
