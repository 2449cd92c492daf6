// Command usagebench times `hermes usage daily --since 30d` (the report
// as the command makes it, in process) over two profiles whose last 1,000
// sessions are the same recent window (4 messages, 2 calls each), one with
// no history before it and one with 99,000 older sessions, in pairs (small,
// large, small, …), so that a busy machine slows both alike; it prints the
// medians of wall and CPU time and their ratios.
//
//	go run ./scripts/usagebench -dir /tmp/usagebench -runs 30
//
// The profiles are written under DIR (by scripts/fixture, with their
// roll-ups built) on the first run and reused after.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/hermes/hermes/fsstore/sessions"
	"github.com/hermes/hermes/fsstore/usage"
	"github.com/hermes/hermes/scripts/fixture"
)

func main() {
	dir := flag.String("dir", filepath.Join(os.TempDir(), "hermes-usagebench"), "where the profiles are kept")
	runs := flag.Int("runs", 30, "pairs of reports")
	large := flag.Int("large", 100000, "sessions of the large profile")
	flag.Parse()
	now := time.Now()
	small, err := profile(filepath.Join(*dir, "small"), 1000, now)
	check(err)
	big, err := profile(filepath.Join(*dir, fmt.Sprint("large-", *large)), *large, now)
	check(err)
	var wall, cpu [2][]time.Duration
	for range *runs {
		for i, rl := range []*usage.Rollup{small, big} {
			w, c := timeReport(rl, now)
			wall[i], cpu[i] = append(wall[i], w), append(cpu[i], c)
		}
	}
	for i, name := range []string{"1,000 sessions", fmt.Sprintf("%d sessions", *large)} {
		fmt.Printf("%-16s wall %7.2f ms  cpu %7.2f ms\n", name, ms(median(wall[i])), ms(median(cpu[i])))
	}
	fmt.Printf("ratio            wall %.2fx  cpu %.2fx\n", ms(median(wall[1]))/ms(median(wall[0])), ms(median(cpu[1]))/ms(median(cpu[0])))
}

// profile writes, unless it is there, a profile of n sessions whose last
// 1,000 were made 20 days before now and the others a year before, with
// its roll-up built, and returns the roll-up.
func profile(dir string, n int, now time.Time) (*usage.Rollup, error) {
	st := sessions.NewStore(dir, "default", time.Minute, func(string) {})
	rl := usage.NewRollup(dir, st, time.Minute, func(msg string) { fmt.Fprintln(os.Stderr, msg) })
	if _, err := os.Stat(filepath.Join(dir, "usage", "state.json")); err == nil {
		return rl, nil
	}
	fmt.Fprintf(os.Stderr, "usagebench: writing %d sessions to %s\n", n, dir)
	_, err := fixture.Write(filepath.Join(dir, "sessions"), fixture.Options{
		Sessions: n, Messages: 4, BytesPerMessage: 100, Usage: true,
		Start: now.AddDate(-1, 0, 0), Recent: 1000, RecentStart: now.AddDate(0, 0, -20),
	})
	if err != nil {
		return nil, err
	}
	return rl, rl.Rebuild()
}

func timeReport(rl *usage.Rollup, now time.Time) (wall, cpu time.Duration) {
	c0 := cpuTime()
	t0 := time.Now()
	_, total, err := usage.Report(rl, "daily", usage.Filter{Since: now.AddDate(0, 0, -30)}, usage.Table{})
	check(err)
	if total.Calls != 2000 {
		check(fmt.Errorf("%d calls in the window, want 2000", total.Calls))
	}
	return time.Since(t0), cpuTime() - c0
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "usagebench:", err)
		os.Exit(1)
	}
}
